"""``read_mask``: the rows a read may return besides MVCC visibility (its filter, the collection's TTL)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from common.expr import parse_filter
from common.schema import TIMESTAMP_COLUMN, CollectionSchema, DataType, FieldSchema
from segcore.index.scalar.index import build_scalar_index
from segcore.index.scalar.planner import IndexedFilter
from segcore.index.scalar.spec import scalar_index_spec
from segcore.segments.growing import GrowingStore
from segcore.segments.readmask import indexed_rows, read_mask

SCHEMA = CollectionSchema(
    name="c",
    fields=(
        FieldSchema(field_id=100, name="id", dtype=DataType.INT64, is_primary=True),
        FieldSchema(field_id=101, name="tag", dtype=DataType.INT64),
        FieldSchema(field_id=102, name="v", dtype=DataType.FLOAT_VECTOR, dim=2),
    ),
)


def _store() -> GrowingStore:
    """Keys 0..5, tag = key % 2; keys 0..2 written at ts 100, keys 3..5 at ts 200."""
    store = GrowingStore(SCHEMA)
    for keys, ts in ((range(0, 3), 100), (range(3, 6), 200)):
        store.apply_insert(pa.table({
            "id": pa.array(list(keys), pa.int64()),
            "tag": pa.array([k % 2 for k in keys], pa.int64()),
            "v": pa.array([[float(k), 0.0] for k in keys], pa.list_(pa.float32(), 2)),
            TIMESTAMP_COLUMN: pa.array([ts] * len(keys), pa.uint64()),
        }))
    return store


def _mask(store: GrowingStore, filter: str, expire_before: int) -> np.ndarray | None:
    expr = parse_filter(filter, SCHEMA) if filter else None
    return read_mask(store, expr=expr, expire_before=expire_before)


def test_no_filter_and_no_ttl_allow_every_row() -> None:
    assert _mask(_store(), "", 0) is None


def test_rows_written_before_the_bound_are_left_out() -> None:
    store = _store()
    assert _mask(store, "", 150).tolist() == [False] * 3 + [True] * 3  # type: ignore[union-attr]
    assert _mask(store, "", 200).tolist() == [False] * 3 + [True] * 3  # type: ignore[union-attr]
    assert _mask(store, "", 201).tolist() == [False] * 6  # type: ignore[union-attr]
    assert _mask(store, "", 100) is None  # nothing expired: no mask, so an HNSW walk stays unfiltered


def test_the_filter_and_the_ttl_both_apply() -> None:
    store = _store()
    assert _mask(store, "tag == 1", 0).tolist() == [False, True, False, True, False, True]  # type: ignore[union-attr]
    assert _mask(store, "tag == 1", 150).tolist() == [False, False, False, True, False, True]  # type: ignore[union-attr]


def test_reads_through_the_store_honour_the_mask() -> None:
    store = _store()
    mask = _mask(store, "", 150)
    assert store.count(read_ts=300, mask=mask) == 3
    assert store.query(read_ts=300, mask=mask).column("id").to_pylist() == [3, 4, 5]


def test_one_indexed_predicate_is_listed_at_any_size_when_asked() -> None:
    """``indexed_rows`` lists a filter's rows only while few match, unless ``any_size_leaf`` (a limited
    query over keys in row order): then one predicate's rows are listed however many, never a compound."""
    rng = np.random.default_rng(5)
    tags = rng.integers(0, 4, 1_000)
    table = pa.table({"id": pa.array(np.arange(1_000), pa.int64()), "tag": pa.array(tags, pa.int64()),
                      "v": pa.array([[0.0, 0.0]] * 1_000, pa.list_(pa.float32(), 2))})
    indexes = IndexedFilter([build_scalar_index(scalar_index_spec(SCHEMA, "tag", {"index_type": "STL_SORT"}), table)])
    wide, compound = parse_filter("tag < 2", SCHEMA), parse_filter("tag < 2 or tag == 3", SCHEMA)
    assert indexed_rows(indexes, wide, 1_000) is None
    listed = indexed_rows(indexes, wide, 1_000, any_size_leaf=True)
    assert listed is not None and sorted(listed.tolist()) == np.flatnonzero(tags < 2).tolist()
    assert indexed_rows(indexes, compound, 1_000, any_size_leaf=True) is None
