"""A sparse float vector field kept as one growing CSR matrix (``sparse_rows.SparseRows``).

The counterpart of ``vectors.VectorColumn`` for ``SPARSE_FLOAT_VECTOR``: the
pairs of every row are appended to two growing arrays (indices, values) with
the row pointers and each pair's row beside them, so an exact search scores
every stored row straight from these arrays (``sparse_metric``) without
rebuilding anything per query; a sealed segment's inverted index is built from
the same CSR (``segcore/index/sparse_inverted.py``).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from segcore.segments.buffers import GrowableArray
from segcore.segments.sparse_rows import SparseRows


class SparseVectorColumn:
    """Rows of one ``SPARSE_FLOAT_VECTOR`` field: CSR pairs, each pair's row, validity."""

    __slots__ = ("_has_nulls", "_indices", "_indptr", "_row_of", "_valid", "_values")

    def __init__(self) -> None:
        self._indptr = GrowableArray(np.int64)
        self._indptr.append(np.zeros(1, dtype=np.int64))
        self._indices = GrowableArray(np.uint32)
        self._values = GrowableArray(np.float32)
        self._row_of = GrowableArray(np.int64)
        self._valid = GrowableArray(np.bool_)
        self._has_nulls = False

    def __len__(self) -> int:
        return len(self._valid)

    @staticmethod
    def decode(column: pa.Array) -> tuple[SparseRows, np.ndarray]:
        """Rows (null rows empty) and a validity mask of an Arrow ``binary`` column of packed pairs."""
        return SparseRows.from_arrow(column)

    def append(self, rows: SparseRows, valid: np.ndarray) -> None:
        """Append decoded rows (see :meth:`decode`)."""
        start_row, start_pair = len(self), len(self._indices)
        self._indptr.append(rows.indptr[1:] + start_pair)
        self._indices.append(rows.indices)
        self._values.append(rows.values)
        self._row_of.append(rows.row_ids() + start_row)
        self._valid.append(valid)
        self._has_nulls = self._has_nulls or not bool(valid.all())

    def matrix(self) -> SparseRows:
        """All rows (views: do not write)."""
        return SparseRows(
            indptr=self._indptr.view(),
            indices=self._indices.view(),
            values=self._values.view(),
            rows_of_pairs=self._row_of.view(),
        )

    def row_of(self) -> np.ndarray:
        """The row of each stored pair (a view: do not write)."""
        return self._row_of.view()

    def valid(self) -> np.ndarray | None:
        """Bool per row, or ``None`` when no row is null."""
        return self._valid.view() if self._has_nulls else None

    def to_arrow(self) -> pa.BinaryArray:
        """The whole column as Arrow ``binary`` (a copy of the pairs)."""
        return self.matrix().to_arrow(self._valid.view())

    def take(self, rows: np.ndarray) -> pa.BinaryArray:
        """Rows at ``rows`` as Arrow (a copy)."""
        return self.matrix().take(rows).to_arrow(self._valid.view()[rows])
