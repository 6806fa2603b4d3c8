"""FLOAT16, BFLOAT16 and INT8 vectors: their element types in numpy and their float32 values.

A narrow vector field keeps each element in its own width everywhere (the wire,
Arrow, Parquet, memory): a row is ``dim`` elements of

* ``FLOAT16_VECTOR``: IEEE half floats, numpy ``<f2``;
* ``BFLOAT16_VECTOR``: bfloat16, kept as its bit pattern in numpy ``<u2`` (numpy
  has no bfloat16 type and the server takes no dependency for one): the upper
  16 bits of the float32 of the same sign, exponent and leading mantissa bits;
* ``INT8_VECTOR``: signed bytes, numpy ``i1``.

The dtype of a matrix tells its element type (``element_of``): float32 is a
``FLOAT_VECTOR``, float16, uint16 and int8 are these three (uint8 stays the
codes of a ``BINARY_VECTOR``). Computations that need floats (distances, index
builds, queries) convert rows with ``to_float32``, a chunk at a time
(``float_chunks``): the up-conversion is exact for all three types.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from common.schema import DataType

#: numpy element type of each narrow vector type (little-endian).
NUMPY_TYPES: dict[DataType, np.dtype] = {
    DataType.FLOAT16_VECTOR: np.dtype("<f2"),
    DataType.BFLOAT16_VECTOR: np.dtype("<u2"),
    DataType.INT8_VECTOR: np.dtype("i1"),
}
#: Elements converted at once (4 MiB of float32) by ``float_chunks`` and ``row_sqnorms``.
CHUNK_CELLS = 1 << 20


def numpy_type(dtype: DataType) -> np.dtype:
    """The numpy element type of a narrow vector type; ``ValueError`` for another type."""
    try:
        return NUMPY_TYPES[dtype]
    except KeyError:
        raise ValueError(f"{dtype.name} is not a FLOAT16, BFLOAT16 or INT8 vector type") from None


def is_narrow(matrix: np.ndarray) -> bool:
    """The matrix holds narrow vector elements (float16, bfloat16 bits or int8)."""
    return matrix.dtype in (np.float16, np.uint16, np.int8)


def from_bytes(raw: bytes | memoryview, dtype: DataType, dim: int) -> np.ndarray:
    """The rows packed in ``raw`` as a read-only ``(rows, dim)`` matrix of ``dtype``'s element type (no copy)."""
    element = numpy_type(dtype)
    return np.frombuffer(raw, dtype=element).reshape(-1, dim)


def to_float32(matrix: np.ndarray) -> np.ndarray:
    """A float32 copy of narrow rows (float16, bfloat16 bits as uint16, int8); float32 rows as they are."""
    if matrix.dtype == np.float32:
        return matrix
    if matrix.dtype == np.uint16:
        widened = matrix.astype(np.uint32) << np.uint32(16)
        return widened.view(np.float32)
    if matrix.dtype in (np.float16, np.int8):
        return matrix.astype(np.float32)
    raise ValueError(f"vectors of numpy type {matrix.dtype} are not float32, float16, bfloat16 bits or int8")


def from_float32(values: np.ndarray, dtype: DataType) -> np.ndarray:
    """float32 values rounded to the nearest ``dtype`` element (ties to even), as Milvus converts a
    float vector sent for a FLOAT16 or BFLOAT16 field. INT8 takes no conversion: ``ValueError``."""
    values = np.ascontiguousarray(values, dtype=np.float32)
    if dtype == DataType.FLOAT16_VECTOR:
        with np.errstate(over="ignore"):
            return values.astype("<f2")
    if dtype == DataType.BFLOAT16_VECTOR:
        bits = values.view(np.uint32)
        rounding = ((bits >> np.uint32(16)) & np.uint32(1)) + np.uint32(0x7FFF)
        rounded = ((bits + rounding) >> np.uint32(16)).astype("<u2")
        nan = np.isnan(values)
        if nan.any():  # keep a NaN a NaN (rounding could carry its mantissa into the exponent)
            rounded[nan] = ((bits[nan] >> np.uint32(16)) | np.uint32(0x0040)).astype("<u2")
        return rounded
    raise ValueError(f"{dtype.name} vectors are not converted from float32")


def float_chunks(matrix: np.ndarray, cells: int = CHUNK_CELLS) -> Iterator[tuple[int, np.ndarray]]:
    """``(first row, float32 rows)`` over ``matrix`` a chunk of about ``cells`` elements at a time.

    A float32 matrix comes back whole in one piece (no copy): only narrow rows are converted.
    """
    rows = len(matrix)
    if matrix.dtype == np.float32 or rows == 0:
        yield 0, matrix
        return
    step = max(1, cells // max(1, matrix.shape[1]))
    for start in range(0, rows, step):
        yield start, to_float32(matrix[start : start + step])


def row_sqnorms(matrix: np.ndarray) -> np.ndarray:
    """Squared L2 norm per row, float32, converting narrow rows a chunk at a time."""
    out = np.empty(len(matrix), dtype=np.float32)
    for start, chunk in float_chunks(matrix):
        out[start : start + len(chunk)] = np.einsum("ij,ij->i", chunk, chunk)
    return out
