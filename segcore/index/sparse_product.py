"""A sparse index's search as one sparse matrix product: the queries' weights times the posting lists.

The posting lists are already a CSR matrix of ``(lists, rows)`` (list ``j``
holds the rows of dimension ``dims[j]`` with their values); a batch of queries
becomes a CSR matrix of ``(nq, lists)`` holding each query's weight at the list
of each of its dimensions. Their product, computed by scipy in C
(``csr_matmat``: per query, each of its terms in turn, each posting added into
the row's sum), is the ``(nq, rows)`` matrix of scores of the rows each query
touches. Values are float64 and a query's terms are in ascending dimension
order, so every score is the float64 sum of the same products in the same
order as the exact search (``segcore/segments/sparse_metric.py``) computes it:
the float32 distances are bit-identical.

A batch is scored in blocks of queries whose lists hold about
``BLOCK_POSTINGS`` postings together (a query holding more is a block alone),
so the product's output stays bounded (a batch of 100 queries over a segment
of a million rows would otherwise hold up to 100M scores at once).

The best ``topk`` of each query's touched rows are then taken among the
allowed ones scoring above 0 (and within the range), best first, ties by the
smaller row: ``argpartition`` to the k-th value, then every row at least as
good is ranked, so rows tied at the k-th place are decided by their position.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from segcore.index.base import IndexHits, SearchParams
from segcore.segments.metric import Metric
from segcore.segments.sparse_rows import SparseRows

#: Postings a block of queries is scored over at once (the product's output is at most that many entries).
BLOCK_POSTINGS = 1 << 20


@dataclass(frozen=True, slots=True, eq=False)
class PostingMatrix:
    """Posting lists (of dimensions ``dims``, ascending) as a ``(lists, rows)`` float64 CSR matrix."""

    dims: np.ndarray
    matrix: sp.csr_array

    @staticmethod
    def of(dims: np.ndarray, ptr: np.ndarray, rows: np.ndarray, values: np.ndarray, num_rows: int) -> PostingMatrix:
        matrix = sp.csr_array((values.astype(np.float64), rows, ptr), shape=(len(dims), num_rows))
        return PostingMatrix(dims=dims, matrix=matrix)

    def search(self, queries: SparseRows, topk: int, allowed: np.ndarray | None, params: SearchParams) -> IndexHits:
        """The best ``topk`` rows per query; the batch is scored in blocks of queries holding about
        ``BLOCK_POSTINGS`` postings (at least one query), so a block's scores stay small and in cache."""
        nq = len(queries)
        pos, found = self._lookup(queries)
        sizes = np.zeros(queries.nnz, dtype=np.int64)
        sizes[found] = np.diff(self.matrix.indptr)[pos[found]]
        per_query = np.bincount(queries.row_ids(), weights=sizes, minlength=nq)
        hits = IndexHits.empty(nq, topk, Metric.IP)
        start = 0
        while start < nq:
            total = np.cumsum(per_query[start:])
            stop = start + max(1, int(np.searchsorted(total, BLOCK_POSTINGS, side="right")))
            part = best_hits(self.scores(queries.slice_rows(start, stop)), topk, allowed, params)
            hits.rows[start:stop], hits.distances[start:stop] = part.rows, part.distances
            start = stop
        return hits

    def _lookup(self, queries: SparseRows) -> tuple[np.ndarray, np.ndarray]:
        """Per query pair: the position of its list, and whether it has one."""
        lists = len(self.dims)
        pos = np.searchsorted(self.dims, queries.indices)
        if lists == 0:
            return pos, np.zeros(queries.nnz, dtype=bool)
        pos = np.minimum(pos, lists - 1)
        return pos, self.dims[pos] == queries.indices

    def scores(self, queries: SparseRows) -> sp.csr_array:
        """``(nq, rows)`` float64 scores of the rows each query touches (rows that no term of it holds
        are absent; the columns of a query's row are in no particular order)."""
        nq, lists = len(queries), len(self.dims)
        pos, found = self._lookup(queries)
        indptr = np.zeros(nq + 1, dtype=np.int64)
        np.cumsum(np.bincount(queries.row_ids()[found], minlength=nq), out=indptr[1:])
        weights = sp.csr_array(
            (queries.values[found].astype(np.float64), pos[found], indptr), shape=(nq, max(lists, 1))
        )
        if lists == 0:
            return sp.csr_array((nq, self.matrix.shape[1]), dtype=np.float64)
        product = weights @ self.matrix
        assert isinstance(product, sp.csr_array)
        return product


def best_hits(
    scores: sp.csr_array, topk: int, allowed: np.ndarray | None, params: SearchParams
) -> IndexHits:
    """The best ``topk`` rows per query of ``scores`` (see the module docstring)."""
    nq = scores.shape[0]
    hits = IndexHits.empty(nq, topk, Metric.IP)
    rows = scores.indices.astype(np.int64, copy=False)
    dist = scores.data.astype(np.float32)
    keep = (dist > 0) & params.in_range(Metric.IP, dist)
    if allowed is not None:
        keep &= allowed[rows]
    kept = np.zeros(len(keep) + 1, dtype=np.int64)
    np.cumsum(keep, out=kept[1:])
    bounds = kept[scores.indptr]
    rows, dist = rows[keep], dist[keep]
    for q in range(nq):
        lo, hi = int(bounds[q]), int(bounds[q + 1])
        if lo == hi:
            continue
        r, d = rows[lo:hi], dist[lo:hi]
        if hi - lo > topk:
            kth = d[np.argpartition(d, hi - lo - topk)[hi - lo - topk]]
            best = d >= kth  # the k best and every row tied with the k-th
            r, d = r[best], d[best]
        order = np.lexsort((r, -d))[:topk]
        hits.rows[q, : len(order)] = r[order]
        hits.distances[q, : len(order)] = d[order]
    return hits
