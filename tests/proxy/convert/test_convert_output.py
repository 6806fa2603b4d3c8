"""Arrow result columns -> FieldData, output fields and ids, read back by pymilvus."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from pymilvus import DataType as PmType
from pymilvus import MilvusClient
from pymilvus.client.prepare import Prepare
from pymilvus.client.utils import len_of
from pymilvus.grpc_gen import schema_pb2

from common.errors import InvalidArgument
from common.schema import CollectionSchema, DataType
from proxy.convert import (
    ids_from_proto,
    ids_to_proto,
    resolve_output_fields,
    schema_from_proto,
    table_to_fields_data,
)
from proxy.convert.output import append_packed


def make_schema(*, dynamic: bool = True) -> Any:
    s = MilvusClient.create_schema(enable_dynamic_field=dynamic)
    s.add_field("id", PmType.INT64, is_primary=True)
    s.add_field("title", PmType.VARCHAR, max_length=8, nullable=True)
    s.add_field("age", PmType.INT16)
    s.add_field("score", PmType.DOUBLE, nullable=True)
    s.add_field("flag", PmType.BOOL)
    s.add_field("doc", PmType.JSON, nullable=True)
    s.add_field("vec", PmType.FLOAT_VECTOR, dim=2)
    return s


def domain(orm: Any) -> CollectionSchema:
    pb = Prepare.get_schema_from_collection_schema("c", orm)
    return schema_from_proto(pb, collection_name="c")


ROWS = [
    {"id": 1, "title": "a", "age": 10, "score": 0.25, "flag": True, "doc": {"k": [1]},
     "vec": [1.0, 2.0], "color": "red", "size": 3},
    {"id": 2, "title": None, "age": 20, "score": None, "flag": False, "doc": None,
     "vec": [3.0, 4.0], "size": 4},
]  # fmt: skip


@pytest.fixture
def loaded(connect: Any) -> Any:
    handler, fake = connect(make_schema())
    handler.insert_rows("c", ROWS)
    return handler, fake


# --------------------------------------------------------- output fields


def test_resolve_output_fields() -> None:
    schema = domain(make_schema())
    every = ["id", "title", "age", "score", "flag", "doc", "vec", "$meta"]
    assert resolve_output_fields(schema, ["*"]) == (every, [])
    assert resolve_output_fields(schema, []) == (["id"], [])
    assert resolve_output_fields(schema, [], include_pk=False) == ([], [])
    got = resolve_output_fields(schema, [" age ", "color", "size", "color", "vec"])
    assert got == (["id", "age", "vec", "$meta"], ["color", "size"])
    assert got.user_fields() == ["id", "age", "vec", "color", "size"]
    # ``*`` or ``$meta`` itself means every dynamic key.
    assert resolve_output_fields(schema, ["color", "*"]).dynamic_keys == []
    assert resolve_output_fields(schema, ["$meta", "color"]).user_fields() == ["id", "$meta"]

    with pytest.raises(InvalidArgument, match="parse output field name failed: doc\\['k'\\]"):
        resolve_output_fields(schema, ["doc['k']"])
    plain = domain(make_schema(dynamic=False))
    with pytest.raises(InvalidArgument, match="field color not exist"):
        resolve_output_fields(plain, ["color"])


def test_result_columns_as_milvus_returns_them() -> None:
    schema = domain(make_schema(dynamic=False))
    table = pa.table(
        {
            "id": pa.array([1, 2], pa.int64()),
            "title": pa.array(["a", None]),
            "age": pa.array([10, 20], pa.int16()),
            "score": pa.array([0.25, None]),
            "flag": pa.array([True, False]),
            "doc": pa.array(['{"k":1}', None]),
            "vec": pa.FixedSizeListArray.from_arrays(pa.array([1, 2, 3, 4], pa.float32()), 2),
        }
    )
    out = {fd.field_name: fd for fd in table_to_fields_data(table, schema, ["*"])}
    assert list(out) == ["id", "title", "age", "score", "flag", "doc", "vec"]
    assert [fd.field_id for fd in out.values()] == list(range(100, 107))
    assert out["id"].type == schema_pb2.Int64 and list(out["id"].scalars.long_data.data) == [1, 2]
    assert list(out["title"].scalars.string_data.data) == ["a", ""]
    assert list(out["title"].valid_data) == [True, False]
    assert list(out["age"].scalars.int_data.data) == [10, 20] and not out["age"].valid_data
    assert list(out["score"].scalars.double_data.data) == [0.25, 0.0]
    assert list(out["flag"].scalars.bool_data.data) == [True, False]
    assert list(out["doc"].scalars.json_data.data) == [b'{"k":1}', b"null"]
    assert out["vec"].vectors.dim == 2
    assert list(out["vec"].vectors.float_vector.data) == [1, 2, 3, 4]
    assert all(len_of(fd) == 2 for fd in out.values())


def test_empty_results_keep_their_payload_kind() -> None:
    schema = domain(make_schema())
    empty = schema.arrow_schema(with_timestamp=False).empty_table()
    for fd in table_to_fields_data(empty, schema, ["*"]):
        assert fd.WhichOneof("field") is not None
        assert len_of(fd) == 0  # pymilvus raises on a column without a payload


def test_dynamic_keys_are_picked_out_of_meta() -> None:
    schema = domain(make_schema())
    table = pa.table({"id": [1, 2], "$meta": ['{"color":"red","size":3}', '{"size":4}']})
    (_, meta) = table_to_fields_data(table, schema, ["color"])
    assert meta.is_dynamic and meta.field_name == "$meta" and meta.type == schema_pb2.JSON
    assert [json.loads(b) for b in meta.scalars.json_data.data] == [{"color": "red"}, {}]
    with pytest.raises(ValueError, match="lacks column title"):
        table_to_fields_data(table, schema, ["title"])


# ---------------------------------------------------- read back by pymilvus


def test_query_star_through_pymilvus(loaded: Any) -> None:
    handler, _ = loaded
    rows = handler.query("c", "id > 0", output_fields=["*"])
    assert [dict(r) for r in rows] == [
        {"id": 1, "title": "a", "age": 10, "score": 0.25, "flag": True, "doc": {"k": [1]},
         "vec": [1.0, 2.0], "color": "red", "size": 3},
        {"id": 2, "title": None, "age": 20, "score": None, "flag": False, "doc": None,
         "vec": [3.0, 4.0], "size": 4},
    ]  # fmt: skip


def test_query_dynamic_keys_and_defaults_through_pymilvus(loaded: Any) -> None:
    handler, _ = loaded
    rows = handler.query("c", "id > 0", output_fields=["color", "age"])
    assert [dict(r) for r in rows] == [{"id": 1, "age": 10, "color": "red"}, {"id": 2, "age": 20}]
    assert [dict(r) for r in handler.query("c", "id > 0")] == [{"id": 1}, {"id": 2}]
    assert list(handler.query("c", "", output_fields=["count(*)"])) == [{"count(*)": 2}]


def test_query_with_no_rows_through_pymilvus(connect: Any) -> None:
    handler, _ = connect(make_schema())
    assert list(handler.query("c", "id > 0", output_fields=["*"])) == []
    assert list(handler.query("c", "", output_fields=["count(*)"])) == [{"count(*)": 0}]


def test_insert_returns_primary_keys(connect: Any) -> None:
    handler, _ = connect(make_schema())
    result = handler.insert_rows("c", ROWS)
    assert result.primary_keys == [1, 2] and result.insert_count == 2


# ------------------------------------------------------------------ ids


@pytest.mark.parametrize(
    ("pks", "expected"),
    [
        (pa.array([3, 1], pa.int64()), [3, 1]),
        (pa.chunked_array([[5], [6]], pa.int64()), [5, 6]),
        (pa.array(["a", "b"]), ["a", "b"]),
        (np.array([7, 8], dtype=np.int64), [7, 8]),
        (np.array(["x"], dtype=object), ["x"]),
        ([1, 2], [1, 2]),
        (["k"], ["k"]),
    ],
)
def test_ids_round_trip(pks: Any, expected: list[Any]) -> None:
    ids = ids_to_proto(pks)
    assert ids.WhichOneof("id_field") == ("int_id" if isinstance(expected[0], int) else "str_id")
    assert ids_from_proto(ids) == expected


def test_empty_ids_follow_the_key_type() -> None:
    assert ids_to_proto([]).WhichOneof("id_field") == "int_id"
    assert ids_to_proto([], pk_type=DataType.VARCHAR).WhichOneof("id_field") == "str_id"
    # Typed arrays know their branch even when empty.
    assert ids_to_proto(pa.array([], pa.string())).WhichOneof("id_field") == "str_id"
    assert ids_to_proto(np.array([], dtype=np.int64)).WhichOneof("id_field") == "int_id"
    assert ids_from_proto(schema_pb2.IDs()) == []


def test_append_packed_matches_extend() -> None:
    values = np.linspace(-1, 1, 1001, dtype=np.float32)
    fast, slow = schema_pb2.FieldData(), schema_pb2.FieldData()
    append_packed(fast.vectors.float_vector, "data", values, np.float32)
    append_packed(fast.vectors.float_vector, "data", values[:3], np.float32)
    slow.vectors.float_vector.data.extend([*values.tolist(), *values[:3].tolist()])
    assert fast == slow and fast.WhichOneof("field") == "vectors"
    doubles = schema_pb2.DoubleArray()
    append_packed(doubles, "data", np.array([0.1, 1e300]), np.float64)
    assert list(doubles.data) == [0.1, 1e300]
