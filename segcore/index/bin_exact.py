"""Exact top-k over binary codes, among allowed rows, with the range applied.

The kernel behind BIN_FLAT and behind BIN_IVF_FLAT's probed lists. Distances
come from ``segcore.segments.binary_metric`` and ranking from
``select_topk`` (best first, ties by the smaller row), as for growing
segments. A row at ``+inf`` (one a structure metric does not match) is never a
hit: for SUBSTRUCTURE and SUPERSTRUCTURE the hits are the first ``topk``
matching rows, at distance 0, as knowhere returns them. Queries are processed
in blocks so the distance matrix stays small.
"""

from __future__ import annotations

import numpy as np

from segcore.index.base import IndexHits, SearchParams, worst_distance
from segcore.segments.binary_metric import binary_distances
from segcore.segments.metric import Metric
from segcore.segments.search import select_topk

#: Largest distance block (queries x candidate rows) computed at once: 32 MiB of float32.
BLOCK_CELLS = 8 * 1024 * 1024


def binary_exact_topk(
    metric: Metric,
    codes: np.ndarray,
    counts: np.ndarray,
    queries: np.ndarray,
    topk: int,
    *,
    candidates: np.ndarray | None,
    params: SearchParams,
) -> IndexHits:
    """The exact ``topk`` rows per query among ``candidates``.

    Args:
        metric: a binary metric.
        codes: ``(n, code_size)`` uint8 rows.
        counts: their bits set (``binary_metric.popcounts``).
        queries: ``(nq, code_size)`` uint8, already checked.
        topk: at least 1.
        candidates: sorted int64 row positions that may be returned, or ``None`` for all.
        params: the range, if any (``ef`` and ``nprobe`` are ignored).
    """
    nq = len(queries)
    hits = IndexHits.empty(nq, topk, metric)
    rows = np.arange(len(codes), dtype=np.int64) if candidates is None else candidates
    if nq == 0 or len(rows) == 0:
        return hits
    # Gather the candidates only when they are few (as exact.py does for float rows).
    gather = candidates is not None and 2 * len(candidates) < len(codes)
    base, base_counts = (codes[rows], counts[rows]) if gather else (codes, counts)
    drop = None if gather or candidates is None else candidates
    step = max(1, BLOCK_CELLS // len(base))
    for start in range(0, nq, step):
        block = slice(start, min(nq, start + step))
        dist = binary_distances(metric, queries[block], base, base_counts)
        if drop is not None:
            dist = dist[:, drop]
        rank_into(metric, dist, rows, topk, params, hits, block)
    return hits


def rank_into(
    metric: Metric,
    dist: np.ndarray,
    rows: np.ndarray,
    topk: int,
    params: SearchParams,
    hits: IndexHits,
    block: slice,
) -> None:
    """Rank one block of smaller-is-better distances (columns = ``rows``) into ``hits[block]``."""
    keep = params.in_range(metric, dist) & np.isfinite(dist)
    scores = np.where(keep, dist, np.inf)
    cols = select_topk(scores, topk)
    k = cols.shape[1]
    found = np.take_along_axis(keep, cols, axis=1)
    hits.rows[block, :k] = np.where(found, rows[cols], -1)
    hits.distances[block, :k] = np.where(found, np.take_along_axis(dist, cols, axis=1), worst_distance(metric))
