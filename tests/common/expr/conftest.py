"""Schemas and table builders shared by the filter-expression tests."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa
import pytest

from common.schema import (
    DYNAMIC_FIELD_NAME,
    TIMESTAMP_COLUMN,
    CollectionSchema,
    DataType,
    FieldSchema,
)

TableBuilder = Callable[[Sequence[dict[str, Any]]], pa.Table]


def _fields() -> tuple[FieldSchema, ...]:
    return (
        FieldSchema(field_id=100, name="id", dtype=DataType.INT64, is_primary=True),
        FieldSchema(field_id=101, name="age", dtype=DataType.INT32, nullable=True),
        FieldSchema(field_id=102, name="small", dtype=DataType.INT8, nullable=True),
        FieldSchema(field_id=103, name="score", dtype=DataType.DOUBLE, nullable=True),
        FieldSchema(field_id=104, name="ratio", dtype=DataType.FLOAT, nullable=True),
        FieldSchema(field_id=105, name="name", dtype=DataType.VARCHAR, nullable=True),
        FieldSchema(field_id=106, name="active", dtype=DataType.BOOL, nullable=True),
        FieldSchema(field_id=107, name="meta", dtype=DataType.JSON, nullable=True),
        FieldSchema(field_id=108, name="vec", dtype=DataType.FLOAT_VECTOR, dim=2),
        # ARRAY fields: id 109 stays the dynamic field's.
        FieldSchema(
            field_id=110, name="ints", dtype=DataType.ARRAY, element_type=DataType.INT64, max_capacity=4, nullable=True
        ),
        FieldSchema(
            field_id=111, name="bytes8", dtype=DataType.ARRAY, element_type=DataType.INT8, max_capacity=4, nullable=True
        ),
        FieldSchema(
            field_id=112,
            name="floats",
            dtype=DataType.ARRAY,
            element_type=DataType.FLOAT,
            max_capacity=4,
            nullable=True,
        ),
        FieldSchema(
            field_id=113,
            name="words",
            dtype=DataType.ARRAY,
            element_type=DataType.VARCHAR,
            max_capacity=4,
            max_length=8,
            nullable=True,
        ),
        FieldSchema(
            field_id=114, name="flags", dtype=DataType.ARRAY, element_type=DataType.BOOL, max_capacity=4, nullable=True
        ),
    )


def build_schema(*, dynamic: bool) -> CollectionSchema:
    fields = _fields()
    if dynamic:
        fields += (FieldSchema(field_id=109, name=DYNAMIC_FIELD_NAME, dtype=DataType.JSON, is_dynamic=True),)
    return CollectionSchema(name="c", fields=fields, enable_dynamic_field=dynamic)


def build_table(schema: CollectionSchema, rows: Sequence[dict[str, Any]]) -> pa.Table:
    """Rows as stored: JSON fields as JSON text, unknown keys in ``$meta``.

    A key that is absent from a row is null; for ``$meta`` a row without
    dynamic keys stores null, unless it sets ``$meta`` itself.
    """
    columns: dict[str, pa.Array] = {}
    for field in schema.fields:
        values: list[Any] = []
        for row in rows:
            if field.is_dynamic:
                extra = {k: v for k, v in row.items() if not schema.has_field(k)}
                value = row.get(field.name, extra or None)
            else:
                value = row.get(field.name)
            if field.dtype is DataType.JSON and value is not None:
                value = json.dumps(value)
            if field.dtype is DataType.FLOAT_VECTOR:
                value = [0.0] * field.dim
            values.append(value)
        columns[field.name] = pa.array(values, type=field.arrow_type())
    columns[TIMESTAMP_COLUMN] = pa.array(range(len(rows)), type=pa.uint64())
    return pa.table(columns)


@pytest.fixture(scope="session")
def schema() -> CollectionSchema:
    """The test collection with the dynamic field enabled."""
    return build_schema(dynamic=True)


@pytest.fixture(scope="session")
def static_schema() -> CollectionSchema:
    """The test collection without a dynamic field."""
    return build_schema(dynamic=False)


@pytest.fixture(scope="session")
def table_of(schema: CollectionSchema) -> TableBuilder:
    """Builds a table of ``schema`` from row dicts."""
    return lambda rows: build_table(schema, rows)
