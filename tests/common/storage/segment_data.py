"""Schemas covering every stored type, and row tables that fit them, for the storage tests."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa

from common.schema import DYNAMIC_FIELD_NAME, TIMESTAMP_COLUMN, CollectionSchema, DataType, FieldSchema

DIM = 4


def full_schema(*, pk_type: DataType = DataType.INT64) -> CollectionSchema:
    """Every supported data type, nullable scalars, two ARRAY and two vector fields, and ``$meta``."""
    pk = FieldSchema(field_id=100, name="pk", dtype=pk_type, is_primary=True, max_length=64)
    fields = (
        FieldSchema(field_id=101, name="flag", dtype=DataType.BOOL, nullable=True),
        FieldSchema(field_id=102, name="i8", dtype=DataType.INT8),
        FieldSchema(field_id=103, name="vec", dtype=DataType.FLOAT_VECTOR, dim=DIM),
        FieldSchema(field_id=104, name="i16", dtype=DataType.INT16, nullable=True),
        FieldSchema(field_id=105, name="i32", dtype=DataType.INT32),
        FieldSchema(field_id=106, name="i64", dtype=DataType.INT64, nullable=True),
        FieldSchema(field_id=107, name="f32", dtype=DataType.FLOAT),
        FieldSchema(field_id=108, name="f64", dtype=DataType.DOUBLE, nullable=True),
        FieldSchema(field_id=109, name="name", dtype=DataType.VARCHAR, max_length=32, nullable=True),
        FieldSchema(field_id=110, name="doc", dtype=DataType.JSON, nullable=True),
        FieldSchema(field_id=111, name="vec2", dtype=DataType.FLOAT_VECTOR, dim=2),
        FieldSchema(
            field_id=113,
            name="tags",
            dtype=DataType.ARRAY,
            element_type=DataType.VARCHAR,
            max_capacity=4,
            max_length=16,
            nullable=True,
        ),
        FieldSchema(field_id=114, name="nums", dtype=DataType.ARRAY, element_type=DataType.INT64, max_capacity=4),
        FieldSchema(field_id=112, name=DYNAMIC_FIELD_NAME, dtype=DataType.JSON, is_dynamic=True),
    )
    return CollectionSchema(name="all_types", fields=(fields[0], pk, *fields[1:]), enable_dynamic_field=True)


def pk_array(schema: CollectionSchema, start: int, rows: int) -> pa.Array:
    keys = np.arange(start, start + rows, dtype=np.int64)
    if schema.primary_field.dtype == DataType.VARCHAR:
        return pa.array([f"pk-{k}-ü" for k in keys], pa.string())
    return pa.array(keys, pa.int64())


def rows_table(schema: CollectionSchema, *, start: int, rows: int, ts0: int = 1000) -> pa.Table:
    """``rows`` rows with keys from ``start``, nulls every few rows, ``_ts`` increasing from ``ts0``."""
    rng = np.random.default_rng(start)
    idx = np.arange(rows)
    null_every_3 = idx % 3 == 0
    columns: dict[str, pa.Array] = {}
    for f in schema.fields:
        t = f.arrow_type()
        if f.is_primary:
            columns[f.name] = pk_array(schema, start, rows)
        elif f.dtype == DataType.FLOAT_VECTOR:
            flat = rng.standard_normal(rows * f.dim).astype(np.float32)
            columns[f.name] = pa.FixedSizeListArray.from_arrays(pa.array(flat), f.dim)
        elif f.dtype == DataType.BOOL:
            columns[f.name] = pa.array(idx % 2 == 0, mask=null_every_3, type=t)
        elif f.dtype.is_integer:
            info = np.iinfo(t.to_pandas_dtype())
            values = np.where(idx % 2 == 0, info.min, info.max) if rows else idx
            columns[f.name] = pa.array(values, mask=null_every_3 if f.nullable else None, type=t)
        elif f.dtype.is_floating:
            columns[f.name] = pa.array(rng.standard_normal(rows), mask=null_every_3 if f.nullable else None, type=t)
        elif f.dtype == DataType.VARCHAR:
            columns[f.name] = pa.array([f"név {i} ✓" for i in idx], mask=null_every_3, type=t)
        elif f.dtype == DataType.ARRAY and f.element_type == DataType.VARCHAR:
            cells = [[f"t{j}-ü" for j in range(i % 5)] for i in idx]  # 0..4 elements
            columns[f.name] = pa.array(cells, mask=null_every_3 if f.nullable else None, type=t)
        elif f.dtype == DataType.ARRAY:
            cells = [[int(i) * 10 + j for j in range(i % 5)] for i in idx]
            columns[f.name] = pa.array(cells, mask=null_every_3 if f.nullable else None, type=t)
        elif f.is_dynamic:
            columns[f.name] = pa.array([json.dumps({"extra": int(i)}) if i % 2 else None for i in idx], t)
        elif f.dtype == DataType.JSON:
            docs = [json.dumps({"i": int(i), "tags": ["a", "b"], "nested": {"x": 1.5}}) for i in idx]
            columns[f.name] = pa.array(docs, mask=null_every_3, type=t)
        else:  # pragma: no cover - full_schema only uses the types above
            raise AssertionError(f.dtype)
    columns[TIMESTAMP_COLUMN] = pa.array(ts0 + idx, pa.uint64())
    return pa.table(columns, schema=schema.arrow_schema())
