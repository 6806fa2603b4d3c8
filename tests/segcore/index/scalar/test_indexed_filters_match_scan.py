"""Property: a filter answered with scalar indexes gives exactly the rows the column scan gives.

Random rows and random filters come from the differential workload's makers
(``tests/differential``: shared prefixes, LIKE metacharacters, JSON keys absent
or of another type, nulls, integers beyond 2**53, NaN-free doubles on a grid).
Every index kind is built over them, on scalar, ARRAY and JSON-path columns (on
odd seeds ``meta["a"]``, numbers and the strings ``"1"`` and ``"x"``, with the
``STRING_TO_DOUBLE`` cast function), and
each filter is evaluated both ways: through ``read_mask``'s path (the whole
filter from indexes when it can, else the evaluator asking the indexes leaf by
leaf) and by the plain scan; the row list of ``IndexedFilter.rows`` (the
query path of selective filters) is checked too.

The same holds on a growing store (``segcore/index/scalar/chunked.py``): rows
inserted in batches of shrinking random sizes (so that they stay several
chunks), some keys deleted and some upserted, filters answered from per-chunk
indexes built on first use; the rows a query returns with the indexed mask
are the rows it returns with the scanned one.
"""

from __future__ import annotations

import json
import random
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from common.errors import IllegalFilter
from common.expr import evaluate, parse_filter
from common.schema import TIMESTAMP_COLUMN, CollectionSchema, DataType, FieldSchema
from segcore.index.scalar.index import ScalarIndex, build_scalar_index
from segcore.index.scalar.planner import IndexedFilter
from segcore.index.scalar.spec import scalar_index_spec
from segcore.segments.growing import GrowingStore
from segcore.segments.growing_indexes import chunk_indexes, growing_filter
from segcore.segments.readmask import read_mask
from tests.differential.data import MAX_CAPACITY, CollectionSpec, RowMaker
from tests.differential.filters import FilterMaker

ROWS = 400
FILTERS = 300


def _schema(nullable: frozenset[str]) -> CollectionSchema:
    return CollectionSchema(
        name="c",
        fields=(
            FieldSchema(field_id=100, name="id", dtype=DataType.INT64, is_primary=True),
            FieldSchema(field_id=101, name="i", dtype=DataType.INT64),
            FieldSchema(field_id=102, name="d", dtype=DataType.DOUBLE, nullable="d" in nullable),
            FieldSchema(field_id=103, name="s", dtype=DataType.VARCHAR, max_length=32, nullable="s" in nullable),
            FieldSchema(field_id=104, name="b", dtype=DataType.BOOL),
            FieldSchema(field_id=105, name="meta", dtype=DataType.JSON, nullable="meta" in nullable),
            FieldSchema(field_id=106, name="arr", dtype=DataType.ARRAY, element_type=DataType.INT64,
                        max_capacity=MAX_CAPACITY, nullable="arr" in nullable),
        ),
    )


def _table(schema: CollectionSchema, rows: list[dict[str, Any]]) -> pa.Table:
    arrow = schema.arrow_schema(with_timestamp=False)
    data = {
        f.name: [None if r[f.name] is None else json.dumps(r[f.name]) for r in rows] if f.name == "meta"
        else [r[f.name] for r in rows]
        for f in schema.fields
    }
    return pa.table(data, schema=arrow)


_INDEXES: list[tuple[str, dict[str, str]]] = [
    ("i", {"index_type": "STL_SORT"}),
    ("d", {"index_type": "INVERTED"}),
    ("s", {"index_type": "NGRAM", "params": json.dumps({"min_gram": 1, "max_gram": 3})}),
    ("b", {"index_type": "BITMAP"}),
    ("arr", {"index_type": "AUTOINDEX"}),
    ("meta", {"index_type": "INVERTED", "params": json.dumps({"json_path": 'meta["a"]', "json_cast_type": "DOUBLE"})}),
    ("meta", {"index_type": "INVERTED", "params": json.dumps({"json_path": 'meta["name"]',
                                                              "json_cast_type": "VARCHAR"})}),
    ("meta", {"index_type": "INVERTED", "params": json.dumps({"json_path": 'meta["flag"]', "json_cast_type": "BOOL"})}),
    ("meta", {"index_type": "INVERTED", "params": json.dumps({"json_path": 'meta["tags"]',
                                                              "json_cast_type": "ARRAY_DOUBLE"})}),
    ("meta", {"index_type": "INVERTED", "params": json.dumps({"json_path": 'meta["n"]["x"]',
                                                              "json_cast_type": "DOUBLE"})}),
]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("seed", range(6))
def test_indexed_filters_answer_as_the_scan(seed: int) -> None:
    rng = random.Random(seed)
    nullable = frozenset(rng.sample(["d", "s", "meta", "arr"], rng.randint(0, 4)))
    spec = CollectionSpec(name="c", metric="L2", nullable=nullable)
    schema = _schema(nullable)
    maker = RowMaker(rng, spec)
    rows = [maker.row(pk) for pk in range(ROWS)]
    table = _table(schema, rows)
    definitions = list(_INDEXES)
    if seed % 2:
        definitions[5] = ("meta", {"index_type": "INVERTED", "params": json.dumps(
            {"json_path": 'meta["a"]', "json_cast_type": "DOUBLE", "json_cast_function": "STRING_TO_DOUBLE"})})
    built = [build_scalar_index(scalar_index_spec(schema, f, p), table) for f, p in definitions]
    # Through the saved form, as a worker loads them.
    indexes = IndexedFilter(ScalarIndex.from_bytes(i.spec, i.to_bytes()) for i in built)
    wide = any(abs(r["i"]) > 2**53 for r in rows)
    filters = FilterMaker(rng, spec, {r["id"]: r for r in rows}, lambda: wide)
    answered_by_index = listed = 0
    for _ in range(FILTERS):
        text = filters.filter(depth=3).text
        try:
            expr = parse_filter(text, schema)
        except IllegalFilter:
            continue
        scanned = evaluate(expr, table)
        whole = indexes.mask(expr)
        answered_by_index += whole is not None
        indexed = whole if whole is not None else evaluate(expr, table, indexes=indexes)
        assert np.array_equal(indexed, scanned), text
        found = indexes.rows(expr)
        if found is not None:
            listed += 1
            assert len(np.unique(found)) == len(found), text
            assert np.array_equal(np.sort(found), np.flatnonzero(scanned)), text
    assert answered_by_index > 0  # the pure-index path is exercised, not only the leaf hook
    assert listed > 0  # and the list of rows


def _definitions(seed: int) -> list[tuple[str, dict[str, str]]]:
    definitions = list(_INDEXES)
    if seed % 2:
        definitions[5] = ("meta", {"index_type": "INVERTED", "params": json.dumps(
            {"json_path": 'meta["a"]', "json_cast_type": "DOUBLE", "json_cast_function": "STRING_TO_DOUBLE"})})
    return definitions


def _growing(schema: CollectionSchema, rows: list[dict[str, Any]], rng: random.Random) -> GrowingStore:
    """``rows`` inserted in batches of shrinking sizes (each a chunk: none is merged into its
    predecessor), some keys deleted and some re-inserted (upserts) in between."""
    store = GrowingStore(schema)
    start, ts, size = 0, 1, len(rows) // 2
    while start < len(rows):
        batch = rows[start : start + size]
        table = _table(schema, batch)
        store.apply_insert(table.append_column(TIMESTAMP_COLUMN, pa.array([ts] * len(batch), pa.uint64())))
        start, ts = start + len(batch), ts + 1
        size = max(1, size // 3 + rng.randint(-2, 2))
        if rng.random() < 0.5:
            doomed = rng.sample([r["id"] for r in rows[:start]], rng.randint(1, 10))
            store.apply_delete(pa.array(doomed, pa.int64()), ts)
            ts += 1
        if rng.random() < 0.3:  # an upsert: a deleted or live key written again, with new values
            again = dict(rng.choice(rows[:start]), i=rng.randint(-5, 5))
            store.apply_delete(pa.array([again["id"]], pa.int64()), ts)
            one = _table(schema, [again])
            store.apply_insert(one.append_column(TIMESTAMP_COLUMN, pa.array([ts], pa.uint64())))
            ts += 1
    return store


@pytest.mark.timeout(120)
@pytest.mark.parametrize("seed", range(6))
def test_growing_indexed_filters_answer_as_the_scan(seed: int) -> None:
    rng = random.Random(1000 + seed)
    nullable = frozenset(rng.sample(["d", "s", "meta", "arr"], rng.randint(0, 4)))
    spec = CollectionSpec(name="c", metric="L2", nullable=nullable)
    schema = _schema(nullable)
    maker = RowMaker(rng, spec)
    rows = [maker.row(pk) for pk in range(ROWS)]
    store = _growing(schema, rows, rng)
    table = store.table()
    assert table.column("i").num_chunks >= 3
    specs = [scalar_index_spec(schema, f, p) for f, p in _definitions(seed)]
    wide = any(abs(r["i"]) > 2**53 for r in rows)
    filters = FilterMaker(rng, spec, {r["id"]: r for r in rows}, lambda: wide)
    read_ts = 2**40
    answered_by_index = 0
    for _ in range(FILTERS):
        text = filters.filter(depth=3).text
        try:
            expr = parse_filter(text, schema)
        except IllegalFilter:
            continue
        scanned = evaluate(expr, table)
        indexes = growing_filter(store, specs)
        assert indexes is not None
        whole = indexes.mask(expr)
        answered_by_index += whole is not None
        indexed = read_mask(store, expr=expr, expire_before=0, indexes=indexes)
        assert indexed is not None
        assert np.array_equal(indexed, scanned), text
        got = store.query(read_ts=read_ts, mask=indexed, output_fields=["i"])
        assert got.equals(store.query(read_ts=read_ts, mask=scanned, output_fields=["i"])), text
    assert answered_by_index > 0
    assert chunk_indexes(store, specs).builds > 0  # the per-chunk indexes were built and read
