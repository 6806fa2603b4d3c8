"""Hybrid search (Milvus ``HybridSearch``): several ANN searches fused into one ranking.

What pymilvus 2.6 sends for ``MilvusClient.hybrid_search``: ``requests`` holds
one ``SearchRequest`` per ``AnnSearchRequest`` (its own vectors, anns field,
limit and filter; the call's ``offset`` and ``partition_names`` are copied into
each), and ``rank_params`` holds string key/values: ``strategy`` (``rrf`` or
``weighted``), ``params`` (JSON: ``{"k": 60}`` or ``{"weights": [..],
"norm_score": true}``), ``limit``, ``offset`` and ``round_decimal``. A
``Function`` ranker comes instead as ``function_score``: one RERANK function
whose ``reranker`` param names ``rrf`` or ``weighted``, its other params as
strings (``k``, ``weights`` as a JSON list, ``norm_score``); ``rank_params``
then carries only the paging keys.

How it runs, as in Milvus:

1. each sub request is checked like a ``Search`` with its own limit; its
   offset is ignored (paging applies to the fused list) and it cannot group;
2. every sub search reads at one guarantee timestamp (they see the same
   data) from the request's partitions, concurrently, each fetching the
   request's output fields;
3. per query vector, each primary key found scores
   * RRF: ``sum(1 / (k + rank))`` over the sub searches that found it, rank 1
     being a sub search's best hit;
   * weighted: ``sum(w_i * s_i)``, ``s_i`` the sub search's distance mapped to
     ``[0, 1]`` with ``norm_score`` (L2: ``1 - 2 atan(d) / pi``, IP:
     ``0.5 + atan(d) / pi``, COSINE: ``(1 + d) / 2``, BM25: ``2 atan(d) / pi``); without it the raw
     distance (an L2 distance is still mapped when the metrics mix directions,
     so that larger is better throughout);
4. keys rank by fused score, larger first (smaller first only for unmapped,
   all-L2 weighted scores), ties by the smaller primary key; ``offset`` hits
   are skipped and ``limit`` kept. A hit's output fields come from the first
   sub search that found it; its ``distance`` is the fused score.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Iterator
from dataclasses import replace
from typing import Any, TypeVar

from pymilvus.grpc_gen import milvus_pb2

from common.config import DEFAULT_LIMITS, ProxyLimits
from common.errors import InvalidArgument, NotSupported, StrataError
from common.readplan import ReadFilter, ReadPlan, VectorQuery
from common.schema import CollectionSchema
from proxy import convert
from proxy.convert.pkids import check_no_primary_keys
from proxy.convert.search import SearchSpec
from proxy.convert.search_checks import check_index_search_params, check_range
from proxy.hybrid_fusion import SubResult, fuse
from proxy.hybrid_rank import parse_rank
from proxy.limits import check_expr_length
from proxy.metacache import CollectionEntry
from proxy.reads import ReadRouter
from proxy.status import success
from segcore.segments.reduce import merge_topk

MAX_SUB_REQUESTS = 1024

T = TypeVar("T")
MetricFor = Callable[[CollectionEntry, str, str | None], Coroutine[Any, Any, str]]


async def hybrid_search(
    request: milvus_pb2.HybridSearchRequest,
    *,
    coll: CollectionEntry,
    reads: ReadRouter,
    metric_for: MetricFor,
    read_options: Callable[[], Awaitable[ReadPlan]],
    limits: ProxyLimits = DEFAULT_LIMITS,
) -> milvus_pb2.SearchResults:
    """Answer a ``HybridSearchRequest``: run its sub searches at one timestamp and fuse them.

    ``metric_for(coll, anns_field, requested)`` resolves a sub search's
    metric against the field's index; ``read_options()`` returns what every
    sub search shares: the guarantee timestamp, the partitions and the timeout
    (called once, after validation; each sub search sets its own filter and
    the output fields). The sub
    searches run concurrently; if one fails the others are cancelled and
    its error is raised. Cancelling the call cancels them all.

    Raises:
        InvalidArgument: no sub requests, bad rank params, a bad sub request
            (its message names which), sub requests with different nq.
        NotSupported: a reranker or option Strata does not serve.
    """
    requests = list(request.requests)
    if not requests:
        raise InvalidArgument("hybrid search needs at least one ann search request (reqs is empty)")
    if len(requests) > MAX_SUB_REQUESTS:
        raise InvalidArgument(f"maximum of ann search requests is {MAX_SUB_REQUESTS}, got {len(requests)}")
    function_score = request.function_score if request.HasField("function_score") else None
    rank = parse_rank(
        {p.key: p.value for p in request.rank_params},
        function_score,
        sub_requests=len(requests),
        max_topk=limits.max_topk,
    )
    schema = coll.schema
    output_fields = list(request.output_fields)
    fetch, _ = convert.resolve_output_fields(schema, output_fields)
    parsed = [await _parse_sub_request(i, sub, schema, limits) for i, sub in enumerate(requests)]
    specs = [spec for spec, _ in parsed]
    nq = specs[0].nq
    for i, spec in enumerate(specs):
        if spec.nq != nq:
            raise InvalidArgument(
                f"every ann search request needs the same number of query vectors: "
                f"request 0 has {nq}, request {i} has {spec.nq}"
            )

    async def metric_of(index: int, spec: SearchSpec) -> str:
        with _naming_sub_request(index, spec.anns_field):
            metric = await metric_for(coll, spec.anns_field, spec.metric_type)
            check_range(metric, spec.radius, spec.range_filter)  # the index's metric is known now
            check_index_search_params(coll.index_types.get(spec.anns_field, ""), spec.params, spec.topk)
        return metric

    metrics = await _all(metric_of(i, spec) for i, spec in enumerate(specs))
    shared = await read_options()  # one guarantee timestamp: every sub search sees the same data
    pk = schema.primary_field.name

    async def one(spec: SearchSpec, bound: ReadFilter | None, metric: str) -> SubResult:
        read = replace(shared, filter=bound, output_fields=tuple(fetch), ignore_growing=spec.ignore_growing)
        query = VectorQuery(anns_field=spec.anns_field, metric=metric, vectors=spec.vectors, topk=spec.topk,
                            params=spec.params)
        parts = await reads.search(coll, read=read, query=query)
        merged = merge_topk(
            parts, topk=spec.topk, metric=metric, pk_field=pk, radius=spec.radius, range_filter=spec.range_filter
        )
        return SubResult(hits=merged, metric=metric)

    subs = await _all(one(*sub, metric) for sub, metric in zip(parsed, metrics, strict=True))
    fused = fuse(subs, ranker=rank.ranker, limit=rank.limit, offset=rank.offset, pk_field=pk)
    results = convert.build_search_results(
        fused, nq=nq, topk=rank.limit, schema=schema, output_fields=output_fields, round_decimal=rank.round_decimal
    )
    return milvus_pb2.SearchResults(status=success(), results=results, collection_name=coll.name)


async def _parse_sub_request(
    index: int, sub: milvus_pb2.SearchRequest, schema: CollectionSchema, limits: ProxyLimits
) -> tuple[SearchSpec, ReadFilter | None]:
    """The sub request and its filter, bound once (its read plan carries it)."""
    anns = next((p.value for p in sub.search_params if p.key == "anns_field"), "")
    with _naming_sub_request(index, anns):
        check_no_primary_keys(sub)
        spec = convert.parse_search_request(sub, schema, limits)
        if spec.group_by_field:
            raise NotSupported("group by is not supported inside an ann search request of a hybrid search")
        if spec.filter.strip():
            check_expr_length(spec.filter, limits)
        bound = await ReadFilter.parse_async(spec.filter, schema, spec.filter_params)  # reject bad ones now
    return spec, bound


@contextlib.contextmanager
def _naming_sub_request(index: int, anns_field: str) -> Iterator[None]:
    """Re-raise a client error about sub request ``index`` with the request named in its message."""
    try:
        yield
    except StrataError as err:
        name = f"ann search request {index}" + (f" ({anns_field})" if anns_field else "")
        raise StrataError(f"{name}: {err.message}", err.code) from err


async def _all(coros: Iterable[Coroutine[Any, Any, T]]) -> list[T]:
    """Run ``coros`` concurrently; the first failure cancels the rest and is raised as itself."""
    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(c) for c in coros]
    except BaseExceptionGroup as failed:
        raise _first_error(failed) from None
    return [t.result() for t in tasks]


def _first_error(group: BaseExceptionGroup[BaseException]) -> BaseException:
    leaves: list[BaseException] = []
    pending: list[BaseException] = [group]
    while pending:
        err = pending.pop(0)
        if isinstance(err, BaseExceptionGroup):
            pending[:0] = list(err.exceptions)
        else:
            leaves.append(err)
    return next((e for e in leaves if isinstance(e, StrataError)), leaves[0])
