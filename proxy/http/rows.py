"""Entities between the RESTful API's JSON rows and ``FieldData``, through pymilvus's own
row <-> column code (the same conversions the pymilvus client makes)."""

from __future__ import annotations

import asyncio
import base64
from typing import Any

import numpy as np
from pymilvus.client.abstract import CollectionSchema
from pymilvus.client.entity_helper import extract_dynamic_field_from_result, extract_row_data_from_fields_data_v2
from pymilvus.client.search_result import SearchResult
from pymilvus.client.types import HybridExtraList
from pymilvus.client.utils import len_of
from pymilvus.exceptions import MilvusException
from pymilvus.grpc_gen import milvus_pb2, schema_pb2

from proxy.http.errors import INVALID_INSERT_DATA, RestError, invalid


def schema_dict(resp: milvus_pb2.DescribeCollectionResponse) -> dict[str, Any]:
    """The collection as pymilvus describes it (``fields`` with their types and params)."""
    return dict(CollectionSchema(raw=resp).dict())


def _vector_types(schema: dict[str, Any]) -> dict[str, int]:
    return {f["name"]: int(f["type"]) for f in schema["fields"]}


def vector_value(kind: int, value: Any, field: str) -> Any:
    """A vector as JSON gives it, in the form pymilvus takes for ``kind``."""
    try:
        if kind == schema_pb2.BinaryVector:
            return bytes(value)
        if kind == schema_pb2.Float16Vector:
            return np.asarray(value, dtype=np.float16)
        if kind == schema_pb2.Int8Vector:
            return np.asarray(value, dtype=np.int8)
        if kind == schema_pb2.SparseFloatVector and isinstance(value, dict):
            return {int(k): float(v) for k, v in value.items()}
    except (TypeError, ValueError) as err:
        raise invalid(f"invalid vector for field {field}: {err}") from err
    return value


def prepare_rows(schema: dict[str, Any], rows: Any) -> list[dict[str, Any]]:
    """``data`` of insert / upsert (one row or a list), vectors converted to pymilvus's forms."""
    if isinstance(rows, dict):
        rows = [rows]
    if not isinstance(rows, list) or not rows or not all(isinstance(r, dict) for r in rows):
        raise RestError(INVALID_INSERT_DATA, "`data` must be a non-empty list of objects (rows)")
    kinds = _vector_types(schema)
    special = {name for name, kind in kinds.items() if kind in (
        schema_pb2.BinaryVector, schema_pb2.Float16Vector, schema_pb2.Int8Vector, schema_pb2.SparseFloatVector)}
    if not special:
        return rows
    return [{k: vector_value(kinds[k], v, k) if k in special else v for k, v in row.items()} for row in rows]


# Rows converted on the event loop at most; more go to a thread (the loop serves other requests).
INLINE_ROWS = 1000


async def build_rows(make: Any, *args: Any, rows: int, **kwargs: Any) -> Any:
    """``build`` for ``rows`` rows, in a thread when there are many."""
    if rows <= INLINE_ROWS:
        return build(make, *args, **kwargs)
    return await asyncio.to_thread(build, make, *args, **kwargs)


def build(make: Any, *args: Any, **kwargs: Any) -> Any:
    """A request from one of pymilvus's ``Prepare`` methods; its refusals become code 1804."""
    try:
        return make(*args, **kwargs)
    except MilvusException as err:
        raise RestError(INVALID_INSERT_DATA, f"fail to deal with insert data, error: {err.message}") from err


def jsonable(value: Any) -> Any:
    """numpy values and bytes as JSON takes them: bytes (a binary vector) in base64, as Go's JSON
    encodes Milvus's ``[]byte``."""
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], bytes):
        value = value[0]  # pymilvus gives a row's binary vector as a list of one ``bytes``
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [jsonable(v) for v in value]
    return value


def query_rows(resp: milvus_pb2.QueryResults) -> list[dict[str, Any]]:
    if not resp.fields_data:
        return []
    _, dynamic = extract_dynamic_field_from_result(resp)
    keys = [f.field_name for f in resp.fields_data if f.field_name != "$meta"]
    count = max((_length(f) for f in resp.fields_data), default=0)
    rows: list[dict[str, Any]] = [dict.fromkeys(keys) for _ in range(count)]
    lazy = [f for f in resp.fields_data if extract_row_data_from_fields_data_v2(f, rows)]
    return [jsonable(dict(r)) for r in HybridExtraList(lazy, rows, dynamic_fields=dynamic)]


def _length(field: schema_pb2.FieldData) -> int:
    return int(len_of(field))


def search_hits(results: schema_pb2.SearchResultData) -> tuple[list[dict[str, Any]], list[int]]:
    """Every query's hits in one list (``{"id", "distance", ...fields}``, as Milvus), and each query's count."""
    hits: list[dict[str, Any]] = []
    topks: list[int] = []
    for per_query in SearchResult(results):
        topks.append(len(per_query))
        for hit in per_query:
            # Scores are float32: their shortest decimal form, as Milvus prints them (0.99999994).
            distance = float(str(np.float32(hit.distance)))
            hits.append(jsonable({**(hit.get("entity") or {}), "id": hit.id, "distance": distance}))
    return hits, topks
