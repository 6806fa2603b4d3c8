"""Nullable vector fields at the edge: the schema, pymilvus' inserts with None vectors (valid_data and
the valid rows' vectors only) into Arrow nulls, and Arrow nulls back into the FieldData pymilvus reads."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from pymilvus import DataType as PmType
from pymilvus import MilvusClient
from pymilvus.client.prepare import Prepare
from pymilvus.client.search_result import SearchResult
from pymilvus.grpc_gen import milvus_pb2

from common.errors import InvalidArgument
from common.schema import CollectionSchema
from proxy.convert import build_search_results, insert_to_table, schema_from_proto, schema_to_proto
from tests.proxy.convert.test_convert_rows import fields_info


def _schema() -> CollectionSchema:
    s = MilvusClient.create_schema()
    s.add_field("id", PmType.INT64, is_primary=True)
    s.add_field("v", PmType.FLOAT_VECTOR, dim=2, nullable=True)
    s.add_field("b", PmType.BINARY_VECTOR, dim=8, nullable=True)
    return schema_from_proto(Prepare.get_schema_from_collection_schema("c", s), collection_name="c")


def _insert(schema: CollectionSchema, rows: list[dict[str, Any]]) -> pa.Table:
    req = Prepare.row_insert_param("c", rows, "", fields_info(schema), enable_dynamic=False)
    return insert_to_table(list(req.fields_data), len(rows), schema)


def test_the_schema_keeps_nullable_vectors() -> None:
    schema = _schema()
    assert schema.field("v").nullable and schema.field("b").nullable
    pb = schema_to_proto(schema)
    assert [f.nullable for f in pb.fields if f.name in ("v", "b")] == [True, True]


def test_none_vectors_become_arrow_nulls() -> None:
    schema = _schema()
    table = _insert(schema, [
        {"id": 1, "v": [1.0, 2.0], "b": b"\x0f"},
        {"id": 2, "v": None, "b": None},
        {"id": 3, "v": [5.0, 6.0]},  # b left out: null
    ])
    assert table.column("v").to_pylist() == [[1.0, 2.0], None, [5.0, 6.0]]
    assert table.column("b").to_pylist() == [b"\x0f", None, None]
    assert table.column("v").type == schema.field("v").arrow_type()


def test_a_none_vector_in_a_non_nullable_field_is_refused() -> None:
    s = MilvusClient.create_schema()
    s.add_field("id", PmType.INT64, is_primary=True)
    s.add_field("v", PmType.FLOAT_VECTOR, dim=2)
    schema = schema_from_proto(Prepare.get_schema_from_collection_schema("c", s), collection_name="c")
    req = Prepare.row_insert_param("c", [{"id": 1, "v": [1.0, 2.0]}, {"id": 2, "v": [1.0, 2.0]}], "",
                                   fields_info(schema), enable_dynamic=False)
    fields = list(req.fields_data)
    next(f for f in fields if f.field_name == "v").valid_data.extend([True, False])
    with pytest.raises(InvalidArgument, match=r"vector field \(v\) does not support null"):
        insert_to_table(fields, 2, schema)


def test_null_vectors_come_back_as_none_through_pymilvus() -> None:
    schema = _schema()
    hits = pa.table({
        "query": pa.array([0, 0, 0], pa.int32()),
        "id": pa.array([1, 2, 3], pa.int64()),
        "distance": pa.array([0.1, 0.2, 0.3], pa.float32()),
        "v": pa.array([[1.0, 2.0], None, [5.0, 6.0]], schema.field("v").arrow_type()),
        "b": pa.array([None, b"\x01", None], schema.field("b").arrow_type()),
    })
    data = build_search_results(hits, nq=1, topk=3, schema=schema, output_fields=["v", "b"])
    fv = next(f for f in data.fields_data if f.field_name == "v")
    assert list(fv.valid_data) == [True, False, True] and list(fv.vectors.float_vector.data) == [1, 2, 5, 6]
    fb = next(f for f in data.fields_data if f.field_name == "b")
    assert list(fb.valid_data) == [False, True, False] and fb.vectors.binary_vector == b"\x01"
    result = SearchResult(milvus_pb2.SearchResults(results=data).results)
    got = [(h["id"], h["entity"]["v"], h["entity"]["b"]) for h in result[0]]
    assert [(i, None if v is None else [float(x) for x in v]) for i, v, _ in got] == [
        (1, [1.0, 2.0]), (2, None), (3, [5.0, 6.0])
    ]
    assert [None if b is None else bytes(b[0] if isinstance(b, list) else b) for _, _, b in got] == [None, b"\x01", None]

