"""What the structured float-vector kinds share: HNSW, the faiss families and DISKANN.

Each keeps a ``FlatIndex`` over the segment's own vectors beside its
structure (graph or lists): the index's metric, dimension and row count are
the flat index's, and the flat index answers what the structure should not:

* no structure (a segment too small to build one), ``topk`` or fewer allowed
  rows, or fewer than ``IndexOptions.exact_threshold(rows, nq)`` of them: an
  exact search over the allowed rows (``searches_exactly``);
* the queries the structure could not settle (``fill_exactly``).

``ApproximateIndex.search`` checks the arguments, picks exact or structured,
and leaves the structured search to the kind's ``_approximate``.
``range_by_doubling`` is the range search of the kinds whose structure
returns the ``k`` best candidates of a query: ask for ``k``, keep what is in
range, ask again with ``k`` doubled for the queries not yet settled.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from segcore.index.base import NO_PARAMS, IndexHits, SearchParams
from segcore.index.checks import check_allowed, check_queries, check_topk
from segcore.index.flat import FlatIndex
from segcore.index.options import IndexOptions
from segcore.index.spec import IndexKind
from segcore.segments.metric import Metric

#: A structured top-``k`` of some queries: ``(rows, distances)`` best first, or None when it came up short.
Knn = Callable[[np.ndarray, int], tuple[np.ndarray, np.ndarray] | None]


class ApproximateIndex:
    """A structure over rows ``0..n-1`` and the ``FlatIndex`` of the same rows (module docstring)."""

    def __init__(self, flat: FlatIndex, options: IndexOptions) -> None:
        self._flat = flat
        self._options = options

    @property
    def kind(self) -> IndexKind:
        raise NotImplementedError

    @property
    def metric(self) -> Metric:
        return self._flat.metric

    @property
    def dim(self) -> int:
        return self._flat.dim

    @property
    def num_rows(self) -> int:
        return self._flat.num_rows

    def has_structure(self) -> bool:
        """Whether a structure was built (a tiny or empty segment has none)."""
        raise NotImplementedError

    def searches_exactly(self, num_allowed: int, topk: int, nq: int = 1) -> bool:
        """Whether ``nq`` queries with ``num_allowed`` allowed rows skip the structure for an exact search."""
        if not self.has_structure() or num_allowed <= topk:
            return True
        return num_allowed < self._options.exact_threshold(self.num_rows, nq)

    def search(
        self,
        queries: np.ndarray,
        topk: int,
        *,
        allowed: np.ndarray | None = None,
        params: SearchParams = NO_PARAMS,
        threads: int = 1,
    ) -> IndexHits:
        """See ``VectorIndex.search``; the kind's module docstring tells its strategy."""
        queries = check_queries(queries, self.dim)
        check_topk(topk)
        params.validate(self.metric)
        self._check_params(params, topk)
        mask = check_allowed(allowed, self.num_rows)
        num_allowed = self.num_rows if mask is None else int(np.count_nonzero(mask))
        if len(queries) == 0 or num_allowed == 0:
            return IndexHits.empty(len(queries), topk, self.metric)
        # Batch rule measured against the filtered walk; an unfiltered one is far cheaper.
        if self.searches_exactly(num_allowed, topk, nq=1 if mask is None else len(queries)):
            return self._flat.search(queries, topk, allowed=mask, params=params)
        return self._approximate(queries, topk, mask, num_allowed, params, threads)

    def _check_params(self, params: SearchParams, topk: int) -> None:
        """The kind's own checks of the search parameters against ``topk`` (none by default)."""

    def _approximate(
        self,
        queries: np.ndarray,
        topk: int,
        mask: np.ndarray | None,
        num_allowed: int,
        params: SearchParams,
        threads: int,
    ) -> IndexHits:
        raise NotImplementedError

    def fill_exactly(
        self,
        hits: IndexHits,
        which: np.ndarray,
        queries: np.ndarray,
        topk: int,
        mask: np.ndarray | None,
        params: SearchParams,
    ) -> None:
        """Search the queries at positions ``which`` exactly and write their hits into ``hits``."""
        if len(which) == 0:
            return
        exact = self._flat.search(queries[which], topk, allowed=mask, params=params)
        hits.rows[which] = exact.rows
        hits.distances[which] = exact.distances

    def range_by_doubling(
        self,
        queries: np.ndarray,
        topk: int,
        mask: np.ndarray | None,
        num_allowed: int,
        params: SearchParams,
        first_k: int,
        knn: Knn,
    ) -> IndexHits:
        """A range search over ``knn``: ``k`` from ``first_k``, doubled until every query is settled.

        A query is settled once ``topk`` candidates are in range or its worst
        candidate is beyond ``radius`` (every farther row is out of range too).
        The queries left when ``2 * k`` exceeds the allowed rows, or when
        ``knn`` comes up short, are searched exactly.
        """
        hits = IndexHits.empty(len(queries), topk, self.metric)
        pending = np.arange(len(queries))
        k = first_k
        while len(pending):
            found = None if 2 * k > num_allowed else knn(queries[pending], k)
            if found is None:
                self.fill_exactly(hits, pending, queries, topk, mask, params)
                break
            rows, dist = found
            keep = params.in_range(self.metric, dist) & (rows >= 0)
            settled = (keep.sum(axis=1) >= topk) | params.beyond_radius(self.metric, dist[:, -1])
            for i in np.flatnonzero(settled):
                in_range = np.flatnonzero(keep[i])[:topk]
                hits.rows[pending[i], : len(in_range)] = rows[i, in_range]
                hits.distances[pending[i], : len(in_range)] = dist[i, in_range]
            pending = pending[~settled]
            k *= 2
        return hits
