"""The proxy's checks of AddCollectionField and AlterCollectionField requests (Milvus 2.6's order and words)."""

from __future__ import annotations

import pytest
from pymilvus.grpc_gen import common_pb2, schema_pb2

from common.errors import InvalidArgument
from common.schema import CollectionSchema, DataType, FieldSchema
from proxy.convert.added_field import added_field_from_proto, field_change

SCHEMA = CollectionSchema(
    name="c",
    fields=(
        FieldSchema(field_id=100, name="id", dtype=DataType.INT64, is_primary=True),
        FieldSchema(field_id=101, name="v", dtype=DataType.FLOAT_VECTOR, dim=4),
        FieldSchema(field_id=102, name="s", dtype=DataType.VARCHAR, max_length=8),
    ),
)


def _pb(name: str, dtype: int, **kw: object) -> schema_pb2.FieldSchema:
    return schema_pb2.FieldSchema(name=name, data_type=dtype, **kw)  # type: ignore[arg-type]


def test_an_added_field_keeps_its_definition() -> None:
    pb = _pb("n", DataType.INT64, nullable=True, description="d")
    pb.default_value.long_data = 5
    f = added_field_from_proto(pb, SCHEMA)
    assert (f.name, f.dtype, f.nullable, f.default_value, f.description) == ("n", DataType.INT64, True, 5, "d")
    vec = added_field_from_proto(
        _pb("w", DataType.FLOAT_VECTOR, nullable=True, type_params=[common_pb2.KeyValuePair(key="dim", value="3")]),
        SCHEMA,
    )
    assert (vec.dim, vec.nullable) == (3, True)


@pytest.mark.parametrize(
    ("pb", "message"),
    [
        (_pb("n", 0, nullable=True), "invalid parameter[expected=valid field][actual=field data type: None is not supported]"),
        (_pb("n", 99, nullable=True),
         "invalid parameter[expected=valid field][actual=field data type: 99 is not supported]"),
        (_pb("Timestamp", DataType.INT64, nullable=True), "not support to add system field, field name = Timestamp"),
        (_pb("n", DataType.INT64, nullable=True, autoID=True),
         "only primary field can speficy AutoID with true, field name = n"),
        (_pb("w", DataType.FLOAT_VECTOR, nullable=True), "vector field must have dimension specified, field name = w"),
        (_pb("n", DataType.INT64), "added field must be nullable, please check it, field name = n"),
        # The order: a system name is refused before nullable is asked for.
        (_pb("RowID", DataType.INT64), "not support to add system field, field name = RowID"),
    ],
)
def test_added_field_rules(pb: schema_pb2.FieldSchema, message: str) -> None:
    with pytest.raises(InvalidArgument) as err:
        added_field_from_proto(pb, SCHEMA)
    assert err.value.message == message


def test_the_field_count_is_checked_first() -> None:
    many = CollectionSchema(
        name="c",
        fields=tuple(FieldSchema(field_id=100 + i, name=f"f{i}", dtype=DataType.INT64) for i in range(64)),
    )
    with pytest.raises(InvalidArgument, match="The number of fields has reached the maximum value 64"):
        added_field_from_proto(_pb("n", DataType.INT64), many)


def test_field_change_renames_mmap_enabled_and_drops_only_it() -> None:
    change = field_change(SCHEMA, "s", {"mmap_enabled": "true", "max_length": "16"}, ["mmap_enabled"])
    assert change.properties == {"mmap.enabled": "true", "max_length": "16"}
    assert change.delete_keys == ["mmap.enabled"] and change.touches_mmap
    assert not field_change(SCHEMA, "s", {"max_length": "16"}, []).touches_mmap
    with pytest.raises(InvalidArgument) as err:
        field_change(SCHEMA, "s", {}, ["max_length"])
    assert err.value.message == "max_length is not allowed to drop in collection field param"
