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
import math
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pymilvus.grpc_gen import milvus_pb2, schema_pb2

from common.config import DEFAULT_LIMITS, ProxyLimits
from common.errors import InvalidArgument, NotSupported, StrataError
from common.jsonvalue import load_json
from common.readplan import ReadFilter, ReadPlan, VectorQuery
from common.schema import TIMESTAMP_COLUMN, CollectionSchema
from proxy import convert
from proxy.convert.pkids import check_no_primary_keys
from proxy.convert.search import TOPK_LIMIT, SearchSpec
from proxy.convert.search_checks import check_index_search_params, check_range
from proxy.convert.search_results import DISTANCE_COLUMN, QUERY_COLUMN
from proxy.limits import check_expr_length
from proxy.metacache import CollectionEntry
from proxy.reads import ReadRouter
from proxy.status import success
from segcore.segments.metric import Metric, parse_metric
from segcore.segments.reduce import merge_topk

RRF_DEFAULT_K = 60.0
RRF_K_LIMIT = 16384.0
"""RRF's ``k`` must lie strictly between 0 and this (Milvus' bound)."""
MAX_SUB_REQUESTS = 1024
ROUND_DECIMAL_MAX = 6
# rank_params keys pymilvus sends for grouping a hybrid search (not served yet).
_GROUPING_KEYS = ("group_by_field", "group_size", "strict_group_size", "rank_group_scorer")
_FUNCTION_RERANKER_KEY = "reranker"

T = TypeVar("T")
MetricFor = Callable[[CollectionEntry, str, str | None], Coroutine[Any, Any, str]]


@dataclass(frozen=True, slots=True, kw_only=True)
class RRFRanker:
    """Reciprocal rank fusion: a key scores ``sum(1 / (k + rank))``, rank 1 being the best hit."""

    k: float = RRF_DEFAULT_K

    def validate(self) -> None:
        if not (math.isfinite(self.k) and 0 < self.k < RRF_K_LIMIT):
            raise InvalidArgument(f"rank param k [{self.k:g}] is invalid, it should be in range (0, {RRF_K_LIMIT:g})")


@dataclass(frozen=True, slots=True, kw_only=True)
class WeightedRanker:
    """Weighted sum of the sub searches' (by default unmapped) distances, one weight per sub search."""

    weights: tuple[float, ...]
    norm_score: bool = False
    """Map each distance to ``[0, 1]`` by its metric first (pymilvus sends ``true`` unless told)."""

    def validate(self, sub_requests: int) -> None:
        if not self.weights:
            raise InvalidArgument("rank param weights is empty: give one weight per ann search request")
        if len(self.weights) != sub_requests:
            raise InvalidArgument(
                f"the number of weights ({len(self.weights)}) does not match the number of "
                f"ann search requests ({sub_requests})"
            )
        for weight in self.weights:
            if not 0 <= weight <= 1:
                raise InvalidArgument(f"rank param weight [{weight:g}] is invalid, it should be in range [0, 1]")


Ranker = RRFRanker | WeightedRanker


@dataclass(frozen=True, slots=True, kw_only=True)
class HybridRank:
    """How the sub searches' hits are fused and paged."""

    ranker: Ranker
    limit: int
    offset: int = 0
    round_decimal: int = -1


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class SubResult:
    """One sub search's hits, as :func:`merge_topk` returns them (sorted by query, then best first)."""

    hits: pa.Table
    """Columns ``query``, the primary key, ``distance`` and the fetched output fields."""
    metric: str


# ---------------------------------------------------------------------------------- rank params


def parse_rank(
    rank_params: Mapping[str, str],
    function_score: schema_pb2.FunctionScore | None,
    *,
    sub_requests: int,
    max_topk: int = TOPK_LIMIT,
) -> HybridRank:
    """The ranker and paging of a hybrid search, checked as Milvus checks them.

    ``function_score``, when it holds a function, names the ranker; otherwise
    ``strategy`` and ``params`` in ``rank_params`` do (no ``strategy``: RRF
    with ``k`` = 60, as in Milvus).

    Raises:
        InvalidArgument: an unknown strategy, malformed params, ``k`` outside
            (0, 16384), weights not one per sub request or outside [0, 1],
            ``limit``/``offset``/``round_decimal`` missing or out of range.
        NotSupported: a reranker other than RRF or weighted, or grouping.
    """
    for key in _GROUPING_KEYS:
        if rank_params.get(key, "").strip() not in ("", "None"):
            raise NotSupported(f"hybrid search with {key} is not supported yet")
    if function_score is not None and len(function_score.functions) > 0:
        ranker = _ranker_from_function_score(function_score)
    else:
        ranker = _ranker_from_rank_params(rank_params)
    match ranker:
        case RRFRanker():
            ranker.validate()
        case WeightedRanker():
            ranker.validate(sub_requests)
    if "limit" not in rank_params:
        raise InvalidArgument("limit not found in rank_params")
    limit = _int_param("limit", rank_params["limit"])
    offset = _int_param("offset", rank_params.get("offset") or 0)
    round_decimal = _int_param("round_decimal", rank_params.get("round_decimal") or -1)
    if not 1 <= limit <= max_topk:
        raise InvalidArgument(f"limit [{limit}] is invalid, it should be in range [1, {max_topk}], but got {limit}")
    if offset < 0:
        raise InvalidArgument(f"offset [{offset}] is invalid, it should be non-negative")
    if limit + offset > max_topk:
        raise InvalidArgument(
            f"limit+offset [{limit + offset}] is invalid, it should be in range [1, {max_topk}], "
            f"but got {limit + offset}"
        )
    if round_decimal != -1 and not 0 <= round_decimal <= ROUND_DECIMAL_MAX:
        raise InvalidArgument(
            f"round_decimal {round_decimal} is invalid, should be -1 or an integer in range [0, {ROUND_DECIMAL_MAX}]"
        )
    return HybridRank(ranker=ranker, limit=limit, offset=offset, round_decimal=round_decimal)


def _ranker_from_rank_params(rank_params: Mapping[str, str]) -> Ranker:
    strategy = rank_params.get("strategy", "").strip()
    if not strategy:
        return RRFRanker()
    if "params" not in rank_params:
        raise InvalidArgument("params not found in rank_params")
    try:
        params = load_json(rank_params["params"])
    except ValueError as err:
        raise InvalidArgument(f"rank params is not valid JSON: {err}") from None
    if not isinstance(params, dict):
        raise InvalidArgument("rank params must be a JSON object")
    match strategy.lower():
        case "rrf":
            return RRFRanker(k=_number("k", params["k"]) if "k" in params else RRF_DEFAULT_K)
        case "weighted":
            norm = params.get("norm_score", False)
            if not isinstance(norm, bool):
                raise InvalidArgument(f"rank param norm_score [{norm}] is invalid, it should be true or false")
            return WeightedRanker(weights=_weights(params.get("weights")), norm_score=norm)
        case _:
            raise InvalidArgument(f"unsupported rank strategy {strategy!r}: use 'rrf' or 'weighted'")


def _ranker_from_function_score(function_score: schema_pb2.FunctionScore) -> Ranker:
    if len(function_score.functions) > 1:
        raise InvalidArgument(f"hybrid search takes one rerank function, got {len(function_score.functions)}")
    function = function_score.functions[0]
    if function.type != schema_pb2.FunctionType.Rerank:
        got = schema_pb2.FunctionType.Name(function.type)
        raise InvalidArgument(f"function {function.name!r} of type {got} is not a rerank function")
    params = {p.key.lower(): p.value for p in function.params}
    name = params.get(_FUNCTION_RERANKER_KEY, "").strip().lower()
    if name not in ("rrf", "weighted"):
        raise NotSupported(f"reranker {name!r} is not supported in hybrid search: use 'rrf' or 'weighted'")
    if len(function.input_field_names) > 0:
        raise InvalidArgument(f"the {name} reranker takes no input fields, got {list(function.input_field_names)}")
    if name == "rrf":
        return RRFRanker(k=_number("k", params["k"]) if "k" in params else RRF_DEFAULT_K)
    if "weights" not in params:
        raise InvalidArgument("rank param weights not found")
    try:
        weights = load_json(params["weights"])
    except ValueError:
        raise InvalidArgument(f"rank param weights [{params['weights']}] should be a list of numbers") from None
    norm_text = params.get("norm_score", "false").strip().lower()
    if norm_text not in ("true", "false", "1", "0"):
        raise InvalidArgument(f"rank param norm_score [{params['norm_score']}] is invalid, it should be true or false")
    return WeightedRanker(weights=_weights(weights), norm_score=norm_text in ("true", "1"))


def _weights(raw: Any) -> tuple[float, ...]:
    if raw is None:
        raise InvalidArgument("rank param weights not found")
    if not isinstance(raw, list):
        raise InvalidArgument(f"rank param weights [{raw}] should be a list of numbers")
    return tuple(_number("weight", w) for w in raw)


def _number(key: str, raw: Any) -> float:
    message = f"rank param {key} [{raw}] is invalid, it should be a number"
    if isinstance(raw, bool):
        raise InvalidArgument(message)
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise InvalidArgument(message) from None
    if math.isnan(value):
        raise InvalidArgument(message)
    return value


def _int_param(key: str, raw: Any) -> int:
    try:
        return int(raw)
    except (TypeError, ValueError):
        raise InvalidArgument(f"{key} [{raw}] is invalid, it should be an integer") from None


# ---------------------------------------------------------------------------------- fusion


def normalize_distances(distances: np.ndarray, metric: str) -> np.ndarray:
    """Milvus' mapping of a metric's distances to scores in ``[0, 1]``, larger better."""
    d = np.asarray(distances, dtype=np.float64)
    match parse_metric(metric):
        case Metric.L2:
            return 1.0 - 2.0 * np.arctan(d) / np.pi
        case Metric.IP:
            return 0.5 + np.arctan(d) / np.pi
        case Metric.COSINE:
            return (1.0 + d) / 2.0
        case Metric.BM25:  # Milvus: scores are >= 0
            return 2.0 * np.arctan(d) / np.pi
        case Metric.HAMMING | Metric.JACCARD | Metric.SUBSTRUCTURE | Metric.SUPERSTRUCTURE:
            return 1.0 - 2.0 * np.arctan(d) / np.pi  # Milvus' default branch, as for L2


def _weighted_inputs(distances: np.ndarray, metric: str, *, norm_score: bool, mixed: bool) -> np.ndarray:
    if norm_score:
        return normalize_distances(distances, metric)
    if mixed and not parse_metric(metric).larger_is_better:
        return normalize_distances(distances, metric)  # only the direction must agree
    return np.asarray(distances, dtype=np.float64)


def fused_larger_first(ranker: Ranker, metrics: Sequence[str]) -> bool:
    """Whether fused scores rank larger first (all but unmapped, all-L2 weighted sums)."""
    match ranker:
        case RRFRanker():
            return True
        case WeightedRanker():
            return ranker.norm_score or any(parse_metric(m).larger_is_better for m in metrics)


def fuse(subs: Sequence[SubResult], *, ranker: Ranker, limit: int, offset: int, pk_field: str) -> pa.Table:
    """Fuse the sub searches' hits per query into one ranked, paged list.

    Pure (no I/O). Every sub table must hold the same columns besides
    ``distance`` and ``_ts``; each is sorted by query, then best hit first.

    Returns:
        The first sub table's columns (``distance`` now the fused score,
        ``_ts`` dropped) for the kept hits, sorted by query, then fused rank
        (ties: the smaller primary key first).

    Raises:
        ValueError: no sub results, weights not one per sub result, a sub
            table not sorted by query, or mismatched columns.
    """
    if not subs:
        raise ValueError("no sub search results to fuse")
    if isinstance(ranker, WeightedRanker) and len(ranker.weights) != len(subs):
        raise ValueError(f"{len(ranker.weights)} weights for {len(subs)} sub search results")
    columns = [c for c in subs[0].hits.column_names if c not in (DISTANCE_COLUMN, TIMESTAMP_COLUMN)]
    metrics = [s.metric for s in subs]
    mixed = len({parse_metric(m).larger_is_better for m in metrics}) > 1
    contributions = []
    for i, sub in enumerate(subs):
        queries = sub.hits.column(QUERY_COLUMN).to_numpy()
        if np.any(np.diff(queries) < 0):
            raise ValueError(f"sub search result {i} is not sorted by query")
        match ranker:
            case RRFRanker(k=k):
                contributions.append(1.0 / (k + _rank_in_runs(queries) + 1.0))
            case WeightedRanker(weights=weights, norm_score=norm):
                d = sub.hits.column(DISTANCE_COLUMN).to_numpy()
                contributions.append(weights[i] * _weighted_inputs(d, sub.metric, norm_score=norm, mixed=mixed))
    try:
        hits = pa.concat_tables([s.hits.select(columns) for s in subs]).combine_chunks()
    except (KeyError, pa.ArrowInvalid) as err:
        raise ValueError("sub search results to fuse have different columns") from err
    contribution = np.concatenate(contributions) if contributions else np.empty(0)
    n = hits.num_rows
    if n == 0:
        return hits.append_column(DISTANCE_COLUMN, pa.array([], type=pa.float64()))

    # One row per (query, key): its score sums the contributions, its fields are the first sub's.
    all_queries = hits.column(QUERY_COLUMN).to_numpy()
    keyed = pa.table({QUERY_COLUMN: hits.column(QUERY_COLUMN), pk_field: hits.column(pk_field), "__seq": np.arange(n)})
    by_key = pc.sort_indices(
        keyed, sort_keys=[(QUERY_COLUMN, "ascending"), (pk_field, "ascending"), ("__seq", "ascending")]
    ).to_numpy()
    queries = all_queries[by_key]
    keys = hits.column(pk_field).take(by_key).combine_chunks()
    first = np.ones(n, dtype=bool)
    first[1:] = (queries[1:] != queries[:-1]) | pc.not_equal(keys.slice(1), keys.slice(0, n - 1)).to_numpy(
        zero_copy_only=False
    )
    starts = np.flatnonzero(first)
    scores = np.add.reduceat(contribution[by_key], starts)
    rows = by_key[starts]

    direction = "descending" if fused_larger_first(ranker, metrics) else "ascending"
    ranking = pa.table({QUERY_COLUMN: queries[starts], "__score": scores, pk_field: keys.take(pa.array(starts))})
    order = pc.sort_indices(
        ranking, sort_keys=[(QUERY_COLUMN, "ascending"), ("__score", direction), (pk_field, "ascending")]
    ).to_numpy()
    rank = _rank_in_runs(queries[starts][order])
    page = order[(rank >= offset) & (rank < offset + limit)]
    return hits.take(pa.array(rows[page])).append_column(DISTANCE_COLUMN, pa.array(scores[page], type=pa.float64()))


def _rank_in_runs(sorted_queries: np.ndarray) -> np.ndarray:
    """Each hit's 0-based position among the hits of its query (hits sorted by query)."""
    n = len(sorted_queries)
    if n == 0:
        return np.empty(0, dtype=np.int64)
    start = np.ones(n, dtype=bool)
    start[1:] = sorted_queries[1:] != sorted_queries[:-1]
    starts = np.flatnonzero(start)
    result: np.ndarray = np.arange(n) - np.repeat(starts, np.diff(np.append(starts, n)))
    return result


# ---------------------------------------------------------------------------------- the RPC


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
