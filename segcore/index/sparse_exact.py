"""Exact IP search over sparse rows: the search of growing segments and of sealed ones without an index.

Scores come from ``segcore.segments.sparse_metric`` (float64 sums in
ascending index order, then float32). Hits are the rows that score above 0
(that share a positive pair with the query), best first, ties by the smaller
row, among the allowed rows and within the range when one is given.
"""

from __future__ import annotations

import numpy as np

from common.errors import InvalidArgument
from segcore.index.base import NO_PARAMS, IndexHits, SearchParams, worst_distance
from segcore.index.bm25_scoring import ScoredRows
from segcore.index.checks import check_allowed, check_topk
from segcore.index.spec import IndexKind
from segcore.segments.metric import Metric, parse_metric
from segcore.segments.search import select_topk
from segcore.segments.sparse_metric import BLOCK_CELLS, sparse_ip
from segcore.segments.sparse_rows import SparseRows, drop_smallest, unpad_queries


def sparse_queries(queries: np.ndarray, params: SearchParams) -> SparseRows:
    """A padded query batch (``sparse_rows.pad_queries``) as rows, without the ``drop_ratio_search`` share."""
    try:
        rows = unpad_queries(queries)
    except ValueError as err:
        raise InvalidArgument(str(err)) from err
    return drop_smallest(rows, params.drop_ratio_search or 0.0)


def check_sparse_metric(metric: Metric) -> Metric:
    if metric not in (Metric.IP, Metric.BM25):
        raise ValueError(f"sparse vectors are searched with IP or BM25, not {metric.value}")
    return metric


def rank_candidates(
    scores: np.ndarray, rows: np.ndarray, topk: int, params: SearchParams
) -> tuple[np.ndarray, np.ndarray]:
    """The best ``topk`` of one query's candidate ``rows`` (float64 ``scores``): rows and float32
    distances, best first, ties by the smaller row; only scores above 0 and within the range."""
    dist = scores.astype(np.float32)
    keep = (dist > 0) & params.in_range(Metric.IP, dist)
    rows, dist = rows[keep], dist[keep]
    if len(rows) > topk:
        order = np.lexsort((rows, -dist))[:topk]
        return rows[order], dist[order]
    order = np.lexsort((rows, -dist))
    return rows[order], dist[order]


def fill(hits: IndexHits, q: int, rows: np.ndarray, dist: np.ndarray) -> None:
    hits.rows[q, : len(rows)] = rows
    hits.distances[q, : len(rows)] = dist


def sparse_exact_topk(
    base: SparseRows, queries: SparseRows, topk: int, *, allowed: np.ndarray | None, params: SearchParams
) -> IndexHits:
    """The exact ``topk`` rows of ``base`` per query (see the module docstring)."""
    nq, n = len(queries), len(base)
    hits = IndexHits.empty(nq, topk, Metric.IP)
    if nq == 0 or n == 0:
        return hits
    row_of = base.row_ids()
    step = max(1, BLOCK_CELLS // n)
    for start in range(0, nq, step):
        stop = min(nq, start + step)
        scores = sparse_ip(queries.slice_rows(start, stop), base, row_of)
        dist = scores.astype(np.float32)
        keep = (dist > 0) & params.in_range(Metric.IP, dist)
        if allowed is not None:
            keep &= allowed[None, :]
        cols = select_topk(np.where(keep, -dist, np.inf), topk)
        found = np.take_along_axis(keep, cols, axis=1)
        k = cols.shape[1]
        hits.rows[start:stop, :k] = np.where(found, cols, -1)
        hits.distances[start:stop, :k] = np.where(
            found, np.take_along_axis(dist, cols, axis=1), worst_distance(Metric.IP)
        )
    return hits


class SparseExactIndex:
    """Brute force over a segment's sparse rows (kept by reference); nothing is built or stored.

    Not a kind users create: it stands in for a sparse field's index where there is none
    (its ``kind`` reads SPARSE_INVERTED_INDEX, the kind of every sparse index).
    """

    def __init__(self, rows: SparseRows, metric: Metric) -> None:
        self._rows = rows
        self._metric = check_sparse_metric(metric)
        self._bm25 = ScoredRows(rows) if metric is Metric.BM25 else None

    @property
    def kind(self) -> IndexKind:
        return IndexKind.SPARSE_INVERTED_INDEX

    @property
    def metric(self) -> Metric:
        return self._metric

    @property
    def dim(self) -> int:
        return self._rows.dim

    @property
    def num_rows(self) -> int:
        return len(self._rows)

    def search(
        self,
        queries: np.ndarray,
        topk: int,
        *,
        allowed: np.ndarray | None = None,
        params: SearchParams = NO_PARAMS,
        threads: int = 1,
    ) -> IndexHits:
        """See ``VectorIndex.search``: ``queries`` are a padded ``PAIR`` batch; exact."""
        check_topk(topk)
        params.validate(self._metric)
        rows = sparse_queries(queries, params)
        base = self._rows if self._bm25 is None else self._bm25.scored(params)
        return sparse_exact_topk(base, rows, topk, allowed=check_allowed(allowed, self.num_rows), params=params)

    def serialize(self) -> bytes | None:
        return None


def exact_sparse_index(rows: object, metric: str) -> SparseExactIndex:
    """The exact search over a sparse field's rows (``GrowingStore.vector_matrix``) with ``metric``."""
    if not isinstance(rows, SparseRows):
        raise ValueError("an exact sparse search needs sparse rows")
    return SparseExactIndex(rows, parse_metric(metric))
