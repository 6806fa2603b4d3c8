"""Where each supported data type travels in ``FieldData`` and in numpy.

Shared by the insert edge (``rows``) and the result edge (``output``).
"""

from __future__ import annotations

import numpy as np
from pymilvus.grpc_gen import schema_pb2

from common.errors import InvalidArgument
from common.schema import DataType, FieldSchema

#: The ``ScalarField`` oneof slot that carries each scalar type. An ``ARRAY``
#: column travels in ``array_data``: one ``ScalarField`` per row, each in the
#: slot of the element type.
SCALAR_SLOTS: dict[DataType, str] = {
    DataType.BOOL: "bool_data",
    DataType.INT8: "int_data",
    DataType.INT16: "int_data",
    DataType.INT32: "int_data",
    DataType.INT64: "long_data",
    DataType.FLOAT: "float_data",
    DataType.DOUBLE: "double_data",
    DataType.VARCHAR: "string_data",
    DataType.JSON: "json_data",
    DataType.ARRAY: "array_data",
}

#: The ``VectorField`` oneof slot that carries each vector type.
VECTOR_SLOTS: dict[DataType, str] = {
    DataType.FLOAT_VECTOR: "float_vector",
    DataType.BINARY_VECTOR: "binary_vector",
    DataType.SPARSE_FLOAT_VECTOR: "sparse_float_vector",
    DataType.FLOAT16_VECTOR: "float16_vector",
    DataType.BFLOAT16_VECTOR: "bfloat16_vector",
    DataType.INT8_VECTOR: "int8_vector",
}

#: numpy dtypes of the fixed-width scalar types (text types travel as str).
NUMPY_TYPES: dict[DataType, type[np.generic]] = {
    DataType.BOOL: np.bool_,
    DataType.INT8: np.int8,
    DataType.INT16: np.int16,
    DataType.INT32: np.int32,
    DataType.INT64: np.int64,
    DataType.FLOAT: np.float32,
    DataType.DOUBLE: np.float64,
}

TEXT_TYPES = frozenset({DataType.VARCHAR, DataType.JSON})

#: Types whose insert values are read as a Python list, one item per row (not numpy).
LIST_TYPES = TEXT_TYPES | {DataType.ARRAY, DataType.SPARSE_FLOAT_VECTOR}


def slot_name(dtype: DataType) -> str:
    """The FieldData slot of ``dtype`` (for messages)."""
    return VECTOR_SLOTS.get(dtype) or SCALAR_SLOTS.get(dtype, "?")


def check_vector_dim(fd: schema_pb2.FieldData, field: FieldSchema, carried: int) -> None:
    """Refuse vector field data whose ``dim`` is not the schema's (a 0 dim passes while the data
    carries nothing: ``carried`` counts its values)."""
    if fd.vectors.dim != field.dim and (fd.vectors.dim != 0 or carried > 0):
        raise InvalidArgument(
            f"the dim ({fd.vectors.dim}) of field data({field.name}) is not equal to schema dim ({field.dim})"
        )
