"""FLOAT16, BFLOAT16 and INT8 vectors at the proxy edge: insert columns, results, search vectors.

What pymilvus 2.6 sends (``client/entity_helper.py``, ``prepare.py``):

* insert: ``vectors.float16_vector`` / ``bfloat16_vector`` / ``int8_vector``, the
  rows' little-endian elements one after the other (from numpy ``float16``,
  ``ml_dtypes.bfloat16`` or ``int8`` arrays, or ``bytes``), ``vectors.dim`` the
  field's dim. A FLOAT16 or BFLOAT16 row given as a float list or a float32 /
  float64 array travels as ``vectors.float_vector`` instead; like Milvus 2.6, the
  proxy rounds those to the field's type (nearest, ties to even).
* search: a ``Float16Vector`` / ``BFloat16Vector`` / ``Int8Vector`` placeholder
  (each value one query's bytes), or ``FloatVector`` for float lists (FLOAT16 and
  BFLOAT16 fields only, rounded to the field's type first, so such a query scores
  exactly as the same query sent in the field's type).
* results: the bytes back in the same slot, bit-exact.

Query vectors leave the proxy as float32 (the exact values of the narrow
elements): the query node searches float32 queries against narrow rows.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
from pymilvus.grpc_gen import common_pb2, schema_pb2

from common.errors import InvalidArgument
from common.narrow_vectors import from_bytes, from_float32, numpy_type, to_float32
from common.schema import DataType, FieldSchema
from proxy.convert.fieldtypes import check_vector_dim

#: The ``VectorField`` slot of each narrow type.
SLOTS: dict[DataType, str] = {
    DataType.FLOAT16_VECTOR: "float16_vector",
    DataType.BFLOAT16_VECTOR: "bfloat16_vector",
    DataType.INT8_VECTOR: "int8_vector",
}
#: The placeholder type of each narrow type's search vectors.
PLACEHOLDERS: dict[DataType, int] = {
    DataType.FLOAT16_VECTOR: common_pb2.PlaceholderType.Float16Vector,
    DataType.BFLOAT16_VECTOR: common_pb2.PlaceholderType.BFloat16Vector,
    DataType.INT8_VECTOR: common_pb2.PlaceholderType.Int8Vector,
}
_LABELS = {DataType.FLOAT16_VECTOR: "float16", DataType.BFLOAT16_VECTOR: "bfloat16", DataType.INT8_VECTOR: "int8"}


def empty_rows(field: FieldSchema) -> np.ndarray:
    return np.empty((0, field.dim), dtype=numpy_type(field.dtype))


def read_column(field: FieldSchema, fd: schema_pb2.FieldData) -> np.ndarray:
    """An insert column of a narrow field: ``(rows, dim)`` in the field's element type.

    Raises:
        InvalidArgument: another slot, a dim other than the field's, a length that is not
            whole rows, NaN or Inf in a FLOAT16 / BFLOAT16 row.
    """
    kind = fd.WhichOneof("field")
    if kind is None:
        return empty_rows(field)
    slot = fd.vectors.WhichOneof("data") if kind == "vectors" else kind
    expected = SLOTS[field.dtype]
    converts = field.dtype != DataType.INT8_VECTOR and slot == "float_vector"
    if kind != "vectors" or slot not in (None, expected) and not converts:
        raise InvalidArgument(
            f"type mismatch for field ({field.name}): schema type is {schema_pb2.DataType.Name(field.dtype)}, "
            f"expected {expected} in the field data but got {slot}"
        )
    if converts:
        values = np.array(fd.vectors.float_vector.data, dtype=np.float32)
        count = len(values)
    else:
        raw = getattr(fd.vectors, expected)
        count = len(raw) // numpy_type(field.dtype).itemsize
    check_vector_dim(fd, field, count)
    if converts:
        if len(values) % field.dim:
            raise _not_whole(field, f"{len(values)} floats")
        if not np.isfinite(values).all():
            raise InvalidArgument(f"{_LABELS[field.dtype]} vector field ({field.name}) contains NaN or Inf")
        rows = from_float32(values, field.dtype).reshape(-1, field.dim)
    else:
        if len(raw) % field.code_size:
            raise _not_whole(field, f"{len(raw)} bytes")
        rows = from_bytes(raw, field.dtype, field.dim)
    if field.dtype != DataType.INT8_VECTOR and not np.isfinite(to_float32(rows)).all():
        raise InvalidArgument(f"{_LABELS[field.dtype]} vector field ({field.name}) contains NaN or Inf")
    return rows


def to_arrow(field: FieldSchema, rows: np.ndarray) -> pa.FixedSizeBinaryArray:
    """The insert column as Arrow ``fixed_size_binary[code_size]`` (the rows' bytes, no nulls)."""
    codes = np.ascontiguousarray(rows, dtype=numpy_type(field.dtype))
    array = pa.FixedSizeBinaryArray.from_buffers(field.arrow_type(), len(codes), [None, pa.py_buffer(codes)])
    assert isinstance(array, pa.FixedSizeBinaryArray)
    return array


def fill_field_data(fd: schema_pb2.FieldData, field: FieldSchema, array: pa.Array) -> None:
    """Put a result column (``fixed_size_binary``) into ``fd``'s slot, byte for byte (null rows: zeros)."""
    fd.vectors.dim = field.dim
    width = field.code_size
    if len(array) == 0:
        data = b""
    else:
        codes = np.frombuffer(array.buffers()[1], np.uint8, len(array) * width, array.offset * width)
        if array.null_count:
            codes = codes.reshape(-1, width).copy()
            codes[~array.is_valid().to_numpy(zero_copy_only=False)] = 0
        data = codes.tobytes()
    setattr(fd.vectors, SLOTS[field.dtype], data)


def search_vectors(placeholder_type: int, values: Sequence[bytes], anns: FieldSchema) -> np.ndarray:
    """The ``(nq, dim)`` float32 queries of a search of the narrow field ``anns``.

    Raises:
        InvalidArgument: a placeholder type the field does not take, a query of another dim,
            NaN or Inf.
    """
    dtype = anns.dtype
    float_query = placeholder_type == common_pb2.PlaceholderType.FloatVector and dtype != DataType.INT8_VECTOR
    if placeholder_type != PLACEHOLDERS[dtype] and not float_query:
        got = common_pb2.PlaceholderType.Name(placeholder_type)
        raise InvalidArgument(
            f"search data type {got} does not match the type "
            f"{schema_pb2.DataType.Name(dtype)} of anns field ({anns.name})"
        )
    element = 4 if float_query else numpy_type(dtype).itemsize
    for value in values:
        if len(value) != anns.dim * element:
            got_dim = f"{len(value) // element}" if len(value) % element == 0 else f"{len(value)} bytes"
            raise InvalidArgument(
                f"the dim ({got_dim}) of search data is not equal to schema dim ({anns.dim}) of anns field ({anns.name})"
            )
    joined = b"".join(values)
    if float_query:
        floats = np.frombuffer(joined, dtype="<f4")
        if not np.isfinite(floats).all():
            raise InvalidArgument(f"search data of field ({anns.name}) contains NaN or Inf")
        rows = from_float32(floats, dtype).reshape(len(values), anns.dim)
    else:
        rows = from_bytes(joined, dtype, anns.dim)
    queries = np.array(to_float32(rows), dtype=np.float32, copy=True)
    if not np.isfinite(queries).all():
        raise InvalidArgument(f"search data of field ({anns.name}) contains NaN or Inf")
    return queries.reshape(len(values), anns.dim)


def _not_whole(field: FieldSchema, got: str) -> InvalidArgument:
    return InvalidArgument(
        f"the length ({got}) of {_LABELS[field.dtype]} vector data of field ({field.name}) "
        f"is not a multiple of its dim ({field.dim})"
    )
