"""``json_path`` texts become the same ``JsonPath`` the filter binder makes of them (the planner matches
filters to indexes by it), without the filter grammar (Spark jobs cannot read it from their zip)."""

from __future__ import annotations

import pytest

from common.errors import InvalidArgument
from common.expr import IsNull, parse_filter
from common.schema import CollectionSchema, DataType, FieldSchema
from segcore.index.scalar.spec import parse_json_path

SCHEMA = CollectionSchema(
    name="c",
    fields=(
        FieldSchema(field_id=100, name="id", dtype=DataType.INT64, is_primary=True),
        FieldSchema(field_id=101, name="meta", dtype=DataType.JSON),
        FieldSchema(field_id=102, name="$meta", dtype=DataType.JSON, is_dynamic=True),
    ),
    enable_dynamic_field=True,
)


@pytest.mark.parametrize(
    ("field", "text"),
    [("meta", "meta"), ("meta", 'meta["a"]'), ("meta", "meta['a'][0][\"b c\"]"), ("meta", 'meta [ "x\\"y" ] [ 2 ]'),
     ("$meta", "color"), ("$meta", 'color["x"][1]'), ("$meta", '$meta["k"]')],
)
def test_json_path_as_the_binder_reads_it(field: str, text: str) -> None:
    bound = parse_filter(f"{text} is null", SCHEMA)
    assert isinstance(bound, IsNull)
    assert parse_json_path(SCHEMA, SCHEMA.field(field), text) == bound.operand


@pytest.mark.parametrize(("field", "text"), [("meta", 'meta["a"'), ("meta", "id"), ("meta", 'other["a"]'),
                                             ("meta", "meta.a")])
def test_bad_json_path_refused(field: str, text: str) -> None:
    with pytest.raises(InvalidArgument, match="json_path"):
        parse_json_path(SCHEMA, SCHEMA.field(field), text)
