"""GrowingStore.add_fields: rows stored before a field was added carry its default value or null.

Every vector kind an added field may have (float, binary, sparse, float16) and scalars with and
without a default: old rows read the fill, rows inserted after it their values; a filter on the
new field sees the fill; searching the new vector field never returns an old row.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pyarrow as pa

from common.expr import parse_filter
from common.schema import TIMESTAMP_COLUMN, CollectionSchema, DataType, FieldSchema
from segcore.segments import GrowingStore
from segcore.segments.readmask import read_mask

BASE = CollectionSchema(
    name="c",
    fields=(
        FieldSchema(field_id=100, name="pk", dtype=DataType.INT64, is_primary=True),
        FieldSchema(field_id=101, name="vec", dtype=DataType.FLOAT_VECTOR, dim=2),
    ),
)
ADDED = (
    FieldSchema(field_id=102, name="n", dtype=DataType.INT64, nullable=True, added=True),
    FieldSchema(field_id=103, name="d", dtype=DataType.DOUBLE, nullable=True, default_value=1.5, added=True),
    FieldSchema(field_id=104, name="fv", dtype=DataType.FLOAT_VECTOR, dim=3, nullable=True, added=True),
    FieldSchema(field_id=105, name="bv", dtype=DataType.BINARY_VECTOR, dim=16, nullable=True, added=True),
    FieldSchema(field_id=106, name="sv", dtype=DataType.SPARSE_FLOAT_VECTOR, nullable=True, added=True),
    FieldSchema(field_id=107, name="hv", dtype=DataType.FLOAT16_VECTOR, dim=2, nullable=True, added=True),
)
NEW = dataclasses.replace(BASE, fields=(*BASE.fields, *ADDED), version=1)


def _batch(schema: CollectionSchema, keys: list[int], ts: int) -> pa.Table:
    n = len(keys)
    cols: dict[str, pa.Array] = {
        "pk": pa.array(keys, pa.int64()),
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(np.ones(2 * n, np.float32)), 2),
    }
    if schema.has_field("n"):
        cols["n"] = pa.array([k * 10 for k in keys], pa.int64())
        cols["d"] = pa.array([float(k) for k in keys], pa.float64())
        cols["fv"] = pa.FixedSizeListArray.from_arrays(pa.array(np.full(3 * n, 2, np.float32)), 3)
        cols["bv"] = pa.array([b"\xff\x00"] * n, pa.binary(2))
        cols["sv"] = pa.array([np.array([1], "<u4").tobytes() + np.array([0.5], "<f4").tobytes()] * n, pa.binary())
        cols["hv"] = pa.array([np.ones(2, np.float16).tobytes()] * n, pa.binary(4))
    cols[TIMESTAMP_COLUMN] = pa.array([ts] * n, pa.uint64())
    return pa.table(cols).cast(schema.arrow_schema())


def test_old_rows_read_the_fill_and_new_rows_their_values() -> None:
    store = GrowingStore(BASE)
    store.apply_insert(_batch(BASE, [1, 2], 10))
    store.add_fields(NEW)
    store.apply_insert(_batch(NEW, [3], 20))
    names = [f.name for f in ADDED]
    rows = store.query(read_ts=30, output_fields=names).to_pylist()
    assert [r["n"] for r in rows] == [None, None, 30]
    assert [r["d"] for r in rows] == [1.5, 1.5, 3.0]
    for name in ("fv", "bv", "sv", "hv"):
        assert [r[name] is None for r in rows] == [True, True, False], name
    assert store.table().schema == NEW.arrow_schema()
    # Filters see the fill: the new rows only, or the old ones.
    expr = parse_filter("n is null", NEW)
    assert store.query(read_ts=30, mask=read_mask(store, expr=expr, expire_before=0)).column("pk").to_pylist() == [1, 2]
    expr = parse_filter("d == 1.5", NEW)
    assert store.query(read_ts=30, mask=read_mask(store, expr=expr, expire_before=0)).column("pk").to_pylist() == [1, 2]
    # A null vector is never a hit.
    hits = store.search(field="fv", vectors=np.ones((1, 3), np.float32), metric="L2", topk=10, read_ts=30)
    assert hits.column("pk").to_pylist() == [3]
    hits = store.search(field="bv", vectors=np.array([[255, 0]], np.uint8), metric="HAMMING", topk=10, read_ts=30)
    assert hits.column("pk").to_pylist() == [3]


def test_an_empty_store_takes_the_fields_too() -> None:
    store = GrowingStore(BASE)
    store.add_fields(NEW)
    assert store.query(read_ts=1, output_fields=["n", "fv"]).column_names == ["pk", "n", "fv"]
    store.apply_insert(_batch(NEW, [4], 5))
    assert store.query(read_ts=5, output_fields=["n"]).column("n").to_pylist() == [40]
