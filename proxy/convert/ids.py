"""Primary keys as Milvus' ``schema_pb2.IDs`` (insert, delete, search results)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
from pymilvus.grpc_gen import schema_pb2

from common.schema import DataType


def ids_to_proto(
    pks: pa.Array | pa.ChunkedArray | np.ndarray | Sequence[int] | Sequence[str],
    *,
    pk_type: DataType | None = None,
) -> schema_pb2.IDs:
    """Primary keys as ``IDs``: ``int_id`` for Int64 keys, ``str_id`` for VarChar.

    The branch follows the values' type (an Arrow or numpy array's dtype, a
    list's first value); ``pk_type`` picks it for an empty list (``int_id``
    unless ``VARCHAR``). The chosen branch is always present, even when empty.
    """
    if isinstance(pks, pa.ChunkedArray):
        pks = pks.combine_chunks()
    values: list[Any]
    is_int: bool | None  # None: a plain empty list, whose type only pk_type knows
    if isinstance(pks, pa.Array):
        is_int = pa.types.is_integer(pks.type)
        values = pks.to_numpy(zero_copy_only=False).tolist() if is_int else pks.to_pylist()
    elif isinstance(pks, np.ndarray):
        is_int = pks.dtype.kind in "iu"
        values = pks.tolist()
    else:
        values = list(pks)
        is_int = isinstance(values[0], int | np.integer) if values else None
        if is_int:
            values = [int(v) for v in values]  # numpy integers too
    if is_int is None:
        is_int = pk_type != DataType.VARCHAR
    ids = schema_pb2.IDs()
    if is_int:
        ids.int_id.SetInParent()
        ids.int_id.data.extend(values)  # Python ints already (tolist() gives them)
    else:
        ids.str_id.SetInParent()
        ids.str_id.data.extend(str(v) for v in values)
    return ids


def ids_from_proto(ids: schema_pb2.IDs) -> list[int] | list[str]:
    """The primary keys an ``IDs`` carries (empty when neither branch is set)."""
    which = ids.WhichOneof("id_field")
    if which == "int_id":
        return list(ids.int_id.data)
    if which == "str_id":
        return list(ids.str_id.data)
    return []
