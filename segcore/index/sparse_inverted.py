"""SPARSE_INVERTED_INDEX and SPARSE_WAND: one posting list per dimension, walked by one of three algorithms.

Build: the segment's pairs minus the ``drop_ratio_build`` share of smallest
values (every value below that quantile of all values is left out), grouped by
dimension: for each dimension present, its rows (ascending) and values, and the
list's largest value. Stored beside the segment (``store.py``) as a numpy
archive of those arrays; restoring checks it against the segment's row count.

Search (each query without its ``drop_ratio_search`` smallest values; only
its dimensions with a list count): the exact pruning of every algorithm
(``TAAT_NAIVE`` scores every posting of every query term; ``DAAT_WAND`` skips
rows whose upper bound cannot beat the k-th best; ``DAAT_MAXSCORE`` with
``dim_max_score_ratio`` >= 1 takes candidates from the essential lists only)
returns the rows and scores of scoring every posting, so all three, and range
searches, are one sparse matrix product over the whole batch of queries
(``sparse_product.py``): the queries' weights times the posting lists, in C.
Only ``DAAT_MAXSCORE`` with ``dim_max_score_ratio`` < 1 prunes rows that could
be hits (each list's bound is scaled below its maximum, Milvus' knob for speed
over recall); that search keeps MaxScore's walk, one query at a time: rows are
visited in blocks of ``BLOCK_ROWS`` in row order, a block is skipped when the
sum over the query terms of weight x the list's largest value in that block
(scaled) cannot beat the current k-th best; the terms are ordered by their
bound (weight x list maximum x the ratio), those whose bounds sum to at most
the k-th best are non-essential, only rows of the essential lists are
candidates, and a candidate is scored in full only when its essential partial
score plus the non-essential bounds can beat the k-th best.

A scored row's score is the float64 sum of its contributions in ascending
dimension order, as the exact search computes it, so with drop ratios 0 (and
``dim_max_score_ratio`` >= 1) every algorithm returns exactly the exact
search's hits and distances.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np

from segcore.index.base import NO_PARAMS, IndexHits, SearchParams
from segcore.index.bm25_scoring import Bm25Setting, doc_lengths, scored_values
from segcore.index.checks import check_allowed, check_topk
from segcore.index.sparse_exact import check_sparse_metric, fill, rank_candidates, sparse_queries
from segcore.index.sparse_params import DEFAULT_DIM_MAX_SCORE_RATIO, InvertedIndexAlgo, SparseBuildParams
from segcore.index.sparse_product import PostingMatrix
from segcore.index.spec import IndexKind
from segcore.segments.metric import Metric
from segcore.segments.sparse_rows import SparseRows

#: Rows per block of the DAAT algorithms' block-max skipping.
BLOCK_ROWS = 4096
#: Relative slack on upper bounds: float64 sums in another order may round a hair lower.
_BOUND_SLACK = 1e-9
_FORMAT = 1


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class PostingLists:
    """Posting lists in CSC form: list ``j`` (dimension ``dims[j]``) is ``rows/values[ptr[j]:ptr[j+1]]``."""

    num_rows: int
    dims: np.ndarray  # uint32, ascending
    ptr: np.ndarray  # int64, len(dims) + 1
    rows: np.ndarray  # int64, ascending within a list
    values: np.ndarray  # float32
    maxima: np.ndarray  # float32, the largest value of each list

    @staticmethod
    def build(base: SparseRows, drop_ratio: float) -> PostingLists:
        row_of, indices, values = base.row_ids(), base.indices, base.values
        if drop_ratio > 0 and base.nnz:
            cut = int(drop_ratio * base.nnz)
            threshold = np.partition(values, cut)[cut] if cut < base.nnz else np.inf
            keep = values >= threshold
            row_of, indices, values = row_of[keep], indices[keep], values[keep]
        order = np.argsort(indices, kind="stable")  # pairs come in row order, so rows stay ascending per list
        indices, rows, vals = indices[order], row_of[order].astype(np.int64), values[order]
        dims, starts = np.unique(indices, return_index=True)
        ptr = np.append(starts, len(indices)).astype(np.int64)
        maxima = np.maximum.reduceat(vals, starts) if len(vals) else np.empty(0, np.float32)
        return PostingLists(num_rows=len(base), dims=dims.astype(np.uint32), ptr=ptr, rows=rows, values=vals,
                            maxima=maxima.astype(np.float32))

    def serialize(self) -> bytes:
        out = io.BytesIO()
        np.savez(out, format=np.int64(_FORMAT), num_rows=np.int64(self.num_rows), dims=self.dims, ptr=self.ptr,
                 rows=self.rows, values=self.values, maxima=self.maxima)
        return out.getvalue()

    @staticmethod
    def restore(data: bytes, num_rows: int) -> PostingLists:
        try:
            with np.load(io.BytesIO(data), allow_pickle=False) as archive:
                arrays = {name: archive[name] for name in archive.files}
        except (OSError, ValueError, KeyError) as err:
            raise ValueError(f"sparse index data unreadable: {err}") from err
        if int(arrays.get("format", -1)) != _FORMAT:
            raise ValueError("sparse index data of an unknown format")
        if int(arrays["num_rows"]) != num_rows:
            raise ValueError(f"sparse index covers {int(arrays['num_rows'])} rows, the segment has {num_rows}")
        lists = PostingLists(num_rows=num_rows, dims=arrays["dims"], ptr=arrays["ptr"], rows=arrays["rows"],
                             values=arrays["values"], maxima=arrays["maxima"])
        if len(lists.ptr) != len(lists.dims) + 1 or int(lists.ptr[-1]) != len(lists.rows) != len(lists.values):
            raise ValueError("sparse index data is inconsistent")
        return lists

    def terms(self, query_indices: np.ndarray, query_values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The lists of a query's dimensions that have one (ascending) and the query's weights for them."""
        pos = np.searchsorted(self.dims, query_indices)
        clipped = np.minimum(pos, max(len(self.dims) - 1, 0))
        has = (pos < len(self.dims)) & (self.dims[clipped] == query_indices) if len(self.dims) else pos < 0
        return clipped[has], query_values[has].astype(np.float64)


class SparseInvertedIndex:
    """An inverted index over one segment's sparse rows (see the module docstring)."""

    def __init__(
        self, kind: IndexKind, lists: PostingLists, metric: Metric, params: SparseBuildParams, dim: int,
        base: SparseRows | None = None,
    ) -> None:
        self._kind = kind
        self._lists = lists
        # BM25: the lists hold term frequencies; a search scores them for its (k1, b, avgdl).
        self._doc_len = doc_lengths(base) if metric is Metric.BM25 and base is not None else None
        self._scored: tuple[Bm25Setting, PostingLists] | None = None
        self._product: tuple[Bm25Setting | None, PostingMatrix] | None = None
        self._metric = check_sparse_metric(metric)
        self._params = params
        self._dim = dim

    @staticmethod
    def build(kind: IndexKind, base: SparseRows, metric: Metric, params: SparseBuildParams) -> SparseInvertedIndex:
        return SparseInvertedIndex(kind, PostingLists.build(base, params.drop_ratio_build), metric, params, base.dim, base)

    @staticmethod
    def restore(
        kind: IndexKind, data: bytes | None, base: SparseRows, metric: Metric, params: SparseBuildParams
    ) -> SparseInvertedIndex:
        if data is None:
            raise ValueError(f"a {kind.value} index needs its data")
        return SparseInvertedIndex(kind, PostingLists.restore(data, len(base)), metric, params, base.dim, base)

    @property
    def kind(self) -> IndexKind:
        return self._kind

    @property
    def metric(self) -> Metric:
        return self._metric

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def num_rows(self) -> int:
        return self._lists.num_rows

    @property
    def algo(self) -> InvertedIndexAlgo:
        return self._params.algo

    def serialize(self) -> bytes | None:
        return self._lists.serialize()

    def search(
        self,
        queries: np.ndarray,
        topk: int,
        *,
        allowed: np.ndarray | None = None,
        params: SearchParams = NO_PARAMS,
        threads: int = 1,
    ) -> IndexHits:
        """See ``VectorIndex.search``: ``queries`` are a padded ``PAIR`` batch (``sparse_rows.pad_queries``)."""
        check_topk(topk)
        params.validate(self._metric)
        rows = sparse_queries(queries, params)
        mask = check_allowed(allowed, self.num_rows)
        ratio = DEFAULT_DIM_MAX_SCORE_RATIO if params.dim_max_score_ratio is None else params.dim_max_score_ratio
        if self._params.algo is not InvertedIndexAlgo.DAAT_MAXSCORE or ratio >= 1 or params.is_range:
            # Every walk whose pruning is exact returns the product's hits: score them all at once.
            return self._matrix(params).search(rows, topk, mask, params)
        hits = IndexHits.empty(len(rows), topk, self._metric)
        posting = self._posting(params)
        for q in range(len(rows)):
            lists, weights = posting.terms(*rows.row(q))
            if len(lists) == 0:
                continue
            found, scores = _Daat(posting, lists, weights, topk, mask, ratio).run()
            if mask is not None:
                keep = mask[found]
                found, scores = found[keep], scores[keep]
            fill(hits, q, *rank_candidates(scores, found, topk, params))
        return hits

    def _setting(self, params: SearchParams) -> Bm25Setting | None:
        return None if self._doc_len is None else Bm25Setting.of(params)

    def _matrix(self, params: SearchParams) -> PostingMatrix:
        """The lists as a matrix: as stored (IP), or their frequencies as BM25 term scores (cached per setting)."""
        setting = self._setting(params)
        kept = self._product
        if kept is not None and kept[0] == setting:
            return kept[1]
        p = self._lists
        values = p.values
        if setting is not None and self._doc_len is not None:
            values = scored_values(p.values, p.rows, self._doc_len, setting)
        matrix = PostingMatrix.of(p.dims, p.ptr, p.rows, values, p.num_rows)
        self._product = (setting, matrix)
        return matrix

    def _posting(self, params: SearchParams) -> PostingLists:
        """The lists a walk visits: as stored (IP), or their frequencies as BM25 term scores."""
        if self._doc_len is None:
            return self._lists
        setting = Bm25Setting.of(params)
        if self._scored is not None and self._scored[0] == setting:
            return self._scored[1]
        p = self._lists
        values = scored_values(p.values, p.rows, self._doc_len, setting)
        maxima = np.maximum.reduceat(values, p.ptr[:-1]) if len(values) else np.empty(0, np.float32)
        scored = PostingLists(num_rows=p.num_rows, dims=p.dims, ptr=p.ptr, rows=p.rows, values=values,
                              maxima=maxima.astype(np.float32))
        self._scored = (setting, scored)
        return scored


class _Daat:
    """One query's document-at-a-time walk over blocks of rows with MaxScore's pruning."""

    def __init__(
        self, p: PostingLists, lists: np.ndarray, weights: np.ndarray, topk: int, mask: np.ndarray | None, ratio: float
    ) -> None:
        self.p, self.lists, self.weights, self.topk, self.mask = p, lists, weights, topk, mask
        self.bounds = weights * p.maxima[lists].astype(np.float64) * ratio  # per term: its best contribution
        nblocks = max(1, -(-p.num_rows // BLOCK_ROWS))
        edges = np.arange(nblocks + 1, dtype=np.int64) * BLOCK_ROWS
        # Per term, where each block starts in its list, and the list's largest value per block.
        self.cuts = [p.ptr[j] + np.searchsorted(p.rows[p.ptr[j] : p.ptr[j + 1]], edges) for j in lists]
        block_ub = np.zeros(nblocks, dtype=np.float64)
        for t, cut in enumerate(self.cuts):
            lengths = np.diff(cut)
            nonempty = np.flatnonzero(lengths)
            if len(nonempty):
                lo = cut[0]
                block_max = np.maximum.reduceat(p.values[lo : cut[-1]], cut[:-1][nonempty] - lo)
                block_ub[nonempty] += weights[t] * block_max.astype(np.float64) * ratio
        self.block_ub = block_ub
        self.best_rows = np.empty(0, dtype=np.int64)
        self.best_scores = np.empty(0, dtype=np.float64)

    def threshold(self) -> float:
        """The score a row must beat to enter (the k-th best so far; 0 until k rows are found)."""
        if len(self.best_rows) < self.topk:
            return 0.0
        return float(np.float32(self.best_scores[-1]))

    def run(self) -> tuple[np.ndarray, np.ndarray]:
        for b in range(len(self.block_ub)):
            theta = self.threshold()
            if self.block_ub[b] * (1 + _BOUND_SLACK) <= theta:
                continue  # no row of this block can beat the k-th best
            slices = [(self.p.rows[c[b] : c[b + 1]], c[b], c[b + 1]) for c in self.cuts]
            candidates = self._maxscore(slices, theta)
            if self.mask is not None and len(candidates):
                candidates = candidates[self.mask[candidates]]
            if len(candidates):
                self._merge(candidates, self._score(slices, candidates))
        return self.best_rows, self.best_scores

    def _maxscore(self, slices: list[tuple[np.ndarray, int, int]], theta: float) -> np.ndarray:
        """Rows of the essential lists whose partial score plus the non-essential bounds can beat ``theta``."""
        order = np.argsort(self.bounds, kind="stable")
        prefix = np.cumsum(self.bounds[order])
        non_essential = order[: int(np.searchsorted(prefix * (1 + _BOUND_SLACK), theta, side="right"))]
        essential = np.setdiff1d(order, non_essential)
        if len(essential) == 0:
            return np.empty(0, dtype=np.int64)
        rows = np.concatenate([slices[t][0] for t in essential])
        if len(rows) == 0:
            return rows
        contrib = np.concatenate([
            self.weights[t] * self.p.values[slices[t][1] : slices[t][2]].astype(np.float64) for t in essential
        ])
        uniq, inverse = np.unique(rows, return_inverse=True)
        partial = np.bincount(inverse, weights=contrib, minlength=len(uniq))
        rest = float(self.bounds[non_essential].sum())
        return uniq[(partial + rest) * (1 + _BOUND_SLACK) > theta]

    def _score(self, slices: list[tuple[np.ndarray, int, int]], candidates: np.ndarray) -> np.ndarray:
        """Exact scores of ``candidates`` (ascending rows): contributions summed in ascending dimension order."""
        scores = np.zeros(len(candidates), dtype=np.float64)
        for t, (rows, lo, hi) in enumerate(slices):
            if len(rows) == 0:
                continue
            pos = np.searchsorted(candidates, rows)
            clipped = np.minimum(pos, len(candidates) - 1)
            hit = candidates[clipped] == rows
            scores[clipped[hit]] += self.weights[t] * self.p.values[lo:hi][hit].astype(np.float64)
        return scores

    def _merge(self, rows: np.ndarray, scores: np.ndarray) -> None:
        """Keep the best ``topk`` of the kept rows and these (score above 0; ties: the smaller row)."""
        keep = scores.astype(np.float32) > 0
        rows = np.concatenate([self.best_rows, rows[keep]])
        scores = np.concatenate([self.best_scores, scores[keep]])
        order = np.lexsort((rows, -scores.astype(np.float32)))[: self.topk]
        self.best_rows, self.best_scores = rows[order], scores[order]
