"""FLAT: exact search over the segment's own matrix; nothing is built or stored.

The matrix is float32, or the narrow rows of a FLOAT16, BFLOAT16 or INT8 field
(searched a chunk of rows at a time in float32: ``exact.py``).
"""

from __future__ import annotations

import numpy as np

from common.narrow_vectors import row_sqnorms
from segcore.index.base import NO_PARAMS, IndexHits, SearchParams
from segcore.index.checks import check_allowed, check_dense_vectors, check_queries, check_topk
from segcore.index.exact import exact_topk
from segcore.index.spec import IndexKind
from segcore.segments.metric import Metric


class FlatIndex:
    """Brute force over ``vectors`` (kept by reference, not copied when already float32 or narrow).

    The squared norms are computed on the first search that needs them
    (L2, COSINE), so wrapping a matrix for one search costs nothing up front.
    """

    def __init__(self, vectors: np.ndarray, metric: Metric) -> None:
        self._vectors = check_dense_vectors(vectors)
        self._metric = metric
        self._sqnorms: np.ndarray | None = None

    @property
    def kind(self) -> IndexKind:
        return IndexKind.FLAT

    @property
    def metric(self) -> Metric:
        return self._metric

    @property
    def dim(self) -> int:
        return int(self._vectors.shape[1])

    @property
    def num_rows(self) -> int:
        return len(self._vectors)

    @property
    def vectors(self) -> np.ndarray:
        """The ``(rows, dim)`` matrix searched, float32 or narrow (do not modify)."""
        return self._vectors

    def search(
        self,
        queries: np.ndarray,
        topk: int,
        *,
        allowed: np.ndarray | None = None,
        params: SearchParams = NO_PARAMS,
        threads: int = 1,
    ) -> IndexHits:
        """See ``VectorIndex.search``; exact, so ``ef`` and ``threads`` are ignored."""
        queries = check_queries(queries, self.dim)
        check_topk(topk)
        params.validate(self._metric)
        mask = check_allowed(allowed, self.num_rows)
        candidates = None if mask is None else np.flatnonzero(mask)
        return exact_topk(
            self._metric, self._vectors, self.sqnorms(), queries, topk, candidates=candidates, params=params
        )

    def serialize(self) -> bytes | None:
        """Nothing: a FLAT index is the vectors themselves."""
        return None

    def sqnorms(self) -> np.ndarray:
        """Squared L2 norm per row (computed once; zeros are never used for IP)."""
        if self._sqnorms is None:
            if self._metric is Metric.IP:
                return np.zeros(self.num_rows, dtype=np.float32)
            self._sqnorms = row_sqnorms(self._vectors)
        return self._sqnorms
