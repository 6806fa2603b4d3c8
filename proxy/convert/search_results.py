"""Search and query results at the proxy edge: reduced Arrow hits and rows to Milvus's messages.

What pymilvus reads back: ``SearchResultData.topks`` (hits per query) slices the flat
``ids``/``scores``/``fields_data``; ``primary_field_name`` names the key in each hit;
``output_fields`` minus the returned columns are dynamic keys to lift out of ``$meta``. A
grouping search's per-hit group values go in ``group_by_field_value`` (see :mod:`proxy.convert.groups`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
from pymilvus.grpc_gen import common_pb2, milvus_pb2, schema_pb2

from common.errors import InvalidArgument
from common.schema import CollectionSchema, DataType, FieldSchema
from proxy.convert.ids import ids_to_proto
from proxy.convert.output import (
    append_packed,
    resolve_output_fields,
    table_to_fields_data,
)

COUNT_FIELD = "count(*)"
QUERY_COLUMN = "query"
DISTANCE_COLUMN = "distance"


def build_search_results(
    results: pa.Table | None,
    nq: int,
    topk: int,
    schema: CollectionSchema,
    output_fields: Sequence[str],
    pk_field: str | None = None,
    *,
    round_decimal: int = -1,
    query_column: str = QUERY_COLUMN,
    distance_column: str = DISTANCE_COLUMN,
) -> schema_pb2.SearchResultData:
    """The ``SearchResultData`` Milvus returns for a reduced search.

    Args:
        results: hits sorted by query then rank, with columns ``query``
            (0..nq-1), the primary key (named as its field), ``distance``
            and every output field; ``None`` when nothing was searched.
        nq: number of query vectors.
        topk: the request's limit.
        schema: the collection's schema.
        output_fields: the request's ``output_fields``, as the client sent them.
        pk_field: primary key column (default: the schema's primary key).
        round_decimal: round distances to this many decimals (-1: keep).
        query_column: name of the query column, if not ``query``.
        distance_column: name of the distance column, if not ``distance``.
    """
    pk = schema.field(pk_field) if pk_field else schema.primary_field
    resolved = resolve_output_fields(schema, output_fields, include_pk=False)
    if results is None:
        results = _empty_results(schema, pk, resolved.fields, query_column, distance_column)
    queries = results.column(query_column).to_numpy().astype(np.int64)
    if len(queries) and (queries.min() < 0 or queries.max() >= nq):
        raise ValueError(f"search results hold query numbers outside 0..{nq - 1}")
    if np.any(np.diff(queries) < 0):
        raise ValueError("search results must be sorted by query")
    topks = np.bincount(queries, minlength=nq)

    out = schema_pb2.SearchResultData(num_queries=nq, top_k=topk, primary_field_name=pk.name)
    out.topks.extend(topks.tolist())
    scores = results.column(distance_column).to_numpy().astype(np.float32)
    if round_decimal >= 0:
        scores = np.round(scores.astype(np.float64), round_decimal)
    append_packed(out, "scores", scores, np.float32)
    out.ids.CopyFrom(ids_to_proto(results.column(pk.name), pk_type=pk.dtype))
    out.fields_data.extend(table_to_fields_data(results, schema, output_fields, include_pk=False))
    out.output_fields.extend(resolved.user_fields())
    return out


def _empty_results(
    schema: CollectionSchema,
    pk: FieldSchema,
    fields: Sequence[str],
    query_column: str,
    distance_column: str,
) -> pa.Table:
    columns = {
        query_column: pa.array([], type=pa.int32()),
        distance_column: pa.array([], type=pa.float32()),
    }
    for name in (pk.name, *fields):
        columns[name] = pa.array([], type=schema.field(name).arrow_type())
    return pa.table(columns)


_SUCCESS = common_pb2.Status(error_code=common_pb2.Success, code=0, reason="")


def build_query_results(
    table: pa.Table,
    schema: CollectionSchema,
    output_fields: Sequence[str],
    *,
    collection_name: str | None = None,
) -> milvus_pb2.QueryResults:
    """The ``QueryResults`` Milvus returns, with its success status (session_ts left to the caller).

    The status is set even though it is all defaults: an unset one reaches the Node.js SDK as
    ``status: null`` (pymilvus reads a missing status as success, the Node SDK does not).

    ``table`` holds the matching rows with a column per resolved output field
    (the primary key always among them). ``collection_name`` defaults to the
    schema's name (pass the name the client used, e.g. an alias).
    """
    resolved = resolve_output_fields(schema, output_fields, include_pk=True)
    out = milvus_pb2.QueryResults(
        status=_SUCCESS,
        collection_name=schema.name if collection_name is None else collection_name,
        primary_field_name=schema.primary_field.name,
    )
    out.fields_data.extend(table_to_fields_data(table, schema, output_fields, include_pk=True))
    out.output_fields.extend(resolved.user_fields())
    return out


def is_count_query(output_fields: Sequence[str]) -> bool:
    """Whether a query asks for ``count(*)`` (which must then stand alone)."""
    names = [f.strip() for f in output_fields if f.strip()]
    if not any(n.lower() == COUNT_FIELD for n in names):
        return False
    if len(names) > 1:
        raise InvalidArgument(f"{COUNT_FIELD} cannot be combined with other output fields")
    return True


def build_count_results(count: int, *, collection_name: str = "") -> milvus_pb2.QueryResults:
    """Milvus' answer to ``count(*)``: one Int64 column ``count(*)`` with one row."""
    column = schema_pb2.FieldData(
        type=int(DataType.INT64),
        field_name=COUNT_FIELD,
    )
    column.scalars.long_data.data.append(count)
    return milvus_pb2.QueryResults(
        status=_SUCCESS, collection_name=collection_name, fields_data=[column], output_fields=[COUNT_FIELD]
    )


build_count_result = build_count_results
