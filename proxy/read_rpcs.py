"""Milvus's read RPCs: Search, HybridSearch and Query, planned once here and routed to the delegators."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import grpc
from pymilvus.grpc_gen import milvus_pb2, schema_pb2

from common.errors import InvalidArgument
from common.fulltext.functions import bm25_outputs
from common.readplan import DEFAULT_READ_TIMEOUT, ReadPlan, VectorQuery
from common.tracing import traced
from proxy import convert
from proxy.consistency import guarantee_timestamp
from proxy.convert.groups import group_by_values
from proxy.convert.search_checks import check_index_search_params, check_range
from proxy.grouped_fetch import first_fetch, next_fetch
from proxy.hybrid import hybrid_search
from proxy.limits import check_expr_length, check_result_size, check_search_output, hit_bytes
from proxy.metacache import CollectionEntry
from proxy.partitions import read_partitions
from proxy.parts import ProxyParts
from proxy.pksearch import resolve_key_vectors
from proxy.readplans import plan_read
from proxy.rpc import milvus_rpc
from proxy.schema_rpcs import schema_guarantee
from proxy.status import success
from proxy.vectorindex import search_metric
from segcore.segments.reduce import merge_rows, merge_topk

# Results of up to this many rows (or hits) are reduced and converted on the event loop; more in a thread.
INLINE_REDUCE_ROWS = 4096


class ReadRPCs(ProxyParts):
    """The read RPCs of ``MilvusProxy``."""

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
        qp = {p.key: p.value for p in request.query_params}
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
