"""Column groups and Parquet field ids."""

from __future__ import annotations

import pytest

from common.errors import InvalidArgument
from common.schema import TIMESTAMP_COLUMN, CollectionSchema, DataType, FieldSchema
from common.storage.columns import (
    FIELD_ID_KEY,
    TIMESTAMP_FIELD_ID,
    ColumnGroup,
    column_groups,
    field_ids,
    group_arrow_schema,
    group_of,
)
from tests.common.storage.segment_data import full_schema


def test_group_zero_is_pk_ts_then_scalars_and_each_vector_has_its_own_group() -> None:
    groups = column_groups(full_schema())
    assert groups == [
        ColumnGroup(
            group_id=0,
            fields=(
                "pk",
                TIMESTAMP_COLUMN,
                "flag",
                "i8",
                "i16",
                "i32",
                "i64",
                "f32",
                "f64",
                "name",
                "doc",
                "tags",
                "nums",
                "$meta",
            ),
        ),
        ColumnGroup(group_id=103, fields=("vec",)),
        ColumnGroup(group_id=111, fields=("vec2",)),
    ]
    assert group_of(groups, "vec2").group_id == 111
    assert group_of(groups, "$meta").group_id == 0
    with pytest.raises(InvalidArgument, match="nope"):
        group_of(groups, "nope")


def test_group_schemas_carry_field_ids() -> None:
    schema = full_schema()
    group0 = column_groups(schema)[0]
    arrow = group_arrow_schema(schema, group0)
    ids = {f.name: int(f.metadata[FIELD_ID_KEY]) for f in arrow}
    assert ids["pk"] == 100
    assert ids[TIMESTAMP_COLUMN] == TIMESTAMP_FIELD_ID == 1
    assert ids["$meta"] == 112
    assert field_ids(schema)["vec2"] == 111
    assert arrow.field("pk").type == schema.arrow_schema().field("pk").type


@pytest.mark.parametrize(
    "fields",
    [
        (
            FieldSchema(field_id=1, name="pk", dtype=DataType.INT64, is_primary=True),
            FieldSchema(field_id=101, name="v", dtype=DataType.FLOAT_VECTOR, dim=2),
        ),
        (
            FieldSchema(field_id=100, name="pk", dtype=DataType.INT64, is_primary=True),
            FieldSchema(field_id=100, name="v", dtype=DataType.FLOAT_VECTOR, dim=2),
        ),
    ],
)
def test_reserved_or_duplicate_field_ids_are_refused(fields: tuple[FieldSchema, ...]) -> None:
    with pytest.raises(InvalidArgument, match="reserved|more than one"):
        column_groups(CollectionSchema(name="c", fields=fields))
