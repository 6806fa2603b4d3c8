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
from common.schema import CollectionSchema, DataType, FieldSchema
from segcore.index.scalar.index import ScalarIndex, build_scalar_index
from segcore.index.scalar.planner import IndexedFilter
from segcore.index.scalar.spec import scalar_index_spec
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
