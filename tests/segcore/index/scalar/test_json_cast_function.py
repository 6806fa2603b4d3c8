"""A JSON path index with ``json_cast_function`` ``STRING_TO_DOUBLE``: what it holds and which filters it answers.

It holds, as Milvus's does, the numbers at the path and the strings
``std::stod`` reads as numbers (kept apart). Filters that compare the path
with a number read it, as Milvus uses it, and answer from the numbers alone,
exactly as the scan; a string comparison is not answered by it (Milvus: a
filter of another type than the cast does not use the index).
"""

from __future__ import annotations

import json
import math
import struct

import numpy as np
import pyarrow as pa
import pytest

from common.expr import evaluate, parse_filter
from common.schema import CollectionSchema, DataType, FieldSchema
from segcore.index.scalar.index import ScalarIndex, build_scalar_index
from segcore.index.scalar.planner import IndexedFilter
from segcore.index.scalar.source import string_to_double
from segcore.index.scalar.spec import scalar_index_spec

SCHEMA = CollectionSchema(
    name="c",
    fields=(
        FieldSchema(field_id=100, name="id", dtype=DataType.INT64, is_primary=True),
        FieldSchema(field_id=101, name="meta", dtype=DataType.JSON),
    ),
)
PRICES = [12, "12", 3.5, " 3.5", "abc", None, True, "7e1", 70, "0x10", [1], 16.0, "12abc", "1e999"]
CAST = {"index_type": "INVERTED", "params": json.dumps(
    {"json_path": 'meta["p"]', "json_cast_type": "DOUBLE", "json_cast_function": "STRING_TO_DOUBLE"})}


def _table() -> pa.Table:
    docs = [json.dumps({"p": p}) for p in PRICES] + [json.dumps({"q": 1})]
    return pa.table({"id": list(range(len(docs))), "meta": docs})


def _index() -> ScalarIndex:
    built = build_scalar_index(scalar_index_spec(SCHEMA, "meta", CAST), _table())
    return ScalarIndex.from_bytes(built.spec, built.to_bytes())  # as a worker loads it


@pytest.mark.parametrize(
    ("text", "number"),
    [("99.99", 99.99), (" 12abc", 12.0), ("abc", None), ("", None), ("0x1A", 26.0), ("0x1.8p1", 3.0),
     ("-inf", -math.inf), ("INFINITY", math.inf), ("1e400", None), ("1e-400", None), ("+.5e1x", 5.0),
     (".", None), ("1_000", 1.0), ("5e", 5.0), ("0x", 0.0), ("0e5", 0.0)],
)
def test_string_to_double_reads_what_stod_reads(text: str, number: float | None) -> None:
    assert string_to_double(text) == number


def test_string_to_double_reads_nan() -> None:
    value = string_to_double("nan")
    assert value is not None and math.isnan(value)


def test_the_index_holds_numbers_and_the_converted_strings_apart() -> None:
    index = _index()
    assert index.exact
    assert index.postings.keys.tolist() == [3.5, 12.0, 16.0, 70.0]
    assert index.converted is not None
    assert index.converted.keys.tolist() == [3.5, 12.0, 16.0, 70.0]  # " 3.5", "12", "12abc", "0x10", "7e1"
    assert sorted(index.converted.span_rows(0, 4).tolist()) == [1, 3, 7, 9, 12]


@pytest.mark.parametrize(
    "expr",
    ['meta["p"] > 10', 'meta["p"] == 12', 'meta["p"] != 12', '10 <= meta["p"]', 'meta["p"] in [3.5, 70, 5]',
     'meta["p"] < 16 or meta["p"] > 60', 'not (meta["p"] >= 12)'],
)
def test_numeric_filters_read_the_index_and_answer_as_the_scan(expr: str) -> None:
    table = _table()
    indexes = IndexedFilter([_index()])
    bound = parse_filter(expr, SCHEMA)
    scanned = evaluate(bound, table)
    whole = indexes.mask(bound)
    assert whole is not None, "the cast-function index did not answer"
    assert np.array_equal(whole, scanned)
    assert np.array_equal(evaluate(bound, table, indexes=indexes), scanned)


def test_a_string_comparison_does_not_use_the_double_index() -> None:
    indexes = IndexedFilter([_index()])
    assert indexes.leaf(parse_filter('meta["p"] == "12"', SCHEMA)) is None


def test_a_saved_index_of_the_old_format_is_rebuilt() -> None:
    """Before, the converted strings were mixed into the postings: such a saved index loads as absent."""
    index = _index()
    postings = index.postings.to_bytes()
    old = struct.pack("<4sBBqq", b"SSI1", 0, 0, len(postings), 0) + postings
    with pytest.raises(ValueError):
        ScalarIndex.from_bytes(index.spec, old)
