"""Nullable vector fields (Milvus 2.6: ``add_field("v", FLOAT_VECTOR, dim=8, nullable=True)``).

On the wire, as pymilvus 2.6 sends and reads them: a nullable vector column
carries ``valid_data`` (one flag per row) and the vectors of the valid rows
only, one after the other (a null row takes no room in ``float_vector`` /
``binary_vector``). Results come back the same way; pymilvus then gives
``None`` for a null row. In Strata a null vector is an Arrow null in the
field's column (the row's slot holds zeros), kept by storage, compaction and
restart; every vector search leaves null rows out (the row bitset a segment
search applies has them cleared), so a null vector is never a hit. A vector
field takes no default value and cannot be filtered on (``is null`` included),
as in Milvus.

Which vector types may be nullable is :data:`NULLABLE_VECTOR_TYPES`; the
conversions here are the same for every type (they work on the Arrow column
and on the ``FieldData`` the type's own converter builds).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pymilvus.grpc_gen import schema_pb2

from common.schema import DataType, FieldSchema

#: Vector types a field may declare ``nullable``.
NULLABLE_VECTOR_TYPES = frozenset(t for t in DataType if t.is_vector)


def with_nulls(array: pa.Array, valid: np.ndarray | None) -> pa.Array:
    """``array`` with the rows where ``valid`` is false made null (their values are dropped)."""
    if valid is None or bool(valid.all()):
        return array
    return pc.if_else(pa.array(valid, type=pa.bool_()), array, pa.scalar(None, type=array.type))


def nullable_vector_field_data(
    field: FieldSchema,
    array: pa.Array,
    convert: Callable[[FieldSchema, pa.Array], schema_pb2.FieldData],
) -> schema_pb2.FieldData:
    """A nullable vector column as Milvus returns it: ``valid_data`` and the valid rows' vectors.

    ``convert`` turns a column without nulls into the type's ``FieldData``.
    """
    valid = array.is_valid()
    fd = convert(replace(field, nullable=False), pc.filter(array, valid) if array.null_count else array)
    fd.valid_data.extend(valid.to_numpy(zero_copy_only=False).tolist())
    return fd
