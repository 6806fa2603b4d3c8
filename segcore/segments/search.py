"""Exact (brute-force) top-k search over a vector column (float32 or binary codes).

Ranking is deterministic: best distance first, ties broken by the smaller
row position. ``argpartition`` alone picks an arbitrary subset of the rows
tied at the k-th value, so rows where that matters are fixed up explicitly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from segcore.segments.binary_metric import binary_distances
from segcore.segments.binary_vectors import BinaryVectorColumn
from segcore.segments.metric import Metric
from segcore.segments.narrow_vectors import NarrowVectorColumn, matrix_distances
from segcore.segments.vectors import VectorColumn


@dataclass(frozen=True, slots=True, kw_only=True)
class Hits:
    """Flattened per-query results, queries in order, best first within a query."""

    query: np.ndarray  # int32
    row: np.ndarray  # int64 row positions in the store
    distance: np.ndarray  # float32

    @staticmethod
    def empty() -> Hits:
        return Hits(
            query=np.empty(0, np.int32),
            row=np.empty(0, np.int64),
            distance=np.empty(0, np.float32),
        )


def select_topk(scores: np.ndarray, k: int) -> np.ndarray:
    """Column indices ``(nq, min(k, n))`` of the ``k`` smallest ``scores`` per row, sorted.

    ``scores`` is ``(nq, n)`` and must hold no NaN. Equal scores rank by the
    smaller column.
    """
    nq, n = scores.shape
    k = min(k, n)
    if k <= 0:
        return np.empty((nq, 0), dtype=np.int64)
    if k == n:
        cols = np.broadcast_to(np.arange(n, dtype=np.int64), (nq, n)).copy()
    else:
        cols = np.argpartition(scores, k - 1, axis=1)[:, :k].astype(np.int64, copy=False)
        picked = np.take_along_axis(scores, cols, axis=1)
        kth = picked.max(axis=1, keepdims=True)
        tied_picked = np.count_nonzero(picked == kth, axis=1)
        tied_all = np.count_nonzero(scores == kth, axis=1)
        # Only rows where some rows tied at the k-th value were left out need
        # care: take every better row, then the tied ones by position.
        for q in np.flatnonzero(tied_all > tied_picked):
            better = np.flatnonzero(scores[q] < kth[q, 0])
            tied = np.flatnonzero(scores[q] == kth[q, 0])[: k - len(better)]
            cols[q] = np.concatenate([better, tied])
    picked = np.take_along_axis(scores, cols, axis=1)
    order = np.lexsort((cols, picked), axis=-1)
    return np.take_along_axis(cols, order, axis=1)


def exact_search(
    column: VectorColumn | BinaryVectorColumn | NarrowVectorColumn,
    queries: np.ndarray,
    *,
    metric: Metric,
    topk: int,
    candidates: np.ndarray | None,
) -> Hits:
    """Top-``topk`` rows of ``column`` for each query among ``candidates``.

    Args:
        column: the stored vectors.
        queries: ``(nq, dim)`` float32 (a narrow column's rows are converted to float32 a
            chunk at a time), or ``(nq, dim / 8)`` uint8 codes for a binary column.
        metric: distance to rank by (a binary metric for a binary column).
        topk: rows per query at most.
        candidates: sorted row positions to search, or ``None`` for every row.

    A row at ``+inf`` (a structure metric that does not match it) is never a hit.
    """
    nq = len(queries)
    matrix = column.matrix()
    extra = column.popcounts() if isinstance(column, BinaryVectorColumn) else column.sqnorms()

    def score(rows: np.ndarray | None) -> np.ndarray:
        base, aux = (matrix, extra) if rows is None else (matrix[rows], extra[rows])
        if isinstance(column, BinaryVectorColumn):
            return binary_distances(metric, queries, base, aux)
        return matrix_distances(metric, queries, base, aux)

    rows = np.arange(len(matrix), dtype=np.int64) if candidates is None else candidates
    if nq == 0 or len(rows) == 0:
        return Hits.empty()
    if candidates is None:
        dist = score(None)
    elif 2 * len(candidates) >= len(matrix):
        # Most rows qualify: gathering them would copy most of the matrix;
        # score every row and keep the candidates' columns instead.
        dist = score(None)[:, candidates]
    else:
        dist = score(candidates)
    # Rank in "smaller is better" space; NaN (from NaN inputs) ranks last.
    scores = -dist if metric.larger_is_better else dist
    nan = np.isnan(scores)
    if nan.any():
        scores = np.where(nan, np.inf, scores)
    cols = select_topk(scores, topk)
    if metric in (Metric.SUBSTRUCTURE, Metric.SUPERSTRUCTURE):
        return _matches_only(cols, rows, dist)
    k = cols.shape[1]
    return Hits(
        query=np.repeat(np.arange(nq, dtype=np.int32), k),
        row=rows[cols].reshape(-1),
        distance=np.take_along_axis(dist, cols, axis=1).reshape(-1).astype(np.float32),
    )


def _matches_only(cols: np.ndarray, rows: np.ndarray, dist: np.ndarray) -> Hits:
    """The hits of a structure metric: only the ranked rows that match (distance 0, not ``+inf``)."""
    picked = np.take_along_axis(dist, cols, axis=1)
    hit = np.isfinite(picked)
    query = np.repeat(np.arange(len(cols), dtype=np.int32), cols.shape[1]).reshape(cols.shape)
    return Hits(
        query=query[hit],
        row=rows[cols][hit].astype(np.int64),
        distance=picked[hit].astype(np.float32),
    )
