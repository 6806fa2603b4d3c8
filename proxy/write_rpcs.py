"""Milvus's write RPCs: Insert, Upsert, Delete, Flush and GetFlushState, through the streaming nodes' WALs."""

from __future__ import annotations

import time

import grpc
import pyarrow as pa
from pymilvus.grpc_gen import milvus_pb2, schema_pb2

from common.errors import InvalidArgument
from common.expr.asyncparse import filter_size, parse_filter_async
from common.readplan import DEFAULT_READ_TIMEOUT, ReadFilter, ReadPlan
from proxy import convert
from proxy.dbcontext import current_database
from proxy.limits import check_expr_length
from proxy.partitions import read_partitions, write_partition
from proxy.parts import ProxyParts
from proxy.pkfilter import primary_keys_of
from proxy.rpc import milvus_rpc
from proxy.schema_rpcs import check_schema_timestamp
from proxy.status import success
from proxy.upserts import live_rows, plan_upsert
from proxy.writes import allocate_ids, delete_pks, insert_table, upsert_table


class WriteRPCs(ProxyParts):
    """The write RPCs of ``MilvusProxy``."""

    @milvus_rpc(milvus_pb2.MutationResult)
    async def Insert(self, request: milvus_pb2.InsertRequest, context: grpc.aio.ServicerContext) -> milvus_pb2.MutationResult:
        coll = await check_schema_timestamp(self._cache, await self._coll(request.collection_name), request.schema_timestamp)
        n = request.num_rows
        if n <= 0:
            raise InvalidArgument("num_rows should be greater than 0")
        pk = coll.schema.primary_field
        auto_ids = await allocate_ids(self._coord, n) if pk.auto_id else None
        partition = await write_partition(self._cache, coll, request.partition_name)
        table = convert.insert_to_table(list(request.fields_data), n, coll.schema, auto_ids=auto_ids)
        ts = await insert_table(self._producer, coll, table, partition)
        return milvus_pb2.MutationResult(
            status=success(),
            IDs=convert.ids_to_proto(table.column(pk.name).combine_chunks()),
            succ_index=list(range(n)),
            insert_cnt=n,
            timestamp=ts,
        )

    @milvus_rpc(milvus_pb2.MutationResult)
    async def Upsert(self, request: milvus_pb2.UpsertRequest, context: grpc.aio.ServicerContext) -> milvus_pb2.MutationResult:
        coll = await check_schema_timestamp(self._cache, await self._coll(request.collection_name), request.schema_timestamp)
        n = request.num_rows
        if n <= 0:
            raise InvalidArgument("num_rows should be greater than 0")
        # Upsert names the rows it replaces, so the primary key is given even with auto_id (upserts.py).
        partition = await write_partition(self._cache, coll, request.partition_name)
        scope = None if coll.partition_key is not None else (coll.default_partition_id if partition is None else partition)

        async def read_rows(keys: pa.Array) -> pa.Table:
            return await live_rows(self._reads, coll, keys, partition_id=scope, guarantee_ts=await self._fresh_ts(),
                                   timeout=DEFAULT_READ_TIMEOUT)

        plan = await plan_upsert(list(request.fields_data), n, coll.schema, partial=request.partial_update,
                                 allocate_ids=lambda count: allocate_ids(self._coord, count), read_rows=read_rows)
        ts = await upsert_table(self._producer, coll, plan.rows, plan.deleted, partition, delete_partition=scope)
        return milvus_pb2.MutationResult(
            status=success(),
            IDs=convert.ids_to_proto(plan.rows.column(coll.schema.primary_field.name).combine_chunks()),
            succ_index=list(range(n)),
            insert_cnt=n,
            delete_cnt=len(plan.deleted),
            upsert_cnt=n,
            timestamp=ts,
        )

    @milvus_rpc(milvus_pb2.MutationResult)
    async def Delete(self, request: milvus_pb2.DeleteRequest, context: grpc.aio.ServicerContext) -> milvus_pb2.MutationResult:
        coll = await self._coll(request.collection_name)
        params = convert.template_values(request.expr_template_values)
        check_expr_length(request.expr, self._limits)
        expr = await parse_filter_async(request.expr, coll.schema, params or None)
        pks = primary_keys_of(expr, coll.schema)
        scoped, names = await read_partitions(
            self._cache, coll, [request.partition_name] if request.partition_name else []
        )
        if pks is None:
            # A general filter: find the matching keys with a Strong read first (in the partition named).
            read = ReadPlan(
                guarantee_ts=await self._fresh_ts(), filter=ReadFilter(text=request.expr, expr=expr,
                                                                       cost=filter_size(request.expr, params)),
                output_fields=(coll.schema.primary_field.name,), timeout=DEFAULT_READ_TIMEOUT,
                partitions=None if scoped is None else tuple(scoped), partition_names=names,
            )
            tables, _ = await self._reads.query(coll, read=read, limit=0, count_only=False)
            pks = [v for t in tables for v in t.column(coll.schema.primary_field.name).to_pylist()]
        # The delete names the partition: rows of these keys elsewhere stay (writes.delete_pks).
        ts = await delete_pks(self._producer, coll, pks, scoped[0] if scoped else None) if pks else 0
        # Milvus answers the count only (its IDs are empty): pymilvus gives {"delete_count": n}.
        return milvus_pb2.MutationResult(
            status=success(),
            delete_cnt=len(pks),
            timestamp=ts or await self._fresh_ts(),
        )

    @milvus_rpc(milvus_pb2.FlushResponse)
    async def Flush(self, request: milvus_pb2.FlushRequest, context: grpc.aio.ServicerContext) -> milvus_pb2.FlushResponse:
        # Seals every growing segment (a ManualFlush per vchannel); pymilvus then polls
        # GetFlushState until they are in object storage and the checkpoints passed flush_ts.
        names = list(request.collection_names)
        segments: dict[str, list[int]] = {}
        flush_ts: dict[str, int] = {}
        for name in names:
            coll = await self._coll(name)
            segments[name], flush_ts[name] = await self._coord.flush(coll.collection_id)
        return milvus_pb2.FlushResponse(
            status=success(),
            db_name=current_database(),
            coll_segIDs={n: schema_pb2.LongArray(data=segments[n]) for n in names},
            flush_coll_segIDs={n: schema_pb2.LongArray(data=segments[n]) for n in names},
            coll_seal_times={n: int(time.time()) for n in names},
            coll_flush_ts=flush_ts,
        )

    @milvus_rpc(milvus_pb2.GetFlushStateResponse)
    async def GetFlushState(self, request: milvus_pb2.GetFlushStateRequest, context: grpc.aio.ServicerContext) -> milvus_pb2.GetFlushStateResponse:
        # Without a collection name (the Node.js SDK's flushSync) the segments alone decide, as in Milvus.
        collection_id = (await self._coll(request.collection_name)).collection_id if request.collection_name else 0
        flushed = await self._coord.flush_state(
            collection_id=collection_id, segment_ids=list(request.segmentIDs), flush_ts=request.flush_ts
        )
        return milvus_pb2.GetFlushStateResponse(status=success(), flushed=flushed)
