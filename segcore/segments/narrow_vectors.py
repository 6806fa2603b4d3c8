"""A FLOAT16, BFLOAT16 or INT8 vector field kept in its own width, and its distances.

The counterpart of ``vectors.VectorColumn`` for the narrow vector types
(``common/narrow_vectors.py``): one contiguous ``(rows, dim)`` matrix of
float16, bfloat16 bits (uint16) or int8 is the only copy of the vectors, and
the Arrow column (``fixed_size_binary[dim * element size]``) is a zero-copy view
of it. The squared norms are computed at insert in float32 (L2 and COSINE need
them). Searching converts the rows to float32 a chunk at a time
(``matrix_distances``); no float32 copy of the column is kept.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from common.narrow_vectors import float_chunks, numpy_type, row_sqnorms
from common.schema import DataType
from segcore.segments.buffers import GrowableArray
from segcore.segments.fixed_rows import as_arrow, rows_of
from segcore.segments.metric import Metric, distances


class NarrowVectorColumn:
    """Rows of one FLOAT16, BFLOAT16 or INT8 vector field: ``(n, dim)`` narrow elements, norms, validity."""

    __slots__ = ("_has_nulls", "_matrix", "_sqnorms", "_valid", "code_size", "dim", "dtype", "element")

    def __init__(self, dtype: DataType, dim: int) -> None:
        if dim <= 0:
            raise ValueError(f"vector dimension must be positive, got {dim}")
        self.dtype = dtype
        self.dim = dim
        self.element = numpy_type(dtype)
        self.code_size = dim * self.element.itemsize
        self._matrix = GrowableArray(self.element, width=dim)
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

    def decode(self, column: pa.FixedSizeBinaryArray) -> tuple[np.ndarray, np.ndarray]:
        """``(n, dim)`` rows (a view of the Arrow buffer when no row is null) and a validity
        mask; null rows become zeros."""
        if column.type != pa.binary(self.code_size):
            raise ValueError(f"{self.dtype.name} vectors of type {column.type}, expected {pa.binary(self.code_size)}")
        return rows_of(column, self.element, self.dim)

    def append(self, rows: np.ndarray, valid: np.ndarray) -> None:
        """Append decoded rows (see :meth:`decode`)."""
        self._matrix.append(rows)
        self._sqnorms.append(row_sqnorms(rows))
        self._valid.append(valid)
        self._has_nulls = self._has_nulls or not bool(valid.all())

    def matrix(self) -> np.ndarray:
        """All rows, ``(n, dim)`` float16 / uint16 (bfloat16 bits) / int8 (a view: do not write)."""
        return self._matrix.view()

    def sqnorms(self) -> np.ndarray:
        """Squared L2 norm per row, float32 (a view: do not write)."""
        return self._sqnorms.view()

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


def matrix_distances(metric: Metric, queries: np.ndarray, base: np.ndarray, base_sqnorms: np.ndarray) -> np.ndarray:
    """``metric.distances`` between float32 ``queries`` and ``base`` rows of any dense float type.

    float32 rows go to ``distances`` as they are; narrow rows (float16, bfloat16
    bits, int8) are converted to float32 a chunk of rows at a time, so only one
    chunk's floats exist at once besides the ``(nq, n)`` result.
    """
    if base.dtype == np.float32:
        return distances(metric, queries, base, base_sqnorms)
    out = np.empty((len(queries), len(base)), dtype=np.float32)
    for start, chunk in float_chunks(base):
        stop = start + len(chunk)
        out[:, start:stop] = distances(metric, queries, chunk, base_sqnorms[start:stop])
    return out
