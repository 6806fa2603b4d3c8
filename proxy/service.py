"""``MilvusService``: the pymilvus-facing front door.

Each RPC validates, converts protobuf at this edge (``convert/``), and calls the
coordinator, the streaming nodes (writes) or the delegators (reads). Errors
become Milvus statuses; nothing the client sends can crash the server.
RPCs not implemented here answer a NOT_SUPPORTED Milvus status (``unsupported.py``).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from typing import Any

import grpc
import pyarrow as pa
import structlog
from pymilvus.grpc_gen import common_pb2, milvus_pb2, milvus_pb2_grpc, schema_pb2

from common.config import DEFAULT_LIMITS, ProxyLimits
from common.coordapi import CoordinatorAPI, LoadState
from common.errors import CollectionNotFound, ErrorCode, InvalidArgument, SegmentLoadFailed, StrataError
from common.expr.asyncparse import filter_size, parse_filter_async
from common.fulltext.functions import bm25_outputs
from common.names import cannot_find_collection, check_collection_name
from common.readplan import ReadFilter, ReadPlan, VectorQuery
from common.tracing import traced
from common.tsoutil import physical_ms
from proxy import convert
from proxy.aliases import AliasRPCs
from proxy.analyzers import AnalyzerRPCs
from proxy.auth.backup_rpcs import RBACBackupRPCs
from proxy.auth.rpcs import SecurityRPCs
from proxy.batch_describe import BatchDescribeRPCs
from proxy.consistency import guarantee_timestamp
from proxy.convert.groups import group_by_values
from proxy.convert.search_checks import check_index_search_params, check_range
from proxy.databases import DatabaseRPCs, default_replicas
from proxy.dbcontext import current_database, request_database
from proxy.flush_all import FlushAllRPCs
from proxy.grouped_fetch import first_fetch, next_fetch
from proxy.health import HealthRPCs
from proxy.hybrid import hybrid_search
from proxy.indexes import IndexRPCs
from proxy.jobs import JobRPCs
from proxy.legacy import LegacyRPCs
from proxy.limits import check_expr_length, check_result_size, check_search_output, hit_bytes
from proxy.metacache import CollectionEntry, MetaCache
from proxy.metrics import MetricsRPCs
from proxy.partitions import PartitionRPCs, read_partitions, write_partition
from proxy.pkfilter import primary_keys_of
from proxy.pksearch import resolve_key_vectors
from proxy.readplans import plan_read
from proxy.reads import ReadRouter
from proxy.replicas import ReplicaRPCs
from proxy.resource_groups import ResourceGroupRPCs
from proxy.rpc import milvus_rpc
from proxy.schema_rpcs import SchemaRPCs, check_schema_timestamp, schema_guarantee
from proxy.segments import SegmentRPCs
from proxy.stats import WALStats
from proxy.status import milvus_status, success
from proxy.unsupported import answer_unsupported
from proxy.upserts import live_rows, plan_upsert
from proxy.vectorindex import search_metric
from proxy.writes import allocate_ids, delete_pks, insert_table, upsert_table
from segcore.segments.reduce import merge_rows, merge_topk
from streamingnode.client.producer import Producer

log = structlog.get_logger().bind(component="proxy")

SERVER_VERSION = "v2.6.0-strata"
DEFAULT_READ_TIMEOUT = 30.0  # as common/readplan.py's
# Results of up to this many rows (or hits) are reduced and converted on the event loop; more in a thread.
INLINE_REDUCE_ROWS = 4096


def _kv(pairs: Any) -> dict[str, str]:
    return {p.key: p.value for p in pairs}


@answer_unsupported
class MilvusProxy(
    SchemaRPCs,
    PartitionRPCs,
    AliasRPCs,
    JobRPCs,
    IndexRPCs,
    DatabaseRPCs,
    ReplicaRPCs,
    HealthRPCs,
    SegmentRPCs,
    FlushAllRPCs,
    BatchDescribeRPCs,
    ResourceGroupRPCs,
    MetricsRPCs,
    LegacyRPCs,
    SecurityRPCs,
    RBACBackupRPCs,
    AnalyzerRPCs,
    milvus_pb2_grpc.MilvusServiceServicer,
):
    def __init__(
        self,
        coord: CoordinatorAPI,
        producer: Producer,
        cache: MetaCache,
        reads: ReadRouter,
        stats: WALStats,
        *,
        limits: ProxyLimits = DEFAULT_LIMITS,
    ) -> None:
        self._coord = coord
        self._producer = producer
        self._cache = cache
        self._reads = reads
        self._stats = stats
        self._limits = limits

    # ---- helpers -------------------------------------------------------------------------------
    async def _fresh_ts(self) -> int:
        return await self._coord.alloc_timestamp()

    async def _coll(self, name: str) -> CollectionEntry:
        """The collection ``name`` names, its name checked first (as most Milvus RPCs do)."""
        check_collection_name(name)
        return await self._cache.get(name)

    async def _lookup(self, name: str) -> CollectionEntry:
        """The collection ``name`` names, looked up unchecked (as Milvus' Search, HybridSearch and
        statistics do: a bad name is a missing collection there)."""
        return await self._cache.get(name)

    # ---- connection ----------------------------------------------------------------------------
    async def Connect(self, request: milvus_pb2.ConnectRequest, context: grpc.aio.ServicerContext) -> milvus_pb2.ConnectResponse:
        try:  # as Milvus: a client whose ``dbname`` names no database cannot connect
            await self._cache.database(request_database(request, context))
        except StrataError as err:
            return milvus_pb2.ConnectResponse(status=milvus_status(err))
        identifier = await self._fresh_ts()
        return milvus_pb2.ConnectResponse(
            status=success(),
            server_info=common_pb2.ServerInfo(build_tags=SERVER_VERSION, deploy_mode="STANDALONE"),
            identifier=identifier,
        )

    async def GetVersion(self, request: milvus_pb2.GetVersionRequest, context: grpc.aio.ServicerContext) -> milvus_pb2.GetVersionResponse:
        return milvus_pb2.GetVersionResponse(status=success(), version=SERVER_VERSION)

    @milvus_rpc(milvus_pb2.AllocTimestampResponse)
    async def AllocTimestamp(self, request: milvus_pb2.AllocTimestampRequest, context: grpc.aio.ServicerContext) -> milvus_pb2.AllocTimestampResponse:
        return milvus_pb2.AllocTimestampResponse(status=success(), timestamp=await self._fresh_ts())

    # ---- collections ---------------------------------------------------------------------------
    @milvus_rpc(common_pb2.Status)
    async def CreateCollection(self, request: milvus_pb2.CreateCollectionRequest, context: grpc.aio.ServicerContext) -> common_pb2.Status:
        pb = schema_pb2.CollectionSchema()
        try:
            pb.ParseFromString(request.schema)
        except Exception as err:
            raise InvalidArgument(f"malformed collection schema: {err}") from err
        if request.collection_name and pb.name and pb.name != request.collection_name:
            raise InvalidArgument(
                f"collection name {request.collection_name} does not match the schema name {pb.name}"
            )
        schema = convert.schema_from_proto(pb, collection_name=request.collection_name or pb.name)
        props = _kv(request.properties)
        level = request.consistency_level
        await self._coord.create_collection(
            name=schema.name,
            schema_json=schema.to_json(),
            shards_num=request.shards_num or 1,
            consistency_level=level,
            properties=props,
            num_partitions=request.num_partitions,
            db_name=current_database(),
        )
        self._cache.invalidate(schema.name)
        return success()

    @milvus_rpc(common_pb2.Status)
    async def DropCollection(self, request: milvus_pb2.DropCollectionRequest, context: grpc.aio.ServicerContext) -> common_pb2.Status:
        check_collection_name(request.collection_name)
        try:
            await self._coord.drop_collection(request.collection_name, current_database())
        except CollectionNotFound:
            pass  # Milvus: dropping a missing collection is not an error
        finally:
            self._cache.invalidate(request.collection_name)
        await self._security.collections_changed()  # its grants went with it
        return success()

    @milvus_rpc(milvus_pb2.DescribeCollectionResponse)
    async def DescribeCollection(self, request: milvus_pb2.DescribeCollectionRequest, context: grpc.aio.ServicerContext) -> milvus_pb2.DescribeCollectionResponse:
        check_collection_name(request.collection_name)
        try:
            coll = await self._cache.get(request.collection_name, refresh=True)
        except StrataError as err:
            if err.code != ErrorCode.COLLECTION_NOT_FOUND:
                raise
            raise cannot_find_collection(request.collection_name, current_database()) from None
        self._security.require_visible(coll.name, current_database())  # the caller's grants, as Milvus 2.6
        properties = [common_pb2.KeyValuePair(key=k, value=v) for k, v in coll.properties.items()]
        schema = convert.schema_to_proto(coll.schema)
        schema.properties.extend(properties)  # Milvus' rootcoord puts them in both places
        return milvus_pb2.DescribeCollectionResponse(
            status=success(),
            schema=schema,
            collectionID=coll.collection_id,
            virtual_channel_names=coll.vchannels,
            physical_channel_names=coll.pchannels,
            created_timestamp=coll.created_ts,
            created_utc_timestamp=physical_ms(coll.created_ts),
            update_timestamp=coll.update_ts,
            shards_num=len(coll.vchannels),
            consistency_level=coll.consistency_level,
            collection_name=coll.name,
            aliases=list(coll.aliases),
            properties=properties,
            db_name=coll.db_name,
            db_id=coll.db_id,
            num_partitions=len(coll.partitions),
        )

    @milvus_rpc(milvus_pb2.BoolResponse)
    async def HasCollection(self, request: milvus_pb2.HasCollectionRequest, context: grpc.aio.ServicerContext) -> milvus_pb2.BoolResponse:
        check_collection_name(request.collection_name)
        try:
            await self._coord.describe_collection(name=request.collection_name, db_name=current_database())
        except CollectionNotFound:
            return milvus_pb2.BoolResponse(status=success(), value=False)
        return milvus_pb2.BoolResponse(status=success(), value=True)

    @milvus_rpc(milvus_pb2.ShowCollectionsResponse)
    async def ShowCollections(self, request: milvus_pb2.ShowCollectionsRequest, context: grpc.aio.ServicerContext) -> milvus_pb2.ShowCollectionsResponse:
        listed = await self._coord.list_collections(current_database())
        visible = self._security.visible_collections(current_database())  # the caller's grants, as Milvus
        colls = sorted((c for c in listed if visible is None or c.name in visible),
                       key=lambda c: c.collection_id)
        return milvus_pb2.ShowCollectionsResponse(
            status=success(),
            collection_names=[c.name for c in colls],
            collection_ids=[c.collection_id for c in colls],
            created_timestamps=[c.created_timestamp for c in colls],
            created_utc_timestamps=[physical_ms(c.created_timestamp) for c in colls],
            shards_num=[len(c.vchannels) for c in colls],
        )

    @milvus_rpc(milvus_pb2.GetCollectionStatisticsResponse)
    async def GetCollectionStatistics(self, request: milvus_pb2.GetCollectionStatisticsRequest, context: grpc.aio.ServicerContext) -> milvus_pb2.GetCollectionStatisticsResponse:
        coll = await self._lookup(request.collection_name)
        # Inserted through the WAL, plus imported rows, minus rows compaction removed (as Milvus counts).
        rows = await self._stats.collection_rows(coll) + await self._job_rows(coll)
        return milvus_pb2.GetCollectionStatisticsResponse(
            status=success(), stats=[common_pb2.KeyValuePair(key="row_count", value=str(rows))]
        )

    # ---- load ----------------------------------------------------------------------------------
    @milvus_rpc(common_pb2.Status)
    async def LoadCollection(self, request: milvus_pb2.LoadCollectionRequest, context: grpc.aio.ServicerContext) -> common_pb2.Status:
        coll = await self._coll(request.collection_name)
        await self._coord.load_collection(
            coll.collection_id, replicas=request.replica_number or await default_replicas(self._cache)
        )
        self._reads.forget_view(coll.collection_id)
        return success()

    @milvus_rpc(common_pb2.Status)
    async def ReleaseCollection(self, request: milvus_pb2.ReleaseCollectionRequest, context: grpc.aio.ServicerContext) -> common_pb2.Status:
        coll = await self._coll(request.collection_name)
        await self._coord.release_collection(coll.collection_id)
        self._reads.forget_view(coll.collection_id)
        return success()

    @milvus_rpc(milvus_pb2.GetLoadStateResponse)
    async def GetLoadState(self, request: milvus_pb2.GetLoadStateRequest, context: grpc.aio.ServicerContext) -> milvus_pb2.GetLoadStateResponse:
        coll = await self._coll(request.collection_name)
        view = await self._reads.load_view(coll)
        partitions, _ = await read_partitions(self._cache, coll, list(request.partition_names))
        if partitions and not set(partitions) <= set(view.loaded_partitions):
            return milvus_pb2.GetLoadStateResponse(status=success(), state=common_pb2.LoadStateNotLoad)
        states: dict[int, common_pb2.LoadState.ValueType] = {
            LoadState.NOT_LOAD: common_pb2.LoadStateNotLoad,
            LoadState.LOADING: common_pb2.LoadStateLoading,
            LoadState.LOADED: common_pb2.LoadStateLoaded,
        }
        state = states.get(view.state, common_pb2.LoadStateNotExist)
        return milvus_pb2.GetLoadStateResponse(status=success(), state=state)

    @milvus_rpc(milvus_pb2.GetLoadingProgressResponse)
    async def GetLoadingProgress(self, request: milvus_pb2.GetLoadingProgressRequest, context: grpc.aio.ServicerContext) -> milvus_pb2.GetLoadingProgressResponse:
        coll = await self._coll(request.collection_name)
        view = await self._reads.load_view(coll)
        if view.state == LoadState.NOT_LOAD:
            raise StrataError(f"collection not loaded[collection={coll.name}]", ErrorCode.COLLECTION_NOT_LOADED)
        if view.load_error:
            # load_collection (which polls this) fails with the reason instead of waiting out its timeout.
            raise SegmentLoadFailed(f"load of collection {coll.name} failed (retried in the background): {view.load_error}")
        return milvus_pb2.GetLoadingProgressResponse(status=success(), progress=view.progress, refresh_progress=view.progress)

    # ---- writes --------------------------------------------------------------------------------
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

    # ---- reads ---------------------------------------------------------------------------------
    async def _guarantee(self, coll: CollectionEntry, req: Any) -> int:
        return schema_guarantee(coll, await guarantee_timestamp(
            requested_level=req.consistency_level,
            use_default=req.use_default_consistency,
            collection_level=coll.consistency_level,
            request_ts=req.guarantee_timestamp,
            fresh_ts=self._fresh_ts,
        ))

    async def _metric_for(self, coll: CollectionEntry, field: str, requested: str | None) -> str:
        bm25 = field in bm25_outputs(coll.schema)
        return search_metric(coll.schema.field(field), coll.index_metrics.get(field, ""), requested, bm25=bm25)

    @milvus_rpc(milvus_pb2.SearchResults)
    async def Search(self, request: milvus_pb2.SearchRequest, context: grpc.aio.ServicerContext) -> milvus_pb2.SearchResults:
        coll = await self._lookup(request.collection_name)
        spec = convert.parse_search_request(request, coll.schema, self._limits)
        if spec.filter.strip():
            check_expr_length(spec.filter, self._limits)
        fetch, _ = convert.resolve_output_fields(coll.schema, spec.output_fields)
        metric = await self._metric_for(coll, spec.anns_field, spec.metric_type)
        check_range(metric, spec.radius, spec.range_filter)  # the index's metric is known now
        check_index_search_params(coll.index_types.get(spec.anns_field, ""), spec.params, spec.topk + spec.offset)
        group = spec.group_by_field
        await self._check_search_output(coll, spec, fetch)
        if group and group not in fetch:
            fetch = [*fetch, group]  # the final reduce groups by its values
        # Shards return enough hits for the groups to fill (grouped_fetch.py: fetched again, larger,
        # while a query lacks groups that may exist; a group may still come back short, as in Milvus).
        per_shard = spec.topk + spec.offset
        if group:
            per_shard = first_fetch(per_shard, spec.group_size)
        partitions, names = await read_partitions(self._cache, coll, list(request.partition_names))
        read = await plan_read(  # the filter parsed and bound here, once (a bad one is refused)
            coll.schema,
            guarantee_ts=await self._guarantee(coll, request),
            filter=spec.filter,
            filter_params=spec.filter_params,
            output_fields=fetch,
            timeout=DEFAULT_READ_TIMEOUT,
            partitions=partitions,
            partition_names=names,
            ignore_growing=spec.ignore_growing,
        )
        spec = await resolve_key_vectors(self._reads, coll, spec, read, self._limits)  # search by primary keys
        query = VectorQuery(anns_field=spec.anns_field, metric=metric, vectors=spec.vectors, topk=per_shard,
                            params=spec.params)
        parts = await self._reads.search(coll, read=read, query=query)
        while group and (
            more := next_fetch(parts, nq=spec.nq, groups_wanted=spec.topk + spec.offset, group_by=group,
                               fetched=per_shard)
        ):
            per_shard = more
            parts = await self._reads.search(coll, read=read, query=replace(query, topk=per_shard))
        pk = coll.schema.primary_field.name

        @traced("proxy.reduce")
        def reduce() -> schema_pb2.SearchResultData:
            merged = merge_topk(
                parts, topk=spec.topk, metric=metric, pk_field=pk, offset=spec.offset, radius=spec.radius,
                range_filter=spec.range_filter, group_by=group, group_size=spec.group_size,
                distinct_keys=True,  # vchannels partition the keys; each delegator deduped its own
            )
            results = convert.build_search_results(
                merged, nq=spec.nq, topk=spec.topk * (spec.group_size if group else 1), schema=coll.schema,
                output_fields=spec.output_fields, round_decimal=spec.round_decimal,
            )
            if group:
                results.group_by_field_value.CopyFrom(group_by_values(merged, coll.schema, group))
            check_result_size("search", results.ByteSize(), self._limits)
            return results

        # A large reduce runs in a thread: the loop keeps answering meanwhile.
        hits = sum(t.num_rows for t in parts)
        results = reduce() if hits <= INLINE_REDUCE_ROWS else await asyncio.to_thread(reduce)
        return milvus_pb2.SearchResults(status=success(), results=results, collection_name=coll.name)

    async def _check_search_output(self, coll: CollectionEntry, spec: convert.SearchSpec, fetch: list[str]) -> None:
        """Refuse, before it runs, a search whose hits cannot fit in ``max_output_size``: nq times topk
        (times group_size) hits, or times the collection's rows when it has fewer (asked only then)."""
        per_query = spec.topk * (spec.group_size if spec.group_by_field else 1)
        per_hit = hit_bytes(coll.schema, fetch)
        if spec.nq * per_query * per_hit <= self._limits.max_output_size:
            return
        rows = await self._stats.collection_rows(coll) + await self._job_rows(coll)
        check_search_output(spec.nq * min(per_query, rows), per_hit, self._limits)

    @milvus_rpc(milvus_pb2.SearchResults)
    async def HybridSearch(self, request: milvus_pb2.HybridSearchRequest, context: grpc.aio.ServicerContext) -> milvus_pb2.SearchResults:
        # Each sub request runs as a Search would, all at one guarantee timestamp, then fused (hybrid.py).
        coll = await self._lookup(request.collection_name)

        async def shared_read() -> ReadPlan:
            partitions, names = await read_partitions(self._cache, coll, list(request.partition_names))
            return await plan_read(
                coll.schema, guarantee_ts=await self._guarantee(coll, request), timeout=DEFAULT_READ_TIMEOUT,
                partitions=partitions, partition_names=names,
            )

        return await hybrid_search(
            request, coll=coll, reads=self._reads, metric_for=self._metric_for, read_options=shared_read,
            limits=self._limits,
        )

    @milvus_rpc(milvus_pb2.QueryResults)
    async def Query(self, request: milvus_pb2.QueryRequest, context: grpc.aio.ServicerContext) -> milvus_pb2.QueryResults:
        coll = await self._coll(request.collection_name)
        qp = _kv(request.query_params)
        limit, offset = _int_param(qp, "limit", -1), _int_param(qp, "offset", 0)
        params = convert.template_values(request.expr_template_values)
        expr_text = request.expr
        outputs = list(request.output_fields)
        count_only = [o.strip().lower() for o in outputs] == ["count(*)"]
        if not count_only and any(o.strip().lower() == "count(*)" for o in outputs):
            raise InvalidArgument("count entities with pagination or other output fields is not allowed")
        if not expr_text.strip() and limit < 0 and not count_only:
            raise InvalidArgument("empty expression should be used with limit")
        window = self._limits.max_query_result_window
        if limit >= 0 and limit + offset > window:
            raise InvalidArgument(
                f"invalid max query result window, (offset+limit) should be in range [1, {window}], "
                f"but got {limit + offset}"
            )
        if expr_text.strip():
            check_expr_length(expr_text, self._limits)
        partitions, names = await read_partitions(self._cache, coll, list(request.partition_names))
        read = await plan_read(  # the filter parsed and bound here, once (a bad one is refused)
            coll.schema,
            guarantee_ts=await self._guarantee(coll, request),
            filter=expr_text,
            filter_params=params,
            output_fields=[] if count_only else convert.resolve_output_fields(coll.schema, outputs)[0],
            timeout=DEFAULT_READ_TIMEOUT,
            partitions=partitions,
            partition_names=names,
            ignore_growing=convert.parse_bool("ignore_growing", qp.get("ignore_growing", "false")),
        )
        want = 0 if limit < 0 else limit + offset
        tables, total = await self._reads.query(coll, read=read, limit=want, count_only=count_only)
        if count_only:
            return convert.build_count_result(total, collection_name=coll.name)
        pk = coll.schema.primary_field.name
        schema = coll.schema.arrow_schema(with_timestamp=False)

        def reduce() -> milvus_pb2.QueryResults:
            if not tables:
                combined = schema.empty_table().select(list(read.output_fields))
            else:  # vchannels partition the keys: no key is in two answers
                combined = merge_rows(tables, pk_field=pk, offset=offset, limit=None if limit < 0 else limit,
                                      distinct_keys=True)
            results = convert.build_query_results(
                combined, schema=coll.schema, output_fields=outputs, collection_name=coll.name
            )
            check_result_size("query", results.ByteSize(), self._limits)
            return results

        rows = sum(t.num_rows for t in tables)
        return reduce() if rows <= INLINE_REDUCE_ROWS else await asyncio.to_thread(reduce)


def _int_param(params: dict[str, str], key: str, default: int) -> int:
    raw = params.get(key)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise InvalidArgument(f"{key} [{raw}] is invalid, should be an integer") from None
    if value < 0:
        raise InvalidArgument(f"{key} [{value}] is invalid, should be greater than or equal to 0")
    return value


