"""The values one insert ``FieldData`` carries for its schema field, read and type-checked.

Numbers and vectors become numpy arrays (2-D for vectors), VARCHAR, JSON and ARRAY a list with
None where a row is null; a column whose slot does not match the field's type is refused naming
both. ``rows.py`` turns them into Arrow columns.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeAlias

import numpy as np
from pymilvus.grpc_gen import schema_pb2

from common.errors import InvalidArgument
from common.schema import DataType, FieldSchema
from proxy.convert import narrow
from proxy.convert.fieldtypes import LIST_TYPES, NUMPY_TYPES, SCALAR_SLOTS, check_vector_dim, slot_name
from proxy.convert.schema import type_name
from proxy.convert.sparse import read_sparse_column

# A column as read from FieldData: a numpy array (2-D for vectors) or, for
# VARCHAR/JSON, a list of str (for ARRAY, a list of lists) with None where a
# row is null.
Values: TypeAlias = np.ndarray | list[Any]


def _mismatch(field: FieldSchema, got: str | None) -> InvalidArgument:
    expected = slot_name(field.dtype)
    return InvalidArgument(
        f"type mismatch for field ({field.name}): schema type is {type_name(field.dtype)}, "
        f"expected {expected} in the field data but got {got}"
    )


def empty_values(field: FieldSchema) -> Values:
    if field.dtype == DataType.FLOAT_VECTOR:
        return np.empty((0, field.dim), dtype=np.float32)
    if field.dtype == DataType.BINARY_VECTOR:
        return np.empty((0, field.code_size), dtype=np.uint8)
    if field.dtype.is_narrow_vector:
        return narrow.empty_rows(field)
    if field.dtype in LIST_TYPES:
        return []
    return np.empty(0, dtype=NUMPY_TYPES[field.dtype])


def read_values(field: FieldSchema, fd: schema_pb2.FieldData) -> Values:
    """The values ``fd`` carries for ``field``, type-checked."""
    kind = fd.WhichOneof("field")
    if field.dtype == DataType.FLOAT_VECTOR:
        if kind is None:
            return empty_values(field)
        slot = fd.vectors.WhichOneof("data") if kind == "vectors" else kind
        if kind != "vectors" or slot not in (None, "float_vector"):
            raise _mismatch(field, slot)
        flat = np.array(fd.vectors.float_vector.data, dtype=np.float32)
        check_vector_dim(fd, field, len(flat))
        if len(flat) % field.dim != 0:
            raise InvalidArgument(
                f"the length ({len(flat)}) of float vector data of field ({field.name}) "
                f"is not a multiple of its dim ({field.dim})"
            )
        if not np.isfinite(flat).all():
            raise InvalidArgument(f"float vector field ({field.name}) contains NaN or Inf")
        return flat.reshape(-1, field.dim)
    if field.dtype == DataType.BINARY_VECTOR:
        return _read_binary(field, fd)
    if field.dtype == DataType.SPARSE_FLOAT_VECTOR:
        rows = read_sparse_column(field, fd)
        if rows is None:
            raise _mismatch(field, fd.vectors.WhichOneof("data") if kind == "vectors" else kind)
        return rows
    if field.dtype.is_narrow_vector:
        return narrow.read_column(field, fd)

    if field.dtype == DataType.ARRAY:
        return _read_arrays(field, fd)
    if kind is None:
        return empty_values(field)
    slot = fd.scalars.WhichOneof("data") if kind == "scalars" else kind
    if kind != "scalars" or (slot is not None and slot != SCALAR_SLOTS[field.dtype]):
        raise _mismatch(field, slot)
    if slot is None:
        return empty_values(field)
    data = getattr(fd.scalars, slot).data
    if field.dtype == DataType.VARCHAR:
        return list(data)
    if field.dtype == DataType.JSON:
        return _decode_text(field, data)
    return _numbers(field, field.dtype, data)


def _read_binary(field: FieldSchema, fd: schema_pb2.FieldData) -> np.ndarray:
    """A binary vector column: ``(rows, dim / 8)`` uint8 codes."""
    kind = fd.WhichOneof("field")
    if kind is None:
        return np.empty((0, field.code_size), dtype=np.uint8)
    slot = fd.vectors.WhichOneof("data") if kind == "vectors" else kind
    if kind != "vectors" or slot not in (None, "binary_vector"):
        raise _mismatch(field, slot)
    raw = fd.vectors.binary_vector
    check_vector_dim(fd, field, len(raw))
    if len(raw) % field.code_size != 0:
        raise InvalidArgument(
            f"the length ({len(raw)}) of binary vector data of field ({field.name}) "
            f"is not a multiple of its dim / 8 ({field.code_size} bytes per vector)"
        )
    return np.frombuffer(raw, dtype=np.uint8).reshape(-1, field.code_size)


def _numbers(field: FieldSchema, dtype: DataType, data: Sequence[Any]) -> np.ndarray:
    """Fixed-width values of type ``dtype`` as numpy, range- and NaN-checked."""
    if dtype in (DataType.INT8, DataType.INT16):
        wide = np.array(data, dtype=np.int64)
        info = np.iinfo(np.dtype(NUMPY_TYPES[dtype]))
        bad = (wide < info.min) | (wide > info.max)
        if bad.any():
            raise InvalidArgument(
                f"the value {int(wide[bad][0])} of field ({field.name}) is out of range "
                f"of {type_name(dtype)} [{info.min}, {info.max}]"
            )
        return wide.astype(NUMPY_TYPES[dtype])
    values = np.array(data, dtype=NUMPY_TYPES[dtype])
    if dtype.is_floating and not np.isfinite(values).all():
        raise InvalidArgument(f"float field ({field.name}) contains NaN or Inf")
    return values


def _read_arrays(field: FieldSchema, fd: schema_pb2.FieldData) -> list[Any]:
    """Each array cell of ``fd`` as a list of Python values, element types checked.

    Capacity and element length are checked later, on the Arrow column, where
    row numbers are known (``fd`` may hold only the valid rows).
    """
    kind = fd.WhichOneof("field")
    slot = fd.scalars.WhichOneof("data") if kind == "scalars" else kind
    if slot is None:
        return []
    if slot != SCALAR_SLOTS[DataType.ARRAY]:
        raise _mismatch(field, slot)
    arrays = fd.scalars.array_data
    element = field.element_type
    if arrays.element_type not in (DataType.NONE, element):
        raise InvalidArgument(
            f"element type mismatch for array field ({field.name}): schema element type is "
            f"{type_name(element)}, but the data is marked {type_name(arrays.element_type)}"
        )
    expected = SCALAR_SLOTS[element]
    cells: list[Any] = []
    for i, cell in enumerate(arrays.data):
        got = cell.WhichOneof("data")
        if got is None:
            cells.append([])
            continue
        if got != expected:
            raise InvalidArgument(
                f"type mismatch for array field ({field.name}): element type is "
                f"{type_name(element)}, expected {expected} in array {i} but got {got}"
            )
        cells.append(list(getattr(cell, got).data))
    if element in NUMPY_TYPES:
        _numbers(field, element, [v for cell in cells for v in cell])
    return cells


def _decode_text(field: FieldSchema, data: Sequence[bytes]) -> list[Any]:
    try:
        return [raw.decode("utf-8") for raw in data]
    except UnicodeDecodeError:
        raise InvalidArgument(f"field ({field.name}) holds a value that is not UTF-8") from None
