"""evaluate: every language feature over a small fixed table."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from common.errors import IllegalFilter
from common.expr import evaluate, parse_filter, referenced_fields
from common.schema import CollectionSchema

TableBuilder = Callable[[list[dict[str, Any]]], pa.Table]

ROWS: list[dict[str, Any]] = [
    {
        "id": 1,
        "age": 10,
        "small": 1,
        "score": 1.5,
        "ratio": 0.5,
        "name": "alice",
        "active": True,
        "meta": {"a": 1, "b": {"c": "x"}, "tags": ["red", "blue"], "n": None},
        "x": 1,
        "tags": ["a", "b"],
    },
    {
        "id": 2,
        "age": 20,
        "small": -3,
        "score": -2.0,
        "ratio": 1.25,
        "name": "bob",
        "active": False,
        "meta": {"a": 2.5, "tags": ["red"]},
        "x": "1",
    },
    {"id": 3},  # every nullable field null, no dynamic keys
    {
        "id": 4,
        "age": 35,
        "small": 7,
        "score": 0.0,
        "ratio": 2.0,
        "name": "ab%c",
        "active": True,
        "meta": {"a": True, "tags": []},
        "x": 5,
        "tags": ["b"],
    },
    {
        "id": 5,
        "age": -7,
        "small": 0,
        "score": 9.5,
        "ratio": -0.5,
        "name": "Ab_c\nd",
        "active": False,
        "meta": {"a": "1", "b": {"c": 3}, "tags": "red"},
        "x": 2.0,
    },
    {
        "id": 6,
        "age": 0,
        "small": 100,
        "score": 3.0,
        "ratio": 0.0,
        "name": "",
        "active": True,
        "meta": [1, 2],
        "x": True,
    },
]
ALL = [1, 2, 3, 4, 5, 6]
NON_NULL = [1, 2, 4, 5, 6]


@pytest.fixture(scope="module")
def table(table_of: TableBuilder) -> pa.Table:
    return table_of(ROWS)


def matching(text: str, schema: CollectionSchema, table: pa.Table, params: dict[str, Any] | None = None) -> list[int]:
    mask = evaluate(parse_filter(text, schema, params), table)
    assert mask.dtype == np.bool_ and mask.shape == (table.num_rows,)
    return [int(i) for i in np.asarray(table.column("id"))[mask]]


CASES = {
    "compare": [
        ("age > 10", [2, 4]),
        ("age >= 10", [1, 2, 4]),
        ("age == 0", [6]),
        ("age != 10", [2, 4, 5, 6]),
        ("10 < age", [2, 4]),
        ("small > 50", [6]),
        ("small > 1000", []),
        ("small > -1000", NON_NULL),
        ("age < 9223372036854775807", NON_NULL),
        ("age < 9223372036854775807 * 4", NON_NULL),
        ("score > 1", [1, 5, 6]),
        ("ratio == 1.25", [2]),
        ("ratio > 0.1", [1, 2, 4]),
        ('name == "bob"', [2]),
        ('name > "b"', [2]),
        ('name != "bob"', [1, 4, 5, 6]),
        ('name == ""', [6]),
        ("age > score", [1, 2, 4]),
        ("score <= ratio", [2, 4]),
        ("active", [1, 4, 6]),
        ("not active", [2, 5]),
        ("active == false", [2, 5]),
        ("active != true", [2, 5]),
        ("active == active", NON_NULL),
    ],
    "range": [
        ("1 <= age < 35", [1, 2]),
        ("35 >= age > 0", [1, 2, 4]),
        ("-1.5 < score <= 3", [1, 4, 6]),
        ('"a" <= name < "b"', [1, 4]),
    ],
    "arith": [
        ("age * 2 + 1 > 21", [2, 4]),
        ("age % 3 == 1", [1]),
        ("age % 3 == -1", [5]),
        ("age / 3 == -2", [5]),
        ("age / 2 == 5", [1]),
        ("age / 0 > 0", []),
        ("age / 0 != 1", NON_NULL),
        ("age % 0 == 0", []),
        ("score % 2 == 1.5", [1, 5]),
        ("score / 0.0 > 0", []),
        ("age / 4.0 == 2.5", [1]),
        ("age ** 2 > 100", [2, 4]),
        ("-age > 0", [5]),
        ("small * 100 > 1000", [6]),
        ("age + score > 11", [1, 2, 4]),
        ("age - small == 9", [1]),
        ("1 + 2 * 3 == age - 3", [1]),
    ],
    "in": [
        ("id in [1, 3, 5]", [1, 3, 5]),
        ("age in [10, 35]", [1, 4]),
        ("age in [10.0, 35.5]", [1]),
        ("age not in [10, 35]", [2, 5, 6]),
        ('name in ["bob", "x"]', [2]),
        ('name not in ["bob"]', [1, 4, 5, 6]),
        ("active in [true]", [1, 4, 6]),
        ("score in [1.5, 3]", [1, 6]),
        ("ratio in [1.25]", [2]),
        ("id in []", []),
        ("id not in []", ALL),
        ("age % 2 in [0]", [1, 2, 6]),
        ("id in [9223372036854775807]", []),
    ],
    "like": [
        ('name like "a%"', [1, 4]),
        ('name like "%c"', [4]),
        ('name like "%b%"', [2, 4, 5]),
        ('name like "bob"', [2]),
        ('name like "b_b"', [2]),
        ('name like "ab\\\\%c"', [4]),
        ('name like "ab\\%c"', [4]),
        ('name like "Ab\\_c%"', [5]),
        ('name like "%\\%%"', [4]),
        ('name like "%"', NON_NULL),
        ('name like "Ab_c_d"', [5]),
        ('name not like "a%"', [2, 5, 6]),
    ],
    "null": [
        ("age is null", [3]),
        ("age is not null", NON_NULL),
        ("meta is null", [3]),
        ('meta["a"] is null', [3, 6]),
        ('meta["n"] is null', ALL),
        ('meta["a"] is not null', [1, 2, 4, 5]),
        ("x is null", [3]),
    ],
    "logic": [
        ("age > 5 or active", [1, 2, 4, 6]),
        ("not (age > 5)", [5, 6]),
        ("not (age > 5 and active)", [2, 5, 6]),
        ("age is null or age > 30", [3, 4]),
        ("not (age is null)", NON_NULL),
        ("age > 5 and not active", [2]),
        ("age > 5 && (name like 'a%' || score < 0)", [1, 2, 4]),
        ("true", ALL),
        ("false", []),
        ("1 < 2 and age > 30", [4]),
        ("not not active", [1, 4, 6]),
    ],
    "json": [
        ('meta["a"] == 1', [1]),
        ('meta["a"] == 2.5', [2]),
        ('meta["a"] > 0', [1, 2]),
        ('meta["a"] == true', [4]),
        ('meta["a"]', [4]),
        ('meta["a"] == "1"', [5]),
        ('meta["a"] != 1', [2, 4, 5, 6]),
        ('meta["b"]["c"] == "x"', [1]),
        ('meta["b"]["c"] > 1', [5]),
        ('meta["tags"][0] == "red"', [1, 2]),
        ('meta["tags"][5] == "red"', []),
        ("meta[0] == 1", [6]),
        ("meta == [1, 2]", [6]),
        ('meta["tags"] == ["red"]', [2]),
        ('meta["tags"] != ["red"]', [1, 4, 5, 6]),
        ('meta["a"] in [1, "1"]', [1, 5]),
        ('meta["a"] not in [1]', [2, 4, 5, 6]),
        ('meta["b"]["c"] like "x%"', [1]),
        ('meta["a"] + 1 > 2', [2]),
        ('meta["a"] * 2 == 2', [1]),
        ('meta["a"] > age', []),
        ('meta["a"] * 10 <= age', [1]),
        ('1 <= meta["a"] < 3', [1, 2]),
    ],
    "functions": [
        ('json_contains(meta["tags"], "red")', [1, 2]),
        ('json_contains_all(meta["tags"], ["red", "blue"])', [1]),
        ('json_contains_any(meta["tags"], ["blue", "green"])', [1]),
        ('json_contains_all(meta["tags"], [])', [1, 2, 4]),
        ('json_contains_any(meta["tags"], [])', []),
        ("json_contains(meta, 2)", [6]),
        ('array_length(meta["tags"]) == 0', [4]),
        ('array_length(meta["tags"]) > 1', [1]),
        ('array_length(meta["tags"]) * 2 == 2', [2]),
        ('exists meta["b"]', [1, 5]),
        ('not exists meta["b"]', [2, 4, 6]),
        ('exists(meta["n"])', [1]),
        ('JSON_CONTAINS(tags, "b")', [1, 4]),
        ('array_contains_any(tags, ["a", "z"])', [1]),
    ],
    "dynamic": [
        ("x == 1", [1]),
        ("x > 1", [4, 5]),
        ('x == "1"', [2]),
        ("x == true", [6]),
        ("x", [6]),
        ("x != 1", [2, 3, 4, 5, 6]),
        ("exists x", [1, 2, 4, 5, 6]),
        ("not exists x", [3]),
        ('$meta["x"] in [5, 2]', [4, 5]),
        ("missing_key > 0", []),
        ("missing_key != 0", ALL),
    ],
}


@pytest.mark.parametrize(
    ("text", "expected"),
    [pytest.param(t, e, id=f"{group}:{t}") for group, cases in CASES.items() for t, e in cases],
)
def test_feature(text: str, expected: list[int], schema: CollectionSchema, table: pa.Table) -> None:
    assert matching(text, schema, table) == expected


@pytest.mark.parametrize(
    ("text", "params", "expected"),
    [
        ("age > {a}", {"a": 15}, [2, 4]),
        ("id in {ids}", {"ids": [2, 4, 99]}, [2, 4]),
        ("name like {p}", {"p": "%o%"}, [2]),
        ('meta["a"] in {v}', {"v": [2.5, True]}, [2, 4]),
        ("{lo} < score < {hi}", {"lo": 0, "hi": 2.0}, [1]),
    ],
)
def test_templated(
    text: str,
    params: dict[str, Any],
    expected: list[int],
    schema: CollectionSchema,
    table: pa.Table,
) -> None:
    assert matching(text, schema, table, params) == expected


def test_empty_table(schema: CollectionSchema, table_of: TableBuilder) -> None:
    for text in ("age > 1", 'meta["a"] == 1', "true", "x in [1]"):
        mask = evaluate(parse_filter(text, schema), table_of([]))
        assert mask.dtype == np.bool_ and mask.shape == (0,)


def test_chunked_table(schema: CollectionSchema, table: pa.Table) -> None:
    chunked = pa.concat_tables([table.slice(0, 2), table.slice(2, 3), table.slice(5)])
    assert chunked.column("age").num_chunks == 3
    for text in ("age > 5 or active", 'meta["a"] != 1 and x != 1', "age % 3 in [1, 2]"):
        expr = parse_filter(text, schema)
        assert list(evaluate(expr, chunked)) == list(evaluate(expr, table))


def test_record_batch(schema: CollectionSchema, table: pa.Table) -> None:
    batch = table.combine_chunks().to_batches()[0]
    expr = parse_filter('age > 5 and meta["a"] != 1', schema)
    assert list(evaluate(expr, batch)) == list(evaluate(expr, table))


def test_reads_only_referenced_columns(schema: CollectionSchema, table: pa.Table) -> None:
    texts = ("age * 2 > score", 'json_contains(meta["tags"], "red") or x > 1', "name is null")
    for text in texts:
        expr = parse_filter(text, schema)
        narrow = table.select(sorted(referenced_fields(expr)))
        assert list(evaluate(expr, narrow)) == list(evaluate(expr, table))


def test_missing_column_is_an_error(schema: CollectionSchema, table: pa.Table) -> None:
    with pytest.raises(IllegalFilter, match="column 'age' read by the filter is missing"):
        evaluate(parse_filter("age > 1", schema), table.drop_columns(["age"]))


def test_missing_dynamic_column_reads_as_empty(schema: CollectionSchema, table: pa.Table) -> None:
    narrow = table.select(["id"])
    assert list(evaluate(parse_filter("x != 1", schema), narrow)) == [True] * 6
    assert list(evaluate(parse_filter("exists x", schema), narrow)) == [False] * 6


def test_invalid_json_text_reads_as_absent(schema: CollectionSchema) -> None:
    table = pa.table({"meta": pa.array(['{"a": 1}', "{not json", None], pa.string())})
    assert list(evaluate(parse_filter('meta["a"] == 1', schema), table)) == [True, False, False]
    assert list(evaluate(parse_filter('meta["a"] != 1', schema), table)) == [False, True, False]


def test_parse_once_evaluate_many(schema: CollectionSchema, table: pa.Table) -> None:
    expr = parse_filter("age > 5 and x > 1", schema)
    assert list(evaluate(expr, table)) == list(evaluate(expr, table))
    assert hash(expr) == hash(parse_filter("age > 5 and x > 1", schema))


def test_negative_zero_equals_zero(schema: CollectionSchema, table_of: TableBuilder) -> None:
    table = table_of([{"id": 1, "score": -0.0, "x": -0.0}, {"id": 2, "score": 0.0, "x": 0}])
    for text in ("score in [0]", "score in [0.0, 5]", "score == 0", "x in [0]", "x == 0.0"):
        assert matching(text, schema, table) == [1, 2], text
    assert matching("score not in [0]", schema, table) == []
