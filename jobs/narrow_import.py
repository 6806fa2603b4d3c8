"""FLOAT16, BFLOAT16 and INT8 vector columns of import files, as Milvus 2.6's import takes them.

Accepted per row (``conform.py`` calls ``narrow_column``):

* the row's raw little-endian bytes: a binary / fixed-size binary value of
  ``dim * 2`` bytes (FLOAT16, BFLOAT16) or ``dim`` bytes (INT8), or a list of that
  many byte values in [0, 255] (pymilvus' bulk writer: Parquet ``list<uint8>``,
  a JSON array, a ``(rows, dim * 2)`` uint8 ``.npy``) - FLOAT16 and BFLOAT16 only,
  as an INT8 row of ``dim`` values is read as the values themselves;
* the row's ``dim`` values: numbers rounded to the field's type (nearest, ties
  to even) for FLOAT16 and BFLOAT16 (Parquet ``list<float>``, a JSON array, a
  ``(rows, dim)`` float16 / float32 / float64 ``.npy``), integers in [-128, 127]
  for INT8 (Parquet ``list<int8>``, a JSON array, a ``(rows, dim)`` int8 ``.npy``).

NaN and Inf are refused in FLOAT16 and BFLOAT16 rows, as at insert.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from common.errors import InvalidArgument
from common.narrow_vectors import from_float32, to_float32
from common.schema import DataType, FieldSchema


def narrow_type_fits(t: pa.DataType) -> bool:
    """An Arrow column type a narrow vector field can be imported from."""
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return True
    return (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)) and (
        pa.types.is_integer(t.value_type) or pa.types.is_floating(t.value_type)
    )


def npy_fits(f: FieldSchema, dtype: np.dtype, width: int) -> bool:
    """A ``(rows, width)`` ``.npy`` of ``dtype`` holds the narrow field ``f``'s rows."""
    if f.dtype == DataType.INT8_VECTOR:
        return dtype == np.int8 and width == f.dim
    if dtype == np.uint8:
        return width == f.code_size
    return dtype.kind == "f" and width == f.dim


def narrow_column(f: FieldSchema, column: pa.Array) -> pa.FixedSizeBinaryArray:
    """The column as the field's ``fixed_size_binary`` rows; ``InvalidArgument`` naming the row otherwise."""
    if column.null_count:
        row = int(np.flatnonzero(~np.asarray(column.is_valid().to_numpy(zero_copy_only=False)))[0])
        raise InvalidArgument(f"null vector at row {row}")
    t = column.type
    if pa.types.is_fixed_size_binary(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t):
        lengths = np.asarray(pc.binary_length(column).to_numpy(zero_copy_only=False))
        _check_lengths(f, lengths, (f.code_size,), "bytes")
        array = column.cast(f.arrow_type())
    else:
        array = _from_lists(f, column)
    assert isinstance(array, pa.FixedSizeBinaryArray)
    _check_finite(f, array)
    return array


def _from_lists(f: FieldSchema, column: pa.Array) -> pa.Array:
    t = column.type
    if pa.types.is_fixed_size_list(t):
        lengths = np.full(len(column), t.list_size)
    else:
        lengths = np.asarray(pc.list_value_length(column).to_numpy(zero_copy_only=False))
    as_bytes = f.dtype != DataType.INT8_VECTOR and len(lengths) > 0 and bool((lengths == f.code_size).all())
    if not as_bytes:
        _check_lengths(f, lengths, (f.dim,), "values")
    values = np.asarray(pc.list_flatten(column).to_numpy(zero_copy_only=False))
    if as_bytes:
        codes = _integers(values, 0, 255, f.code_size, "a byte value outside [0, 255]").astype(np.uint8)
    elif f.dtype == DataType.INT8_VECTOR:
        codes = _integers(values, -128, 127, f.dim, "a value outside [-128, 127]").astype(np.int8)
    else:
        floats = np.asarray(values, dtype=np.float64)
        if not np.isfinite(floats).all():
            raise InvalidArgument(f"NaN or Inf in the vector at row {int(np.flatnonzero(~np.isfinite(floats))[0]) // f.dim}")
        codes = from_float32(floats.astype(np.float32), f.dtype)
    return pa.FixedSizeBinaryArray.from_buffers(f.arrow_type(), len(column), [None, pa.py_buffer(codes)])


def _integers(values: np.ndarray, low: int, high: int, width: int, what: str) -> np.ndarray:
    numbers = np.asarray(values, dtype=np.float64)
    bad = (numbers < low) | (numbers > high) | (numbers != np.round(numbers))
    if bad.any():
        raise InvalidArgument(f"the vector at row {int(np.argmax(bad)) // width} holds {what}")
    return numbers


def _check_lengths(f: FieldSchema, lengths: np.ndarray, allowed: tuple[int, ...], unit: str) -> None:
    bad = ~np.isin(lengths, allowed)
    if bad.any():
        row = int(np.argmax(bad))
        wants = " or ".join(str(n) for n in allowed)
        if unit == "values" and f.dtype != DataType.INT8_VECTOR:
            wants += f" values, or every row {f.code_size} byte"
        raise InvalidArgument(
            f"{f.dtype.name} vector at row {row} has {int(lengths[row])} {unit}, the field (dim {f.dim}) needs {wants}"
        )


def _check_finite(f: FieldSchema, array: pa.FixedSizeBinaryArray) -> None:
    if f.dtype == DataType.INT8_VECTOR or len(array) == 0:
        return
    width = f.code_size
    raw = np.frombuffer(array.buffers()[1], np.uint8, len(array) * width, array.offset * width)
    dtype = np.dtype("<f2") if f.dtype == DataType.FLOAT16_VECTOR else np.dtype("<u2")
    floats = to_float32(raw.view(dtype).reshape(len(array), f.dim))
    finite = np.isfinite(floats).all(axis=1)
    if not finite.all():
        raise InvalidArgument(f"NaN or Inf in the vector at row {int(np.argmax(~finite))}")
