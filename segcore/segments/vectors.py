"""A float vector field kept as one contiguous float32 matrix.

The matrix is the only copy of the vectors: the Arrow view of the column
(``to_arrow``) is zero-copy over it, so a growing store does not hold every
vector twice. Squared norms are computed once at insert for L2 and COSINE.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from segcore.segments.buffers import GrowableArray


class VectorColumn:
    """Rows of one ``FLOAT_VECTOR`` field: ``(n, dim)`` float32, norms, validity."""

    __slots__ = ("_has_nulls", "_matrix", "_sqnorms", "_valid", "dim")

    def __init__(self, dim: int) -> None:
        if dim <= 0:
            raise ValueError(f"vector dimension must be positive, got {dim}")
        self.dim = dim
        self._matrix = GrowableArray(np.float32, width=dim)
        self._sqnorms = GrowableArray(np.float32)
        self._valid = GrowableArray(np.bool_)
        self._has_nulls = False

    def __len__(self) -> int:
        return len(self._matrix)

    def keep_on_disk(self, path: str) -> None:
        """Keep the rows in a file at ``path`` (mapped, read on demand) rather than in memory: a sealed
        segment's field whose index holds its own copy on disk (DISKANN). Norms and validity stay."""
        self._matrix.move_to_file(path)

    @property
    def on_disk(self) -> bool:
        return self._matrix.on_file

    @staticmethod
    def decode(column: pa.FixedSizeListArray, dim: int) -> tuple[np.ndarray, np.ndarray]:
        """``(n, dim)`` float32 rows and a validity mask; null rows become zeros."""
        n = len(column)
        start = column.offset * dim
        flat = column.values.slice(start, n * dim).to_numpy(zero_copy_only=False)
        rows = np.asarray(flat, dtype=np.float32).reshape(n, dim)
        if column.null_count == 0:
            return rows, np.ones(n, dtype=bool)
        valid = column.is_valid().to_numpy(zero_copy_only=False)
        rows = rows.copy()
        rows[~valid] = 0.0
        return rows, valid

    def append(self, rows: np.ndarray, valid: np.ndarray) -> None:
        """Append decoded rows (see :meth:`decode`)."""
        self._matrix.append(rows)
        self._sqnorms.append(np.einsum("ij,ij->i", rows, rows))
        self._valid.append(valid)
        self._has_nulls = self._has_nulls or not bool(valid.all())

    def matrix(self) -> np.ndarray:
        """All rows, ``(n, dim)`` float32 (a view: do not write)."""
        return self._matrix.view()

    def sqnorms(self) -> np.ndarray:
        """Squared L2 norm per row (a view: do not write)."""
        return self._sqnorms.view()

    def valid(self) -> np.ndarray | None:
        """Bool per row, or ``None`` when no row is null."""
        return self._valid.view() if self._has_nulls else None

    def to_arrow(self) -> pa.FixedSizeListArray:
        """The whole column as Arrow, zero-copy over the matrix."""
        return self._as_arrow(self._matrix.view(), self._valid.view())

    def take(self, rows: np.ndarray) -> pa.FixedSizeListArray:
        """Rows at ``rows`` as Arrow (a copy)."""
        return self._as_arrow(self._matrix.view()[rows], self._valid.view()[rows])

    def _as_arrow(self, matrix: np.ndarray, valid: np.ndarray) -> pa.FixedSizeListArray:
        values = pa.array(np.ascontiguousarray(matrix).reshape(-1), type=pa.float32())
        mask = None if valid.all() else pa.array(~valid)
        return pa.FixedSizeListArray.from_arrays(values, self.dim, mask=mask)
