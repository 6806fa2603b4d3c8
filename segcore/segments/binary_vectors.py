"""A binary vector field kept as one contiguous ``(rows, dim / 8)`` uint8 matrix.

The counterpart of ``vectors.VectorColumn`` for ``BINARY_VECTOR``: the matrix
is the only copy of the codes and the Arrow column (``fixed_size_binary[dim /
8]``, see ``common/schema.py``) is a zero-copy view of it. The bits set per
row (``popcounts``) are counted once at insert: JACCARD and the structure
metrics need them for every search.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from segcore.segments.binary_metric import popcounts
from segcore.segments.buffers import GrowableArray
from segcore.segments.fixed_rows import as_arrow, rows_of


class BinaryVectorColumn:
    """Rows of one ``BINARY_VECTOR`` field: ``(n, code_size)`` uint8, bit counts, validity."""

    __slots__ = ("_counts", "_has_nulls", "_matrix", "_valid", "code_size", "dim")

    def __init__(self, dim: int) -> None:
        if dim <= 0 or dim % 8:
            raise ValueError(f"binary vector dimension must be a positive multiple of 8, got {dim}")
        self.dim = dim
        self.code_size = dim // 8
        self._matrix = GrowableArray(np.uint8, width=self.code_size)
        self._counts = GrowableArray(np.int32)
        self._valid = GrowableArray(np.bool_)
        self._has_nulls = False

    def __len__(self) -> int:
        return len(self._matrix)

    @staticmethod
    def decode(column: pa.FixedSizeBinaryArray, code_size: int) -> tuple[np.ndarray, np.ndarray]:
        """``(n, code_size)`` uint8 rows and a validity mask; null rows become zeros."""
        if column.type != pa.binary(code_size):
            raise ValueError(f"binary vectors of type {column.type}, expected {pa.binary(code_size)}")
        return rows_of(column, np.dtype(np.uint8), code_size)

    def append(self, rows: np.ndarray, valid: np.ndarray) -> None:
        """Append decoded rows (see :meth:`decode`)."""
        self._matrix.append(rows)
        self._counts.append(popcounts(rows))
        self._valid.append(valid)
        self._has_nulls = self._has_nulls or not bool(valid.all())

    def matrix(self) -> np.ndarray:
        """All rows, ``(n, code_size)`` uint8 (a view: do not write)."""
        return self._matrix.view()

    def popcounts(self) -> np.ndarray:
        """Bits set per row, int32 (a view: do not write)."""
        return self._counts.view()

    def valid(self) -> np.ndarray | None:
        """Bool per row, or ``None`` when no row is null."""
        return self._valid.view() if self._has_nulls else None

    def to_arrow(self) -> pa.FixedSizeBinaryArray:
        """The whole column as Arrow, zero-copy over the matrix."""
        return self._as_arrow(self._matrix.view(), self._valid.view())

    def take(self, rows: np.ndarray) -> pa.FixedSizeBinaryArray:
        """Rows at ``rows`` as Arrow (a copy)."""
        return self._as_arrow(self._matrix.view()[rows], self._valid.view()[rows])

    def _as_arrow(self, matrix: np.ndarray, valid: np.ndarray) -> pa.FixedSizeBinaryArray:
        return as_arrow(matrix, valid, self.code_size)
