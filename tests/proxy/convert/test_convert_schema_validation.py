"""CreateCollection schema validation: every schema Milvus refuses is refused with Milvus's message, and the
default values of every type it accepts are kept."""

from __future__ import annotations

from typing import Any

import pytest
from pymilvus.grpc_gen import common_pb2, schema_pb2

from common.errors import InvalidArgument
from proxy.convert import schema_from_proto, schema_to_proto


def _field(name: str, dtype: int, **kwargs: Any) -> schema_pb2.FieldSchema:
    params = kwargs.pop("params", {})
    return schema_pb2.FieldSchema(
        name=name,
        data_type=dtype,  # type: ignore[arg-type]
        type_params=[common_pb2.KeyValuePair(key=k, value=str(v)) for k, v in params.items()],
        **kwargs,
    )


def _pk(**kwargs: Any) -> schema_pb2.FieldSchema:
    return _field("id", schema_pb2.Int64, is_primary_key=True, **kwargs)


def _vec(dim: Any = 4, name: str = "v") -> schema_pb2.FieldSchema:
    return _field(name, schema_pb2.FloatVector, params={"dim": dim})


def _schema(*fields: schema_pb2.FieldSchema, **kwargs: Any) -> schema_pb2.CollectionSchema:
    return schema_pb2.CollectionSchema(name="c", fields=list(fields), **kwargs)


BAD_SCHEMAS: list[tuple[str, schema_pb2.CollectionSchema, str]] = [
    ("no pk", _schema(_vec()), "primary key is not specified"),
    (
        "two pks",
        _schema(_pk(), _field("k2", schema_pb2.Int64, is_primary_key=True), _vec()),
        "more than one primary key, field names: id, k2",
    ),
    (
        "float pk",
        _schema(_field("id", schema_pb2.Float, is_primary_key=True), _vec()),
        "primary key should be Int64 or VarChar, but field `id` is Float",
    ),
    ("nullable pk", _schema(_pk(nullable=True), _vec()), "primary field not support null"),
    (
        "pk default",
        _schema(_pk(default_value=schema_pb2.ValueField(long_data=1)), _vec()),
        "primary key can't be with default value",
    ),
    (
        "varchar without max_length",
        _schema(_pk(), _field("s", schema_pb2.VarChar), _vec()),
        r"type param\(max_length\) should be specified for the field\(s\) of collection c",
    ),
    (
        "max_length 0",
        _schema(_pk(), _field("s", schema_pb2.VarChar, params={"max_length": 0}), _vec()),
        r"field\(s\) should be in \(0, 65535\], but got 0",
    ),
    (
        "max_length too big",
        _schema(_pk(), _field("s", schema_pb2.VarChar, params={"max_length": 65536}), _vec()),
        "but got 65536 instead",
    ),
    (
        "max_length not a number",
        _schema(_pk(), _field("s", schema_pb2.VarChar, params={"max_length": "x"}), _vec()),
        "max_length of field s must be an integer",
    ),
    (
        "vector without dim",
        _schema(_pk(), _field("v", schema_pb2.FloatVector)),
        "dimension is not defined in field type params of field v",
    ),
    ("dim 0", _schema(_pk(), _vec(0)), "invalid dimension: 0 of field v"),
    ("dim too big", _schema(_pk(), _vec(32769)), "should be in range 1 ~ 32768"),
    ("dim not a number", _schema(_pk(), _vec("four")), "dim of field v must be an integer"),
    ("no vector", _schema(_pk()), "schema does not contain vector field"),
    (
        "duplicate names",
        _schema(_pk(), _vec(), _vec(name="v")),
        "duplicated field name v found",
    ),
    ("name starts with digit", _schema(_pk(), _vec(name="1v")), "first character"),
    ("name with dash", _schema(_pk(), _vec(name="v-1")), "only contain numbers, letters"),
    ("empty name", _schema(_pk(), _vec(name="")), "field name should not be empty"),
    ("long name", _schema(_pk(), _vec(name="v" * 256)), "must be less than 255"),
    ("system name", _schema(_pk(), _vec(name="_ts")), "reserved by the system"),
    (
        "array without element type",
        _schema(_pk(), _vec(), _field("tags", schema_pb2.Array, params={"max_capacity": 4})),
        "element data type None is not valid: set element_type for array field `tags`",
    ),
    (
        "array of JSON",
        _schema(
            _pk(),
            _vec(),
            _field("tags", schema_pb2.Array, element_type=schema_pb2.JSON, params={"max_capacity": 4}),
        ),
        "element type JSON is not supported for array field `tags`",
    ),
    (
        "array of arrays",
        _schema(
            _pk(),
            _vec(),
            _field("tags", schema_pb2.Array, element_type=schema_pb2.Array, params={"max_capacity": 4}),
        ),
        "element type Array is not supported for array field `tags`",
    ),
    (
        "array of vectors",
        _schema(
            _pk(),
            _vec(),
            _field("tags", schema_pb2.Array, element_type=schema_pb2.FloatVector, params={"max_capacity": 4}),
        ),
        "element type FloatVector is not supported for array field `tags`",
    ),
    (
        "array without max_capacity",
        _schema(_pk(), _vec(), _field("tags", schema_pb2.Array, element_type=schema_pb2.Int64)),
        r"type param\(max_capacity\) should be specified for array field tags of collection c",
    ),
    (
        "array capacity 0",
        _schema(
            _pk(), _vec(), _field("tags", schema_pb2.Array, element_type=schema_pb2.Int64, params={"max_capacity": 0})
        ),
        r"the maximum capacity specified for a Array should be in \(0, 4096\], but got 0",
    ),
    (
        "array capacity 4097",
        _schema(
            _pk(),
            _vec(),
            _field("tags", schema_pb2.Array, element_type=schema_pb2.Int64, params={"max_capacity": 4097}),
        ),
        r"should be in \(0, 4096\], but got 4097 for field tags",
    ),
    (
        "array capacity not a number",
        _schema(
            _pk(),
            _vec(),
            _field("tags", schema_pb2.Array, element_type=schema_pb2.Int64, params={"max_capacity": "many"}),
        ),
        "the value for max_capacity of field tags must be an integer",
    ),
    (
        "varchar array without max_length",
        _schema(
            _pk(), _vec(), _field("tags", schema_pb2.Array, element_type=schema_pb2.VarChar, params={"max_capacity": 4})
        ),
        r"type param\(max_length\) should be specified for the field\(tags\)",
    ),
    (
        "array primary key",
        _schema(
            _field(
                "id", schema_pb2.Array, element_type=schema_pb2.Int64, is_primary_key=True, params={"max_capacity": 4}
            ),
            _vec(),
        ),
        "the data type of primary key should be Int64 or VarChar, but field `id` is Array",
    ),
    (
        "array partition key",
        _schema(
            _pk(),
            _vec(),
            _field(
                "tags",
                schema_pb2.Array,
                element_type=schema_pb2.Int64,
                is_partition_key=True,
                params={"max_capacity": 4},
            ),
        ),
        "the data type of partition key should be Int64 or VarChar, but field `tags` is Array",
    ),
    (
        "array default value",
        _schema(
            _pk(),
            _vec(),
            _field(
                "tags",
                schema_pb2.Array,
                element_type=schema_pb2.Int64,
                default_value=schema_pb2.ValueField(long_data=1),
                params={"max_capacity": 4},
            ),
        ),
        "ARRAY type not support default value, field `tags`",
    ),
    (
        "string",
        _schema(_pk(), _vec(), _field("s", schema_pb2.String)),
        "data type String is not supported yet",
    ),
    (
        "explicit dynamic field",
        _schema(_pk(), _vec(), _field("m", schema_pb2.JSON, is_dynamic=True)),
        "cannot explicitly set a field as a dynamic field",
    ),
    (
        "auto id on a non-pk",
        _schema(_pk(), _vec(), _field("n", schema_pb2.Int64, autoID=True)),
        "only primary field can specify AutoID with true, field name = n",
    ),
    (
        "two partition keys",
        _schema(
            _pk(),
            _vec(),
            _field("a", schema_pb2.Int64, is_partition_key=True),
            _field("b", schema_pb2.Int64, is_partition_key=True),
        ),
        "more than one partition key",
    ),
    (
        "partition key on pk",
        _schema(_pk(is_partition_key=True), _vec()),
        "partition key field must not be primary field",
    ),
    (
        "float partition key",
        _schema(_pk(), _vec(), _field("a", schema_pb2.Float, is_partition_key=True)),
        "partition key should be Int64 or VarChar",
    ),
    (
        "vector default value",
        _schema(_pk(), _field("v", schema_pb2.FloatVector, params={"dim": 4}, nullable=True,
                              default_value={"int_data": 1})),
        "vector type not support default value",
    ),
    (
        "default type mismatch",
        _schema(_pk(), _vec(), _field("n", schema_pb2.Int64, default_value={"string_data": "x"})),
        r"type \(Int64\) of field \(n\) is not equal to the type\(string_data\) of default_value",
    ),
    (
        "int8 default out of range",
        _schema(_pk(), _vec(), _field("n", schema_pb2.Int8, default_value={"long_data": 300})),
        r"default value 300 of field \(n\) is out of range of Int8",
    ),
    (
        "varchar default too long",
        _schema(
            _pk(),
            _vec(),
            _field(
                "s",
                schema_pb2.VarChar,
                params={"max_length": 2},
                default_value={"string_data": "abc"},
            ),
        ),
        r"the length \(3\) of string exceeds max length \(2\)",
    ),
    (
        "json default not json",
        _schema(_pk(), _vec(), _field("j", schema_pb2.JSON, default_value={"bytes_data": b"{"})),
        "not valid JSON",
    ),
    (
        "json default nested too deep",
        _schema(
            _pk(), _vec(), _field("j", schema_pb2.JSON, default_value={"bytes_data": b"[" * 100_000 + b"]" * 100_000})
        ),
        r"default value of JSON field \(j\): JSON value is nested more than 256 levels deep",
    ),
    (
        "duplicate type param",
        _schema(
            _pk(),
            schema_pb2.FieldSchema(
                name="v",
                data_type=schema_pb2.FloatVector,
                type_params=[
                    common_pb2.KeyValuePair(key="dim", value="4"),
                    common_pb2.KeyValuePair(key="dim", value="8"),
                ],
            ),
        ),
        "duplicated type param key dim",
    ),
    (
        "functions",
        _schema(_pk(), _vec(), functions=[schema_pb2.FunctionSchema(name="embed", type=schema_pb2.FunctionType.TextEmbedding)]),
        "function type TextEmbedding is not supported yet",
    ),
    (
        "namespace",
        _schema(_pk(), _vec(), enable_namespace=True),
        "namespaces are not supported yet",
    ),
    (
        "too many fields",
        _schema(_pk(), _vec(), *[_field(f"f{i}", schema_pb2.Int64) for i in range(63)]),
        "maximum field's number should be limited to 64",
    ),
    (
        "too many vector fields",
        _schema(_pk(), *[_vec(name=f"v{i}") for i in range(5)]),
        "maximum vector field's number should be limited to 4",
    ),
]


@pytest.mark.parametrize(("pb", "message"), [c[1:] for c in BAD_SCHEMAS], ids=[c[0] for c in BAD_SCHEMAS])
def test_invalid_schemas_are_refused(pb: schema_pb2.CollectionSchema, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        schema_from_proto(pb, collection_name="c")


def test_collection_name_must_match_schema_name() -> None:
    pb = _schema(_pk(), _vec())
    with pytest.raises(InvalidArgument, match=r"collection name \(other\) does not match"):
        schema_from_proto(pb, collection_name="other")
    pb.name = ""
    assert schema_from_proto(pb, collection_name="other").name == "other"


def test_accepted_defaults_of_every_type() -> None:
    pb = _schema(
        _pk(),
        _vec(),
        _field("a", schema_pb2.Int32, default_value={"int_data": 7}),
        _field("b", schema_pb2.Double, default_value={"float_data": 0.5}),
        _field("j", schema_pb2.JSON, default_value={"bytes_data": b'{"k": 1}'}),
    )
    schema = schema_from_proto(pb, collection_name="c")
    assert schema.field("a").default_value == 7
    assert schema.field("b").default_value == 0.5
    assert schema.field("j").default_value == '{"k": 1}'
    back = {f.name: f for f in schema_to_proto(schema).fields}
    assert back["a"].default_value.long_data == 7
    assert back["b"].default_value.double_data == 0.5
    assert back["j"].default_value.bytes_data == b'{"k": 1}'
