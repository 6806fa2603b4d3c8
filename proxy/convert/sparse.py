"""Sparse float vectors at the Milvus edge: insert columns, result columns, search placeholders, search params.

pymilvus sends a ``SPARSE_FLOAT_VECTOR`` column as
``vectors.sparse_float_vector`` (a ``SparseFloatArray``: ``contents`` one
bytes per row of packed little-endian ``(uint32 index, float32 value)`` pairs,
``dim`` the largest index + 1) and search vectors as one ``SparseFloatVector``
placeholder whose values are such rows. Rows are checked as Milvus checks
them (``sparse_rows.check_rows``: index below 2^32-1, unique, values finite
and not negative; an empty row is fine) and kept with their pairs in ascending
index order; results return them the same way. Search parameters
``drop_ratio_search`` and ``dim_max_score_ratio`` are checked here with
knowhere's ranges.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
from pymilvus.grpc_gen import schema_pb2

from common.errors import InvalidArgument
from common.schema import FieldSchema
from segcore.index.sparse_params import ratio_param, score_ratio_param
from segcore.segments.sparse_rows import SparseRows, check_rows, pad_queries, row_bytes, rows_from_bytes


def _rows(contents: Sequence[bytes]) -> SparseRows:
    try:
        rows = rows_from_bytes(contents)
    except ValueError as err:
        raise InvalidArgument(str(err)) from None
    problem = check_rows(rows)
    if problem is not None:
        raise InvalidArgument(problem)
    return rows


def read_sparse_column(field: FieldSchema, fd: schema_pb2.FieldData) -> list[bytes] | None:
    """An insert column's rows, each as its canonical packed bytes; None when the slot is another one
    (the caller reports the mismatch)."""
    kind = fd.WhichOneof("field")
    if kind is None:
        return []
    slot = fd.vectors.WhichOneof("data") if kind == "vectors" else kind
    if kind != "vectors" or slot not in (None, "sparse_float_vector"):
        return None
    return row_bytes(_rows(list(fd.vectors.sparse_float_vector.contents)))


def sparse_field_data(fd: schema_pb2.FieldData, array: pa.Array) -> None:
    """Fill a result ``FieldData`` with a sparse column's rows (null rows: empty)."""
    rows, _valid = SparseRows.from_arrow(array)
    out = fd.vectors.sparse_float_vector
    out.contents.extend(row_bytes(rows))
    out.dim = rows.dim
    fd.vectors.dim = rows.dim


def sparse_queries(values: Sequence[bytes]) -> np.ndarray:
    """A ``SparseFloatVector`` placeholder's rows as a padded batch (``sparse_rows.pad_queries``)."""
    return pad_queries(_rows(list(values)))


def check_sparse_search_params(params: dict[str, Any]) -> None:
    """Type and range-check ``drop_ratio_search`` and ``dim_max_score_ratio`` in place."""
    ratio = ratio_param(params, "drop_ratio_search")
    if ratio is not None:
        params["drop_ratio_search"] = ratio
    score = score_ratio_param(params)
    if score is not None:
        params["dim_max_score_ratio"] = score
