"""Argument checks shared by the index kinds (shapes, dtypes, ``topk``)."""

from __future__ import annotations

import numpy as np

from common.errors import InvalidArgument
from common.narrow_vectors import is_narrow


def check_vectors(vectors: np.ndarray) -> np.ndarray:
    """``vectors`` as a C-contiguous ``(n, dim)`` float32 matrix (no copy when it already is one)."""
    matrix = np.ascontiguousarray(vectors, dtype=np.float32)
    if matrix.ndim != 2 or matrix.shape[1] < 1:
        raise ValueError(f"index vectors must be a (rows, dim) matrix with dim >= 1, got shape {matrix.shape}")
    return matrix


def check_dense_vectors(vectors: np.ndarray) -> np.ndarray:
    """Like ``check_vectors``, but narrow rows (float16, bfloat16 bits as uint16, int8:
    ``common/narrow_vectors.py``) stay in their own type (C-contiguous, no copy when already)."""
    if isinstance(vectors, np.ndarray) and is_narrow(vectors):
        matrix = np.ascontiguousarray(vectors)
        if matrix.ndim != 2 or matrix.shape[1] < 1:
            raise ValueError(f"index vectors must be a (rows, dim) matrix with dim >= 1, got shape {matrix.shape}")
        return matrix
    return check_vectors(vectors)


def check_queries(queries: np.ndarray, dim: int) -> np.ndarray:
    """``queries`` as C-contiguous ``(nq, dim)`` float32; ``InvalidArgument`` on another dimension."""
    matrix = np.ascontiguousarray(queries, dtype=np.float32)
    if matrix.ndim != 2 or matrix.shape[1] != dim:
        raise InvalidArgument(f"query vectors must have dimension {dim}, got shape {matrix.shape}")
    return matrix


def check_topk(topk: int) -> None:
    if isinstance(topk, bool) or not isinstance(topk, int | np.integer) or topk < 1:
        raise InvalidArgument(f"topk must be a positive integer, got {topk!r}")


def check_allowed(allowed: np.ndarray | None, num_rows: int) -> np.ndarray | None:
    """The allowed-rows bitset as a contiguous bool array, or ``None`` when every row is allowed."""
    if allowed is None:
        return None
    mask = np.ascontiguousarray(allowed, dtype=np.bool_)
    if mask.shape != (num_rows,):
        raise ValueError(f"allowed must hold one bool per row ({num_rows}), got shape {mask.shape}")
    return None if mask.all() else mask
