"""BIN_FLAT: exact search over the segment's own binary codes; nothing is built or stored.

The binary counterpart of ``flat.py``. Codes are ``(rows, dim / 8)`` uint8; an
index's ``dim`` is that code size in bytes (what a query row holds), and so is
the ``dim`` its ``meta.json`` records.
"""

from __future__ import annotations

import numpy as np

from common.errors import InvalidArgument
from segcore.index.base import NO_PARAMS, IndexHits, SearchParams
from segcore.index.bin_exact import binary_exact_topk
from segcore.index.checks import check_allowed, check_topk
from segcore.index.spec import IndexKind
from segcore.segments.binary_metric import popcounts
from segcore.segments.metric import Metric


def check_codes(codes: np.ndarray) -> np.ndarray:
    """``codes`` as a C-contiguous ``(n, code_size)`` uint8 matrix (no copy when it already is one)."""
    matrix = np.asarray(codes)
    if matrix.dtype != np.uint8:
        raise ValueError(f"binary index codes must be uint8, got {matrix.dtype}")
    matrix = np.ascontiguousarray(matrix)
    if matrix.ndim != 2 or matrix.shape[1] < 1:
        raise ValueError(f"binary index codes must be a (rows, bytes) matrix, got shape {matrix.shape}")
    return matrix


def check_binary_queries(queries: np.ndarray, code_size: int) -> np.ndarray:
    """``queries`` as C-contiguous ``(nq, code_size)`` uint8; ``InvalidArgument`` otherwise."""
    matrix = np.asarray(queries)
    if matrix.dtype != np.uint8 or matrix.ndim != 2 or matrix.shape[1] != code_size:
        raise InvalidArgument(
            f"binary query vectors must be (nq, {code_size}) uint8 ({code_size * 8} bits), "
            f"got {matrix.dtype} of shape {matrix.shape}"
        )
    return np.ascontiguousarray(matrix)


def check_binary_metric(metric: Metric) -> Metric:
    if not metric.is_binary:
        raise ValueError(f"a binary index cannot use the float metric {metric.value}")
    return metric


class BinFlatIndex:
    """Brute force over ``codes`` (kept by reference); bit counts computed on the first search."""

    def __init__(self, codes: np.ndarray, metric: Metric) -> None:
        self._codes = check_codes(codes)
        self._metric = check_binary_metric(metric)
        self._counts: np.ndarray | None = None

    @property
    def kind(self) -> IndexKind:
        return IndexKind.BIN_FLAT

    @property
    def metric(self) -> Metric:
        return self._metric

    @property
    def dim(self) -> int:
        """Bytes per row (``dim / 8`` of the field)."""
        return int(self._codes.shape[1])

    @property
    def num_rows(self) -> int:
        return len(self._codes)

    def counts(self) -> np.ndarray:
        """Bits set per row (computed once)."""
        if self._counts is None:
            self._counts = popcounts(self._codes)
        return self._counts

    def search(
        self,
        queries: np.ndarray,
        topk: int,
        *,
        allowed: np.ndarray | None = None,
        params: SearchParams = NO_PARAMS,
        threads: int = 1,
    ) -> IndexHits:
        """See ``VectorIndex.search``: ``queries`` are ``(nq, dim / 8)`` uint8 codes; exact."""
        queries = check_binary_queries(queries, self.dim)
        check_topk(topk)
        params.validate(self._metric)
        mask = check_allowed(allowed, self.num_rows)
        candidates = None if mask is None else np.flatnonzero(mask)
        return binary_exact_topk(
            self._metric, self._codes, self.counts(), queries, topk, candidates=candidates, params=params
        )

    def serialize(self) -> bytes | None:
        """Nothing: a BIN_FLAT index is the codes themselves."""
        return None
