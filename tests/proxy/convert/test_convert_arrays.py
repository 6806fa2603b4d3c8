"""ARRAY fields at the proxy edge: schema, insert columns and result columns, driven by pymilvus."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pytest
from pymilvus import DataType as PmType
from pymilvus import MilvusClient
from pymilvus.client.abstract import CollectionSchema as DescribedSchema
from pymilvus.client.prepare import Prepare
from pymilvus.grpc_gen import milvus_pb2, schema_pb2

from common.errors import InvalidArgument
from common.schema import CollectionSchema, DataType
from proxy.convert import (
    column_to_field_data,
    insert_to_table,
    schema_from_proto,
    schema_to_proto,
    table_to_fields_data,
)


def make_schema() -> Any:
    s = MilvusClient.create_schema(enable_dynamic_field=True)
    s.add_field("id", PmType.INT64, is_primary=True)
    s.add_field("ints", PmType.ARRAY, element_type=PmType.INT64, max_capacity=4)
    s.add_field("small", PmType.ARRAY, element_type=PmType.INT8, max_capacity=3, nullable=True)
    s.add_field("floats", PmType.ARRAY, element_type=PmType.FLOAT, max_capacity=3, nullable=True)
    s.add_field("doubles", PmType.ARRAY, element_type=PmType.DOUBLE, max_capacity=3, nullable=True)
    s.add_field("words", PmType.ARRAY, element_type=PmType.VARCHAR, max_capacity=3, max_length=4, nullable=True)
    s.add_field("flags", PmType.ARRAY, element_type=PmType.BOOL, max_capacity=2, nullable=True)
    s.add_field("vec", PmType.FLOAT_VECTOR, dim=2)
    return s


def domain() -> CollectionSchema:
    return schema_from_proto(Prepare.get_schema_from_collection_schema("c", make_schema()), collection_name="c")


def fields_info(schema: CollectionSchema) -> list[dict[str, Any]]:
    resp = milvus_pb2.DescribeCollectionResponse(schema=schema_to_proto(schema))
    return DescribedSchema(resp).dict()["fields"]


def row_request(schema: CollectionSchema, rows: list[dict[str, Any]]) -> milvus_pb2.InsertRequest:
    """The InsertRequest pymilvus' ``insert`` (row form) sends."""
    return Prepare.row_insert_param("c", rows, "", fields_info(schema), enable_dynamic=True)


ROWS: list[dict[str, Any]] = [
    {"id": 1, "ints": [1, 2, 3], "small": [-128, 127], "floats": [0.5, 1.25], "doubles": [0.1],
     "words": ["a", "bcde"], "flags": [True, False], "vec": [0.0, 1.0]},
    {"id": 2, "ints": [], "small": None, "floats": None, "doubles": [], "words": None, "flags": None,
     "vec": [1.0, 0.0], "tag": "x"},
    {"id": 3, "ints": [-(2**63), 2**63 - 1, 0, 7], "small": [], "floats": [], "doubles": [1e300, -2.5],
     "words": ["", "é", "ab"], "flags": [], "vec": [1.0, 1.0]},
]  # fmt: skip
ARRAYS = ("ints", "small", "floats", "doubles", "words", "flags")


# ------------------------------------------------------------------ schema


def test_schema_round_trip_and_describe() -> None:
    schema = domain()
    ints, words = schema.field("ints"), schema.field("words")
    assert (ints.dtype, ints.element_type, ints.max_capacity, ints.nullable) == (
        DataType.ARRAY,
        DataType.INT64,
        4,
        False,
    )
    assert (words.element_type, words.max_capacity, words.max_length) == (DataType.VARCHAR, 3, 4)
    assert ints.arrow_type() == pa.list_(pa.int64())
    assert words.arrow_type() == pa.list_(pa.string())
    assert schema.field("floats").arrow_type() == pa.list_(pa.float32())
    assert CollectionSchema.from_json(schema.to_json()) == schema

    described = {f["name"]: f for f in fields_info(schema)}
    assert described["ints"]["type"] == PmType.ARRAY
    assert described["ints"]["element_type"] == PmType.INT64
    assert described["ints"]["params"]["max_capacity"] == 4
    assert described["words"]["element_type"] == PmType.VARCHAR
    assert described["words"]["params"] == {"max_capacity": 3, "max_length": 4}
    assert described["small"]["nullable"] is True


def test_schema_json_from_before_arrays_still_reads() -> None:
    schema = domain()
    old = json.loads(schema.to_json())
    old["fields"] = [f for f in old["fields"] if f["dtype"] != DataType.ARRAY]
    for f in old["fields"]:
        del f["element_type"], f["max_capacity"]
    back = CollectionSchema.from_json(json.dumps(old))
    assert all(f.element_type == DataType.NONE and f.max_capacity == 0 for f in back.fields)


# ------------------------------------------------------------------ insert


def _table(rows: list[dict[str, Any]]) -> pa.Table:
    schema = domain()
    req = row_request(schema, rows)
    return insert_to_table(req.fields_data, req.num_rows, schema)


def test_row_insert() -> None:
    table = _table(ROWS)
    assert table.schema == domain().arrow_schema(with_timestamp=False)
    for name in ARRAYS:  # every float in ROWS is exact in float32
        assert table.column(name).to_pylist() == [row[name] for row in ROWS], name
    assert json.loads(table.column("$meta").to_pylist()[1]) == {"tag": "x"}


def test_column_insert_with_compact_nulls() -> None:
    schema = domain()
    orm = make_schema()
    entities = [{"name": f.name, "type": f.dtype, "values": [row.get(f.name) for row in ROWS]} for f in orm.fields]
    req = Prepare.batch_insert_param("c", entities, "", fields_info(schema))
    table = insert_to_table(req.fields_data, req.num_rows, schema)
    words = next(fd for fd in req.fields_data if fd.field_name == "words")
    assert list(words.valid_data) == [True, False, True] and len(words.scalars.array_data.data) == 2
    assert table.column("words").to_pylist() == [["a", "bcde"], None, ["", "é", "ab"]]
    assert table.column("ints").to_pylist() == [row["ints"] for row in ROWS]


def _array_field(
    name: str, element_type: int, cells: list[schema_pb2.ScalarField], **kwargs: Any
) -> schema_pb2.FieldData:
    return schema_pb2.FieldData(
        field_name=name,
        type=schema_pb2.Array,
        scalars=schema_pb2.ScalarField(
            array_data=schema_pb2.ArrayArray(element_type=element_type, data=cells)  # type: ignore[arg-type]
        ),
        **kwargs,
    )


def _fields_with(replacement: schema_pb2.FieldData) -> list[schema_pb2.FieldData]:
    req = row_request(domain(), ROWS[:1])
    return [replacement if fd.field_name == replacement.field_name else fd for fd in req.fields_data]


def test_full_length_nullable_column_and_unset_cells() -> None:
    # A placeholder for the null row, and a cell with no slot set (an empty array).
    cells = [schema_pb2.ScalarField(bool_data=schema_pb2.BoolArray(data=[True])), schema_pb2.ScalarField()]
    fd = _array_field("flags", 0, cells, valid_data=[True, False])
    req = row_request(domain(), ROWS[:2])
    fields = [fd if f.field_name == "flags" else f for f in req.fields_data]
    table = insert_to_table(fields, 2, domain())
    assert table.column("flags").to_pylist() == [[True], None]

    fd = _array_field("flags", schema_pb2.Bool, [schema_pb2.ScalarField()])
    table = insert_to_table(_fields_with(fd), 1, domain())
    assert table.column("flags").to_pylist() == [[]]


def _long(*values: int) -> schema_pb2.ScalarField:
    return schema_pb2.ScalarField(long_data=schema_pb2.LongArray(data=list(values)))


def _ints(*values: int) -> schema_pb2.ScalarField:
    return schema_pb2.ScalarField(int_data=schema_pb2.IntArray(data=list(values)))


def _strings(*values: str) -> schema_pb2.ScalarField:
    return schema_pb2.ScalarField(string_data=schema_pb2.StringArray(data=list(values)))


def _floats(*values: float) -> schema_pb2.ScalarField:
    return schema_pb2.ScalarField(float_data=schema_pb2.FloatArray(data=list(values)))


BAD_COLUMNS: list[tuple[str, schema_pb2.FieldData, str]] = [
    (
        "over capacity",
        _array_field("ints", schema_pb2.Int64, [_long(1, 2, 3, 4, 5)]),
        r"the length \(5\) of the array at row 0 of field \(ints\) exceeds max capacity \(4\)",
    ),
    (
        "wrong element slot",
        _array_field("ints", 0, [_strings("a")]),
        r"type mismatch for array field \(ints\): element type is Int64, expected long_data in array 0 "
        r"but got string_data",
    ),
    (
        "int_data for an Int64 array",
        _array_field("ints", 0, [_long(1), _ints(2)]),
        r"expected long_data in array 1 but got int_data",
    ),
    (
        "element type marked differently",
        _array_field("ints", schema_pb2.VarChar, [_long(1)]),
        r"element type mismatch for array field \(ints\): schema element type is Int64, but the data is "
        r"marked VarChar",
    ),
    (
        "not array data",
        schema_pb2.FieldData(
            field_name="ints", scalars=schema_pb2.ScalarField(long_data=schema_pb2.LongArray(data=[1]))
        ),
        r"type mismatch for field \(ints\): schema type is Array, expected array_data in the field data but got "
        r"long_data",
    ),
    (
        "varchar element too long",
        _array_field("words", schema_pb2.VarChar, [_strings("abcd", "ab", "abcde")]),
        r"length of VarChar element of array field words exceeds max length, row number: 0, array index: 2, "
        r"length: 5, max length: 4",
    ),
    (
        "varchar length counts bytes",
        _array_field("words", schema_pb2.VarChar, [_strings("ééé")]),
        r"row number: 0, array index: 0, length: 6, max length: 4",
    ),
    (
        "int8 out of range",
        _array_field("small", schema_pb2.Int8, [_ints(1, 128)]),
        r"the value 128 of field \(small\) is out of range of Int8 \[-128, 127\]",
    ),
    (
        "NaN element",
        _array_field("floats", schema_pb2.Float, [_floats(1.0, float("nan"))]),
        r"float field \(floats\) contains NaN or Inf",
    ),
]


@pytest.mark.parametrize(("fd", "message"), [c[1:] for c in BAD_COLUMNS], ids=[c[0] for c in BAD_COLUMNS])
def test_bad_array_columns_are_refused(fd: schema_pb2.FieldData, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        insert_to_table(_fields_with(fd), 1, domain())


def test_capacity_error_names_the_row_after_nulls() -> None:
    # Compact data: the second value belongs to row 2; the message says row 2.
    fd = _array_field("small", schema_pb2.Int8, [_ints(1), _ints(1, 2, 3, 4)], valid_data=[True, False, True])
    req = row_request(domain(), ROWS)
    fields = [fd if f.field_name == "small" else f for f in req.fields_data]
    with pytest.raises(InvalidArgument, match=r"the length \(4\) of the array at row 2 of field \(small\)"):
        insert_to_table(fields, 3, domain())


def test_missing_non_nullable_array_is_refused_and_nullable_one_is_null() -> None:
    schema = domain()
    req = row_request(schema, ROWS[:1])
    without_small = [fd for fd in req.fields_data if fd.field_name != "small"]
    assert insert_to_table(without_small, 1, schema).column("small").to_pylist() == [None]
    without_ints = [fd for fd in req.fields_data if fd.field_name != "ints"]
    with pytest.raises(InvalidArgument, match="Insert missed an field `ints`"):
        insert_to_table(without_ints, 1, schema)


# ------------------------------------------------------------------ results


def test_result_columns_carry_element_type_and_placeholders() -> None:
    schema = domain()
    table = _table(ROWS)
    fd = column_to_field_data(schema.field("words"), table.column("words"))
    assert fd.type == schema_pb2.Array and fd.field_name == "words"
    assert fd.scalars.array_data.element_type == schema_pb2.VarChar
    assert list(fd.valid_data) == [True, False, True]
    cells = fd.scalars.array_data.data
    assert [cell.WhichOneof("data") for cell in cells] == ["string_data"] * 3
    assert [list(cell.string_data.data) for cell in cells] == [["a", "bcde"], [], ["", "é", "ab"]]
    ints = column_to_field_data(schema.field("ints"), table.column("ints"))
    assert not ints.valid_data
    assert [list(c.long_data.data) for c in ints.scalars.array_data.data] == [row["ints"] for row in ROWS]


def test_query_results_read_back_by_pymilvus(connect: Any) -> None:
    handler, fake = connect(make_schema())
    handler.insert_rows("c", ROWS)
    got = handler.query("c", "", output_fields=["*"])
    assert [r["id"] for r in got] == [1, 2, 3]
    for row, want in zip(got, ROWS, strict=True):
        assert {name: row[name] for name in ARRAYS} == {name: want[name] for name in ARRAYS}
    assert got[1]["tag"] == "x"
    only = handler.query("c", "", output_fields=["words"])
    assert [r["words"] for r in only] == [["a", "bcde"], None, ["", "é", "ab"]]


def test_search_results_carry_arrays(connect: Any) -> None:
    handler, _ = connect(make_schema())
    handler.insert_rows("c", ROWS)
    hits = handler.search(
        "c", "vec", {"metric_type": "L2"}, limit=2, data=[[1.0, 1.0]], output_fields=["ints", "flags"]
    )
    assert [h["id"] for h in hits[0]] == [3, 1]
    assert hits[0][0]["entity"]["ints"] == ROWS[2]["ints"]
    assert hits[0][1]["entity"]["flags"] == [True, False]


def test_empty_result_column() -> None:
    schema = domain()
    fields = table_to_fields_data(
        schema.arrow_schema(with_timestamp=False).empty_table(), schema, ["ints"], include_pk=True
    )
    ints = next(fd for fd in fields if fd.field_name == "ints")
    assert ints.scalars.WhichOneof("data") == "array_data" and len(ints.scalars.array_data.data) == 0
