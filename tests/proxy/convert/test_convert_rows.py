"""Insert columns (FieldData) -> Arrow rows, with the requests pymilvus builds."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from pymilvus import DataType as PmType
from pymilvus import MilvusClient
from pymilvus.client.abstract import CollectionSchema as DescribedSchema
from pymilvus.client.prepare import Prepare
from pymilvus.grpc_gen import milvus_pb2, schema_pb2

from common.errors import InvalidArgument
from common.schema import CollectionSchema
from proxy.convert import insert_to_table, schema_from_proto, schema_to_proto


def make_schema(*, dynamic: bool = True, auto_id: bool = False, pk_type: Any = None) -> Any:
    s = MilvusClient.create_schema(enable_dynamic_field=dynamic, auto_id=auto_id)
    if pk_type == PmType.VARCHAR:
        s.add_field("id", PmType.VARCHAR, is_primary=True, max_length=16, auto_id=auto_id)
    else:
        s.add_field("id", PmType.INT64, is_primary=True, auto_id=auto_id)
    s.add_field("title", PmType.VARCHAR, max_length=8, nullable=True)
    s.add_field("age", PmType.INT8, default_value=7)
    s.add_field("score", PmType.FLOAT, nullable=True, default_value=0.5)
    s.add_field("flag", PmType.BOOL, nullable=True)
    s.add_field("doc", PmType.JSON, nullable=True)
    s.add_field("vec", PmType.FLOAT_VECTOR, dim=3)
    return s


def domain(orm: Any) -> CollectionSchema:
    return schema_from_proto(
        Prepare.get_schema_from_collection_schema("c", orm), collection_name="c"
    )


def fields_info(schema: CollectionSchema) -> list[dict[str, Any]]:
    resp = milvus_pb2.DescribeCollectionResponse(schema=schema_to_proto(schema))
    return DescribedSchema(resp).dict()["fields"]


def row_request(schema: CollectionSchema, rows: list[dict[str, Any]]) -> milvus_pb2.InsertRequest:
    """The InsertRequest pymilvus' ``insert`` (row form) sends."""
    return Prepare.row_insert_param(
        "c", rows, "", fields_info(schema), enable_dynamic=schema.dynamic_field is not None
    )


def to_table(schema: CollectionSchema, rows: list[dict[str, Any]], **kwargs: Any) -> pa.Table:
    req = row_request(schema, rows)
    return insert_to_table(req.fields_data, req.num_rows, schema, **kwargs)


ROWS: list[dict[str, Any]] = [
    {"id": 1, "title": "a", "age": 1, "score": 1.5, "flag": True, "doc": {"k": 1},
     "vec": [1, 2, 3], "color": "red"},
    {"id": 2, "title": None, "vec": np.array([4, 5, 6], dtype=np.float32)},
    {"id": 3, "title": "héllo", "age": None, "score": None, "flag": False, "doc": None,
     "vec": [7, 8, 9], "n": [1, 2]},
]  # fmt: skip


def test_row_insert_with_nulls_defaults_and_dynamic_keys() -> None:
    schema = domain(make_schema())
    table = to_table(schema, ROWS)
    assert table.schema == schema.arrow_schema(with_timestamp=False)
    got = table.to_pylist()
    assert [r["id"] for r in got] == [1, 2, 3]
    assert [r["title"] for r in got] == ["a", None, "héllo"]
    assert [r["age"] for r in got] == [1, 7, 7]  # missing and None take the default
    assert [r["score"] for r in got] == [1.5, 0.5, 0.5]  # a default beats null
    assert [r["flag"] for r in got] == [True, None, False]
    assert [None if r["doc"] is None else json.loads(r["doc"]) for r in got] == [
        {"k": 1},
        None,
        None,
    ]
    assert [r["vec"] for r in got] == [[1, 2, 3], [4, 5, 6], [7, 8, 9]]
    assert [json.loads(r["$meta"]) for r in got] == [{"color": "red"}, {}, {"n": [1, 2]}]


def test_column_insert() -> None:
    schema = domain(make_schema(dynamic=False))
    entities = [
        {"name": "id", "type": PmType.INT64, "values": [5, 6]},
        {"name": "title", "type": PmType.VARCHAR, "values": ["x", None]},
        {"name": "age", "type": PmType.INT8, "values": [3, None]},
        {"name": "score", "type": PmType.FLOAT, "values": [None, 2.0]},
        {"name": "flag", "type": PmType.BOOL, "values": [None, None]},
        {"name": "doc", "type": PmType.JSON, "values": [{"a": 1}, None]},
        {"name": "vec", "type": PmType.FLOAT_VECTOR, "values": [[1, 1, 1], [2, 2, 2]]},
    ]
    req = Prepare.batch_insert_param("c", entities, "", fields_info(schema))
    table = insert_to_table(req.fields_data, req.num_rows, schema)
    assert table.column("title").to_pylist() == ["x", None]
    assert table.column("age").to_pylist() == [3, 7]
    assert table.column("score").to_pylist() == [0.5, 2.0]
    assert table.column("flag").to_pylist() == [None, None]  # all null: no payload at all
    assert table.column("doc").to_pylist() == ['{"a":1}', None]


def test_full_length_nullable_column_is_accepted() -> None:
    schema = domain(make_schema(dynamic=False))
    req = row_request(schema, [{"id": 1, "title": "a", "vec": [0, 0, 0]}] * 2)
    title = next(fd for fd in req.fields_data if fd.field_name == "title")
    title.valid_data[:] = [True, False]
    title.scalars.string_data.data[:] = ["a", "placeholder"]
    table = insert_to_table(req.fields_data, 2, schema)
    assert table.column("title").to_pylist() == ["a", None]


def test_full_length_json_placeholders_are_not_parsed() -> None:
    schema = domain(make_schema(dynamic=False))
    req = row_request(schema, [{"id": 1, "doc": {"a": 1}, "vec": [0, 0, 0]}] * 2)
    doc = next(fd for fd in req.fields_data if fd.field_name == "doc")
    doc.valid_data[:] = [False, True]
    doc.scalars.json_data.data[:] = [b"", b'{"a":1}']
    table = insert_to_table(req.fields_data, 2, schema)
    assert table.column("doc").to_pylist() == [None, '{"a":1}']


def test_missing_nullable_and_default_fields_and_dynamic() -> None:
    schema = domain(make_schema())
    req = row_request(schema, [{"id": 1, "vec": [0, 0, 0]}])
    keep = [fd for fd in req.fields_data if fd.field_name in ("id", "vec")]
    row = insert_to_table(keep, 1, schema).to_pylist()[0]
    assert row == {"id": 1, "title": None, "age": 7, "score": 0.5, "flag": None, "doc": None,
                   "vec": [0, 0, 0], "$meta": "{}"}  # fmt: skip


def test_auto_id_int64_and_varchar() -> None:
    schema = domain(make_schema(auto_id=True))
    table = to_table(schema, [{"vec": [0, 0, 0]}, {"vec": [1, 1, 1]}], auto_ids=np.array([9, 10]))
    assert table.column("id").to_pylist() == [9, 10]

    schema = domain(make_schema(auto_id=True, pk_type=PmType.VARCHAR))
    table = to_table(schema, [{"vec": [0, 0, 0]}], auto_ids=np.array([42]))
    assert table.column("id").to_pylist() == ["42"]

    with pytest.raises(ValueError, match="needs 1 auto_ids"):
        to_table(schema, [{"vec": [0, 0, 0]}])


def test_pk_given_for_auto_id_collection() -> None:
    schema = domain(make_schema(auto_id=True))
    # pymilvus sends the key when the first row has it; Milvus refuses by default.
    rows = [{"id": 5, "vec": [0, 0, 0]}]
    with pytest.raises(InvalidArgument, match="can not assign primary field data when auto id"):
        to_table(schema, rows, auto_ids=np.array([1]))
    table = to_table(schema, rows, auto_ids=np.array([1]), allow_insert_auto_id=True)
    assert table.column("id").to_pylist() == [5]


# ---------------------------------------------------------------- validation


def _request(schema: CollectionSchema, rows: list[dict[str, Any]]) -> list[schema_pb2.FieldData]:
    return list(row_request(schema, rows).fields_data)


def _by_name(fields: list[schema_pb2.FieldData], name: str) -> schema_pb2.FieldData:
    return next(fd for fd in fields if fd.field_name == name)


def test_missing_field_is_refused() -> None:
    schema = domain(make_schema())
    fields = [
        fd for fd in _request(schema, [{"id": 1, "vec": [0, 0, 0]}]) if fd.field_name != "vec"
    ]
    with pytest.raises(InvalidArgument) as err:
        insert_to_table(fields, 1, schema)
    assert err.value.message == (
        "Insert missed an field `vec` to collection without set nullable==true or set default_value"
    )


def test_wrong_data_type_names_the_field() -> None:
    schema = domain(make_schema())
    fields = _request(schema, [{"id": 1, "vec": [0, 0, 0]}])
    ident = _by_name(fields, "id")
    ident.scalars.ClearField("long_data")
    ident.scalars.float_data.data.append(1.0)
    with pytest.raises(InvalidArgument, match=r"type mismatch for field \(id\).*Int64.*long_data"):
        insert_to_table(fields, 1, schema)

    fields = _request(schema, [{"id": 1, "vec": [0, 0, 0]}])
    _by_name(fields, "vec").CopyFrom(
        schema_pb2.FieldData(field_name="vec", scalars={"long_data": {"data": [1, 2, 3]}})
    )
    with pytest.raises(InvalidArgument, match=r"field \(vec\).*float_vector.*got scalars"):
        insert_to_table(fields, 1, schema)


def test_vector_dim_mismatch() -> None:
    schema = domain(make_schema())
    fields = _request(schema, [{"id": 1, "vec": [0.0] * 8}])
    with pytest.raises(InvalidArgument) as err:
        insert_to_table(fields, 1, schema)
    assert err.value.message == "the dim (8) of field data(vec) is not equal to schema dim (3)"


def test_row_count_mismatch() -> None:
    schema = domain(make_schema())
    fields = _request(schema, [{"id": 1, "vec": [0, 0, 0]}, {"id": 2, "vec": [0, 0, 0]}])
    _by_name(fields, "id").scalars.long_data.data.append(3)
    with pytest.raises(
        InvalidArgument,
        match=r"num_rows \(3\) of field \(id\) is not equal to passed num_rows \(2\)",
    ):
        insert_to_table(fields, 2, schema)
    with pytest.raises(InvalidArgument, match="num_rows should be greater than 0"):
        insert_to_table(fields, 0, schema)


def test_varchar_longer_than_max_length_counts_bytes() -> None:
    schema = domain(make_schema())
    fields = _request(schema, [{"id": 1, "title": "ok", "vec": [0, 0, 0]},
                               {"id": 2, "title": "ééééé", "vec": [0, 0, 0]}])  # fmt: skip
    with pytest.raises(InvalidArgument) as err:
        insert_to_table(fields, 2, schema)
    assert err.value.message == (
        "length of varchar field title exceeds max length, row number: 1, length: 10, max length: 8"
    )


@pytest.mark.parametrize(
    ("meta", "message"),
    [
        (b"[1, 2]", "dynamic field data must be a JSON object, got list at row 0"),
        (b'{"$meta": 1}', "cannot set json key to: \\$meta"),
        (b'{"title": "x"}', "dynamic field name cannot include the static field name: title"),
        (b"{nope", r"invalid JSON in field \(\$meta\)"),
    ],
)
def test_bad_dynamic_data(meta: bytes, message: str) -> None:
    schema = domain(make_schema())
    fields = _request(schema, [{"id": 1, "vec": [0, 0, 0]}])
    _by_name(fields, "$meta").scalars.json_data.data[:] = [meta]
    with pytest.raises(InvalidArgument, match=message):
        insert_to_table(fields, 1, schema)


def test_unknown_fields() -> None:
    schema = domain(make_schema(dynamic=False))
    fields = _request(schema, [{"id": 1, "vec": [0, 0, 0]}])
    extra = schema_pb2.FieldData(field_name="color", scalars={"string_data": {"data": ["red"]}})
    with pytest.raises(
        InvalidArgument,
        match="unexpected field `color` to collection without enabling dynamic field",
    ):
        insert_to_table([*fields, extra], 1, schema)
    meta = schema_pb2.FieldData(field_name="$meta", is_dynamic=True)
    with pytest.raises(InvalidArgument, match="without dynamic schema enabled"):
        insert_to_table([*fields, meta], 1, schema)

    schema = domain(make_schema(dynamic=True))
    fields = _request(schema, [{"id": 1, "vec": [0, 0, 0]}])
    with pytest.raises(InvalidArgument, match="field `color` does not exist in collection c"):
        insert_to_table([*fields, extra], 1, schema)
    with pytest.raises(InvalidArgument, match="duplicated field id found"):
        insert_to_table([*fields, _by_name(fields, "id")], 1, schema)


def test_bad_values() -> None:
    schema = domain(make_schema())
    fields = _request(schema, [{"id": 1, "age": 1, "vec": [0, 0, 0]}])
    _by_name(fields, "age").scalars.int_data.data[:] = [300]
    with pytest.raises(
        InvalidArgument, match=r"value 300 of field \(age\) is out of range of Int8"
    ):
        insert_to_table(fields, 1, schema)

    fields = _request(schema, [{"id": 1, "vec": [0, math.nan, 0]}])
    with pytest.raises(InvalidArgument, match=r"float vector field \(vec\) contains NaN"):
        insert_to_table(fields, 1, schema)

    fields = _request(schema, [{"id": 1, "score": math.inf, "vec": [0, 0, 0]}])
    with pytest.raises(InvalidArgument, match=r"float field \(score\) contains NaN or Inf"):
        insert_to_table(fields, 1, schema)

    fields = _request(schema, [{"id": 1, "doc": {"a": 1}, "vec": [0, 0, 0]}])
    _by_name(fields, "doc").scalars.json_data.data[:] = [b"{oops"]
    with pytest.raises(InvalidArgument, match=r"invalid JSON in field \(doc\) at row 0"):
        insert_to_table(fields, 1, schema)
    _by_name(fields, "doc").scalars.json_data.data[:] = [b"\xff"]
    with pytest.raises(InvalidArgument, match=r"field \(doc\) holds a value that is not UTF-8"):
        insert_to_table(fields, 1, schema)


def test_bad_valid_data() -> None:
    schema = domain(make_schema())
    fields = _request(schema, [{"id": 1, "vec": [0, 0, 0]}, {"id": 2, "vec": [0, 0, 0]}])
    ident = _by_name(fields, "id")
    ident.valid_data[:] = [True, False]
    with pytest.raises(InvalidArgument, match=r"field \(id\) is not nullable and has no default"):
        insert_to_table(fields, 2, schema)

    fields = _request(schema, [{"id": 1, "vec": [0, 0, 0]}, {"id": 2, "vec": [0, 0, 0]}])
    _by_name(fields, "title").valid_data.append(True)
    with pytest.raises(InvalidArgument, match=r"length \(3\) of valid_data of field \(title\)"):
        insert_to_table(fields, 2, schema)

    fields = _request(schema, [{"id": 1, "title": "a", "vec": [0, 0, 0]}] * 3)
    title = _by_name(fields, "title")
    title.valid_data[:] = [True, False, False]
    del title.scalars.string_data.data[2]  # 2 values, 1 valid, 3 rows: neither form
    with pytest.raises(InvalidArgument, match=r"number of values \(2\) of field \(title\)"):
        insert_to_table(fields, 3, schema)

    fields = _request(schema, [{"id": 1, "vec": [0, 0, 0]}, {"id": 2, "vec": [0, 0, 0]}])
    _by_name(fields, "vec").valid_data[:] = [True, False]
    with pytest.raises(InvalidArgument, match=r"vector field \(vec\) does not support null"):
        insert_to_table(fields, 2, schema)


@pytest.mark.parametrize("depth", [257, 100_000])
@pytest.mark.parametrize("field", ["doc", "$meta"])
def test_json_nested_too_deep_is_refused(field: str, depth: int) -> None:
    schema = domain(make_schema())
    fields = _request(schema, [{"id": 1, "vec": [0, 0, 0], "doc": {}}, {"id": 2, "vec": [0, 0, 0], "doc": {}}])
    deep = b"[" * depth + b"]" * depth
    _by_name(fields, field).scalars.json_data.data[1] = b'{"k": ' + deep + b"}" if field == "$meta" else deep
    with pytest.raises(InvalidArgument) as err:
        insert_to_table(fields, 2, schema)
    assert err.value.message == (
        f"invalid JSON in field ({field}) at row 1: JSON value is nested more than 256 levels deep"
    )


def test_json_nested_up_to_the_limit_is_stored() -> None:
    schema = domain(make_schema())
    deep = "[" * 256 + "]" * 256
    fields = _request(schema, [{"id": 1, "vec": [0, 0, 0], "doc": {}}])
    _by_name(fields, "doc").scalars.json_data.data[:] = [deep.encode()]
    table = insert_to_table(fields, 1, schema)
    assert table.column("doc").to_pylist() == [deep]
