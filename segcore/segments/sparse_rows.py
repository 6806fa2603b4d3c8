"""Sparse float vectors (``SPARSE_FLOAT_VECTOR``): rows as CSR, Milvus' packed row bytes, padded query batches.

One row is a set of ``(index, value)`` pairs: ``index`` a uint32 below
``2**32 - 1``, ``value`` a finite non-negative float32; indices are unique and
kept in ascending order. Milvus (and pymilvus) carry a row as the bytes of its
pairs, each a little-endian uint32 index followed by a little-endian float32
value (8 bytes a pair, ``PAIR``); Strata stores a column in exactly that form
(Arrow ``binary``, see ``common/schema.py``), so :meth:`SparseRows.from_arrow`
is zero-copy: the offsets divided by 8 are the CSR row pointers and the data
buffer, viewed as ``PAIR``, holds the indices and values.

Query batches travel through the search path as ordinary ``(nq, width)``
numpy arrays of ``PAIR`` (:func:`pad_queries`): each row's pairs, then
padding pairs whose index is ``PAD_INDEX`` (``2**32 - 1``, never a valid
index). Slicing, ``len`` and ``shape`` then work as for dense queries.

The ``dim`` of a batch of rows is Milvus': the largest index plus one (0 when
every row is empty).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

#: One stored pair: little-endian uint32 index, float32 value (Milvus' layout).
PAIR = np.dtype([("index", "<u4"), ("value", "<f4")])
#: Index of a padding pair in a query batch (invalid in a row: indices are below it).
PAD_INDEX = 2**32 - 1
#: Indices must be below this (Milvus: "must be less than 2^32-1").
INDEX_LIMIT = 2**32 - 1


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class SparseRows:
    """Rows in CSR form: row ``i``'s pairs are ``indices/values[indptr[i]:indptr[i+1]]``, indices ascending."""

    indptr: np.ndarray  # int64, rows + 1
    indices: np.ndarray  # uint32, nnz
    values: np.ndarray  # float32, nnz
    rows_of_pairs: np.ndarray | None = None  # int64 row of each pair when already known (a growing column's)

    def __len__(self) -> int:
        return len(self.indptr) - 1

    @property
    def nnz(self) -> int:
        return len(self.indices)

    @property
    def dim(self) -> int:
        """The largest index plus one (0 without any pair)."""
        return int(self.indices.max()) + 1 if len(self.indices) else 0

    @property
    def shape(self) -> tuple[int, int]:
        return (len(self), self.dim)

    @property
    def ndim(self) -> int:
        return 2

    def row_ids(self) -> np.ndarray:
        """The row of each pair (int64, nnz)."""
        if self.rows_of_pairs is not None:
            return self.rows_of_pairs
        return np.repeat(np.arange(len(self), dtype=np.int64), np.diff(self.indptr))

    def slice_rows(self, start: int, stop: int) -> SparseRows:
        """Rows ``start..stop-1`` (views of the pairs)."""
        lo, hi = int(self.indptr[start]), int(self.indptr[stop])
        return SparseRows(indptr=self.indptr[start : stop + 1] - lo, indices=self.indices[lo:hi], values=self.values[lo:hi])

    def row(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        lo, hi = int(self.indptr[i]), int(self.indptr[i + 1])
        return self.indices[lo:hi], self.values[lo:hi]

    def take(self, rows: np.ndarray) -> SparseRows:
        """The rows at ``rows`` (a copy)."""
        rows = np.asarray(rows, dtype=np.int64)
        starts, ends = self.indptr[rows], self.indptr[rows + 1]
        lengths = ends - starts
        indptr = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(lengths, out=indptr[1:])
        picks = np.repeat(starts - indptr[:-1], lengths) + np.arange(indptr[-1], dtype=np.int64)
        return SparseRows(indptr=indptr, indices=self.indices[picks], values=self.values[picks])

    def pairs(self) -> np.ndarray:
        """All pairs as one ``PAIR`` array (a copy)."""
        out = np.empty(self.nnz, dtype=PAIR)
        out["index"] = self.indices
        out["value"] = self.values
        return out

    def to_arrow(self, valid: np.ndarray | None = None) -> pa.BinaryArray:
        """The rows as Arrow ``binary`` (each value the row's packed pairs); ``valid`` False = null."""
        offsets = pa.py_buffer((self.indptr * PAIR.itemsize).astype(np.int32))
        data = pa.py_buffer(self.pairs().tobytes())
        mask = None if valid is None or valid.all() else pa.array(valid, pa.bool_()).buffers()[1]
        nulls = 0 if mask is None or valid is None else int(len(valid) - np.count_nonzero(valid))
        array = pa.Array.from_buffers(pa.binary(), len(self), [mask, offsets, data], null_count=nulls)
        assert isinstance(array, pa.BinaryArray)
        return array

    @staticmethod
    def empty() -> SparseRows:
        return SparseRows(
            indptr=np.zeros(1, dtype=np.int64), indices=np.empty(0, np.uint32), values=np.empty(0, np.float32)
        )

    @staticmethod
    def from_arrow(column: pa.Array) -> tuple[SparseRows, np.ndarray]:
        """Rows of an Arrow ``binary`` / ``large_binary`` column of packed pairs, and a validity mask
        (null rows are empty). Raises ``ValueError`` for a row that is not whole pairs."""
        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks()
        if column.type not in (pa.binary(), pa.large_binary()):
            raise ValueError(f"sparse vectors of type {column.type}, expected binary")
        n = len(column)
        if n == 0:
            return SparseRows.empty(), np.ones(0, dtype=bool)
        buffers = column.buffers()
        offset_type = np.int64 if column.type == pa.large_binary() else np.int32
        offsets = np.frombuffer(buffers[1], dtype=offset_type, count=n + 1, offset=column.offset * np.dtype(offset_type).itemsize)
        offsets = offsets.astype(np.int64)
        valid = np.ones(n, dtype=bool) if column.null_count == 0 else column.is_valid().to_numpy(zero_copy_only=False)
        lengths = np.diff(offsets)
        if not valid.all():
            lengths = np.where(valid, lengths, 0)
        if np.any(lengths % PAIR.itemsize):
            bad = int(np.flatnonzero(lengths % PAIR.itemsize)[0])
            raise ValueError(f"sparse row {bad} has {int(lengths[bad])} bytes, not a whole number of 8-byte pairs")
        base = int(offsets[0])
        data = buffers[2]
        raw = np.frombuffer(data, dtype=np.uint8, count=int(offsets[-1]) - base, offset=base) if data is not None else np.empty(0, np.uint8)
        if valid.all():
            pairs = raw.view(PAIR) if len(raw) else np.empty(0, PAIR)
            indptr = (offsets - base) // PAIR.itemsize
        else:
            starts: np.ndarray = ((offsets[:-1] - base) // PAIR.itemsize).astype(np.int64)
            indptr = np.zeros(n + 1, dtype=np.int64)
            np.cumsum(lengths // PAIR.itemsize, out=indptr[1:])
            picks = np.repeat(starts - indptr[:-1], np.diff(indptr)) + np.arange(indptr[-1], dtype=np.int64)
            pairs = (raw.view(PAIR) if len(raw) else np.empty(0, PAIR))[picks]
        return SparseRows(indptr=indptr, indices=pairs["index"], values=pairs["value"]), valid


def check_rows(rows: SparseRows) -> str | None:
    """What is wrong with ``rows`` (Milvus' message), or None: indices below ``2**32 - 1``, ascending
    and unique within a row, values finite and not negative."""
    if rows.nnz == 0:
        return None
    if np.any(rows.indices >= INDEX_LIMIT):
        return "invalid index in sparse float vector: must be less than 2^32-1"
    row_start = np.zeros(rows.nnz, dtype=bool)
    row_start[rows.indptr[:-1][np.diff(rows.indptr) > 0]] = True
    steps = np.diff(rows.indices.astype(np.int64))
    if np.any((steps <= 0) & ~row_start[1:]):
        return "unsorted or same indices in sparse float vector"
    if not np.isfinite(rows.values).all():
        return "invalid value in sparse float vector: value contains nan or +/-inf"
    if np.any(rows.values < 0):
        return "invalid value in sparse float vector: negative value"
    return None


def canonical_row(indices: Sequence[int] | np.ndarray, values: Sequence[float] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One row's pairs sorted by index (stable: duplicates stay and are refused by :func:`check_rows`).

    Raises ``ValueError`` for an index that is not a uint32 or lengths that differ."""
    idx = np.asarray(indices)
    val = np.asarray(values, dtype=np.float64)
    if idx.shape != val.shape or idx.ndim != 1:
        raise ValueError(f"a sparse row needs as many indices as values, got {idx.shape} and {val.shape}")
    if len(idx) and (idx.dtype.kind not in "iu" or idx.min() < 0 or idx.max() >= INDEX_LIMIT):
        raise ValueError("invalid index in sparse float vector: must be less than 2^32-1")
    order = np.argsort(idx, kind="stable")
    return idx[order].astype(np.uint32), val[order].astype(np.float32)


def rows_from_pairs(rows: Sequence[tuple[np.ndarray, np.ndarray]]) -> SparseRows:
    """CSR of rows given as ``(indices, values)`` each (already canonical)."""
    indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum([len(i) for i, _ in rows], out=indptr[1:])
    if not rows:
        return SparseRows.empty()
    indices = np.concatenate([np.asarray(i, dtype=np.uint32) for i, _ in rows])
    values = np.concatenate([np.asarray(v, dtype=np.float32) for _, v in rows])
    return SparseRows(indptr=indptr, indices=indices, values=values)


def rows_from_bytes(contents: Sequence[bytes]) -> SparseRows:
    """CSR of rows given as Milvus' packed bytes each; ``ValueError`` when one is not whole pairs.
    Pairs are sorted by index within each row (Milvus sorts them too)."""
    lengths = np.fromiter((len(c) for c in contents), dtype=np.int64, count=len(contents))
    if np.any(lengths % PAIR.itemsize):
        bad = int(lengths[np.flatnonzero(lengths % PAIR.itemsize)[0]])
        raise ValueError(f"invalid data length in sparse float vector: {bad}")
    pairs = np.frombuffer(b"".join(contents), dtype=PAIR)
    indptr = np.zeros(len(contents) + 1, dtype=np.int64)
    np.cumsum(lengths // PAIR.itemsize, out=indptr[1:])
    rows = SparseRows(indptr=indptr, indices=pairs["index"].copy(), values=pairs["value"].copy())
    return sort_rows(rows)


def sort_rows(rows: SparseRows) -> SparseRows:
    """``rows`` with each row's pairs in ascending index order (stable; no copy when already sorted)."""
    if rows.nnz < 2:
        return rows
    row_of = rows.row_ids()
    steps = np.diff(rows.indices.astype(np.int64))
    if not np.any((steps < 0) & (row_of[1:] == row_of[:-1])):
        return rows
    order = np.lexsort((rows.indices, row_of))
    return SparseRows(indptr=rows.indptr, indices=rows.indices[order], values=rows.values[order])


def row_bytes(rows: SparseRows) -> list[bytes]:
    """Each row as Milvus' packed bytes."""
    pairs = rows.pairs().tobytes()
    step = PAIR.itemsize
    return [pairs[int(a) * step : int(b) * step] for a, b in zip(rows.indptr[:-1], rows.indptr[1:], strict=True)]


def pad_queries(rows: SparseRows) -> np.ndarray:
    """``(nq, width)`` ``PAIR`` array: each row's pairs, then pads (index ``PAD_INDEX``, value 0)."""
    lengths = np.diff(rows.indptr)
    width = max(1, int(lengths.max()) if len(lengths) else 1)
    out = np.zeros((len(rows), width), dtype=PAIR)
    out["index"] = PAD_INDEX
    if rows.nnz:
        row_of = rows.row_ids()
        col = np.arange(rows.nnz, dtype=np.int64) - rows.indptr[row_of]
        out["index"][row_of, col] = rows.indices
        out["value"][row_of, col] = rows.values
    return out


def unpad_queries(queries: np.ndarray) -> SparseRows:
    """The rows of a :func:`pad_queries` batch; ``ValueError`` unless ``queries`` is a 2-D ``PAIR`` array."""
    if not isinstance(queries, np.ndarray) or queries.dtype != PAIR or queries.ndim != 2:
        raise ValueError(f"sparse queries must be a (nq, width) array of index/value pairs, got {getattr(queries, 'dtype', type(queries))}")
    keep = queries["index"] != PAD_INDEX
    indptr = np.zeros(len(queries) + 1, dtype=np.int64)
    np.cumsum(keep.sum(axis=1), out=indptr[1:])
    return SparseRows(indptr=indptr, indices=queries["index"][keep], values=queries["value"][keep])


def queries_to_bytes(queries: np.ndarray) -> bytes:
    """A padded query batch on the wire (``querynode.proto``): uint32 width, then the pairs row after row."""
    width = queries.shape[1] if queries.ndim == 2 else 0
    return np.uint32(width).tobytes() + np.ascontiguousarray(queries, dtype=PAIR).tobytes()


def queries_from_bytes(raw: bytes) -> np.ndarray:
    """The inverse of :func:`queries_to_bytes`; ``ValueError`` for a malformed payload."""
    if len(raw) < 4:
        raise ValueError("sparse search vectors lack their width")
    width = int(np.frombuffer(raw, dtype="<u4", count=1)[0])
    body = len(raw) - 4
    if width < 1 or body % (width * PAIR.itemsize):
        raise ValueError(f"sparse search vectors of {body} bytes are not rows of {width} pairs")
    return np.frombuffer(raw, dtype=PAIR, offset=4).reshape(-1, width).copy()


def drop_smallest(rows: SparseRows, ratio: float) -> SparseRows:
    """Each row without its ``floor(ratio * nnz)`` smallest values (knowhere's ``drop_ratio_search``)."""
    if ratio <= 0 or rows.nnz == 0:
        return rows
    keep = np.ones(rows.nnz, dtype=bool)
    for i in range(len(rows)):
        lo, hi = int(rows.indptr[i]), int(rows.indptr[i + 1])
        cut = int(ratio * (hi - lo))
        if cut:
            order = np.argsort(rows.values[lo:hi], kind="stable")
            keep[lo + order[:cut]] = False
    kept = np.concatenate([[0], np.cumsum(keep, dtype=np.int64)])
    indptr = kept[rows.indptr]
    return SparseRows(indptr=indptr, indices=rows.indices[keep], values=rows.values[keep])
