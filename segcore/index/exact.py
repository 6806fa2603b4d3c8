"""Exact top-k over a float32 matrix, among allowed rows, with the range applied.

The brute-force kernel behind FLAT and behind HNSW's exact fallback. Distances
come from ``segcore.segments.metric.distances`` and ranking from
``select_topk`` (best first, ties by the smaller row), the same as growing
segments. Queries are processed in blocks so the distance matrix stays small.
"""

from __future__ import annotations

import numpy as np

from segcore.index.base import IndexHits, SearchParams, worst_distance
from segcore.segments.metric import Metric
from segcore.segments.narrow_vectors import matrix_distances
from segcore.segments.search import select_topk

#: Largest distance block (queries x candidate rows) computed at once: 32 MiB of float32.
BLOCK_CELLS = 8 * 1024 * 1024


def exact_topk(
    metric: Metric,
    vectors: np.ndarray,
    sqnorms: np.ndarray,
    queries: np.ndarray,
    topk: int,
    *,
    candidates: np.ndarray | None,
    params: SearchParams,
) -> IndexHits:
    """The exact ``topk`` rows per query among ``candidates``.

    Args:
        metric: the distance.
        vectors: ``(n, dim)`` float32 rows, or narrow ones (converted a chunk of rows at a time).
        sqnorms: their squared L2 norms (``(n,)`` float32).
        queries: ``(nq, dim)`` float32, already checked.
        topk: at least 1.
        candidates: sorted int64 row positions that may be returned, or ``None`` for all.
        params: the range, if any (``ef`` is ignored).

    Returns:
        ``(nq, topk)`` hits. A NaN distance ranks last and never passes a range.
    """
    nq = len(queries)
    hits = IndexHits.empty(nq, topk, metric)
    rows = np.arange(len(vectors), dtype=np.int64) if candidates is None else candidates
    if nq == 0 or len(rows) == 0:
        return hits
    # Gather the candidates only when they are few: a mostly-allowed gather copies
    # most of the matrix, scoring every row and dropping columns is cheaper then.
    gather = candidates is not None and 2 * len(candidates) < len(vectors)
    # np.take copies whole rows at a time; fancy indexing (vectors[rows]) was ~10x slower on (n, 8) float32.
    base, base_sqnorms = (np.take(vectors, rows, axis=0), sqnorms[rows]) if gather else (vectors, sqnorms)
    drop = None if gather or candidates is None else candidates
    step = max(1, BLOCK_CELLS // len(base))
    for start in range(0, nq, step):
        block = slice(start, min(nq, start + step))
        dist = matrix_distances(metric, queries[block], base, base_sqnorms)
        if drop is not None:
            dist = dist[:, drop]
        _rank_block(metric, dist, rows, topk, params, hits, block)
    return hits


def _rank_block(
    metric: Metric,
    dist: np.ndarray,
    rows: np.ndarray,
    topk: int,
    params: SearchParams,
    hits: IndexHits,
    block: slice,
) -> None:
    """Rank one block of distances (columns = ``rows``) into ``hits[block]``."""
    scores = -dist if metric.larger_is_better else dist.copy()
    keep = params.in_range(metric, dist)
    # Ranked in "smaller is better" space; NaN and out-of-range rows rank last.
    scores[np.isnan(scores) | ~keep] = np.inf
    cols = select_topk(scores, topk)
    k = cols.shape[1]
    found = np.take_along_axis(keep, cols, axis=1) if params.is_range else np.ones(cols.shape, dtype=bool)
    out_rows = np.where(found, rows[cols], -1)
    out_dist = np.where(found, np.take_along_axis(dist, cols, axis=1), worst_distance(metric))
    hits.rows[block, :k] = out_rows
    hits.distances[block, :k] = out_dist
