"""How a hybrid search's sub results are fused: each sub search's distances by its metric, one ranking.

``fuse`` takes each sub search's hits (``SubResult``, as ``merge_topk`` returns them) and a
ranker (``hybrid_rank.py``): RRF scores a key by its ranks, the weighted ranker sums its
(optionally normalised) distances; the fused list is paged with the request's limit and offset.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from common.schema import TIMESTAMP_COLUMN
from proxy.convert.search_results import DISTANCE_COLUMN, QUERY_COLUMN
from proxy.hybrid_rank import Ranker, RRFRanker, WeightedRanker
from segcore.segments.metric import Metric, parse_metric


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class SubResult:
    """One sub search's hits, as :func:`merge_topk` returns them (sorted by query, then best first)."""

    hits: pa.Table
    """Columns ``query``, the primary key, ``distance`` and the fetched output fields."""
    metric: str


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
