"""Per-chunk scalar indexes of a growing store (``segcore/segments/growing_indexes.py``): used by filters,
built on first use, cached with their chunk and dropped with it."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from common.expr import evaluate, parse_filter
from common.schema import TIMESTAMP_COLUMN, CollectionSchema, DataType, FieldSchema
from segcore.index.scalar.spec import scalar_index_spec
from segcore.segments.growing import GrowingStore
from segcore.segments.growing_indexes import chunk_indexes, growing_filter
from segcore.segments.readmask import read_mask

SCHEMA = CollectionSchema(
    name="c",
    fields=(
        FieldSchema(field_id=100, name="id", dtype=DataType.INT64, is_primary=True),
        FieldSchema(field_id=101, name="k", dtype=DataType.INT64, nullable=True),
        FieldSchema(field_id=102, name="s", dtype=DataType.VARCHAR, max_length=16),
        FieldSchema(field_id=103, name="v", dtype=DataType.FLOAT_VECTOR, dim=2),
    ),
)
SPECS = [scalar_index_spec(SCHEMA, "k", {"index_type": "STL_SORT"})]


def _insert(store: GrowingStore, first: int, count: int, ts: int) -> None:
    keys = list(range(first, first + count))
    store.apply_insert(pa.table({
        "id": pa.array(keys, pa.int64()),
        "k": pa.array([None if key % 5 == 0 else key % 10 for key in keys], pa.int64()),
        "s": pa.array([f"s{key % 3}" for key in keys], pa.string()),
        "v": pa.array([[float(key), 0.0] for key in keys], pa.list_(pa.float32(), 2)),
        TIMESTAMP_COLUMN: pa.array([ts] * count, pa.uint64()),
    }))


def _store() -> GrowingStore:
    """Three chunks (64, 16 and 4 rows: none merged), ``k`` null on every fifth key."""
    store = GrowingStore(SCHEMA)
    _insert(store, 0, 64, 10)
    _insert(store, 64, 16, 11)
    _insert(store, 80, 4, 12)
    assert store.table().column("k").num_chunks == 3
    return store


def test_filter_is_answered_from_the_chunk_indexes_not_the_column() -> None:
    store = _store()
    table = store.table()
    indexes = growing_filter(store, SPECS)
    assert indexes is not None
    # The column's values changed under the evaluator (nulls kept): only the indexes know the real ones.
    k = table.column("k")
    tampered = table.set_column(table.schema.get_field_index("k"), "k", pc.add(k, 1000))
    for text in ("k == 7", "k in [1, 2] or s == 's0'", "not (k > 3)", "k != 4 and id < 50"):
        expr = parse_filter(text, SCHEMA)
        truth = evaluate(expr, table)
        assert not np.array_equal(evaluate(expr, tampered), truth), text  # the tampered scan is wrong
        assert np.array_equal(evaluate(expr, tampered, indexes=indexes), truth), text


def test_indexes_are_built_on_first_use_and_cached() -> None:
    store = _store()
    cache = chunk_indexes(store, SPECS)
    assert cache.builds == 0
    read_mask(store, expr=parse_filter("s == 's1'", SCHEMA), expire_before=0, indexes=growing_filter(store, SPECS))
    assert cache.builds == 0  # no index of s: nothing built, the column is scanned
    expr = parse_filter("k == 7", SCHEMA)
    first = read_mask(store, expr=expr, expire_before=0, indexes=growing_filter(store, SPECS))
    assert cache.builds == 3  # one per chunk
    again = read_mask(store, expr=expr, expire_before=0, indexes=growing_filter(store, SPECS))
    assert cache.builds == 3 and len(cache) == 3
    assert first is not None and again is not None and np.array_equal(first, again)


def test_a_new_chunk_is_indexed_alone_and_merged_chunks_drop_theirs() -> None:
    store = _store()
    cache = chunk_indexes(store, SPECS)
    expr = parse_filter("k == 7", SCHEMA)
    growing_filter(store, SPECS).mask(expr)  # type: ignore[union-attr]
    _insert(store, 84, 1, 13)  # 64, 16, 4, 1 rows: a fourth chunk
    assert store.table().column("k").num_chunks == 4
    mask = growing_filter(store, SPECS).mask(expr)  # type: ignore[union-attr]
    assert cache.builds == 4 and len(cache) == 4
    assert mask is None  # chunks with nulls: the evaluator combines leaves instead
    _insert(store, 85, 40, 14)  # merges chunks: their indexes go with them
    chunks = store.table().column("k").num_chunks
    assert chunks < 5
    answer = read_mask(store, expr=expr, expire_before=0, indexes=growing_filter(store, SPECS))
    assert len(cache) == chunks
    assert answer is not None and np.array_equal(answer, evaluate(expr, store.table()))


def test_changed_definitions_start_a_new_cache() -> None:
    store = _store()
    cache = chunk_indexes(store, SPECS)
    other = [*SPECS, scalar_index_spec(SCHEMA, "s", {"index_type": "INVERTED"})]
    assert chunk_indexes(store, other) is not cache
    assert growing_filter(store, []) is None
