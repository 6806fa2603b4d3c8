"""ARRAY fields in filters: the AST they bind to, every operator on a fixed table, and every error."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from common.errors import IllegalFilter
from common.expr import (
    ArrayElement,
    ArrayLength,
    ArrayRef,
    Compare,
    CompareOp,
    ContainsMode,
    InList,
    IsNull,
    JsonContains,
    Literal,
    Not,
    evaluate,
    parse_filter,
    referenced_fields,
    render,
)
from common.schema import CollectionSchema, DataType

TableBuilder = Callable[[list[dict[str, Any]]], pa.Table]

INTS = ArrayRef(name="ints", element_type=DataType.INT64)
WORDS = ArrayRef(name="words", element_type=DataType.VARCHAR)

ROWS: list[dict[str, Any]] = [
    {"id": 1, "ints": [1, 2, 3], "bytes8": [-1, 5], "floats": [0.5, 1.5], "words": ["red", "blue"],
     "flags": [True, False], "x": 2},
    {"id": 2, "ints": [3], "bytes8": [], "floats": [], "words": [], "flags": [False]},
    {"id": 3},  # every array null
    {"id": 4, "ints": [], "bytes8": [7], "floats": [2.0, 0.5, 0.5], "words": ["blue", "red", "bl_e"],
     "flags": [], "x": 3},
    {"id": 5, "ints": [2, 1], "bytes8": [-128, 127, 0], "floats": [0.1], "words": ["b%"], "flags": [True],
     "x": "2"},
    {"id": 6, "ints": [1, 2, 3, 3], "bytes8": [0], "floats": [1.5], "words": ["red"], "flags": [True, True],
     "x": 1},
]  # fmt: skip
ALL = [1, 2, 3, 4, 5, 6]
NON_NULL = [1, 2, 4, 5, 6]


@pytest.fixture(scope="module")
def table(table_of: TableBuilder) -> pa.Table:
    return table_of(ROWS)


def matching(text: str, schema: CollectionSchema, table: pa.Table | pa.RecordBatch) -> list[int]:
    mask = evaluate(parse_filter(text, schema), table)
    assert mask.dtype == np.bool_ and mask.shape == (table.num_rows,)
    return [int(i) for i in np.asarray(table.column("id"))[mask]]


# ------------------------------------------------------------------ binding


def test_binding(schema: CollectionSchema) -> None:
    first = ArrayElement(array=INTS, index=0)
    assert parse_filter("ints[0] == 3", schema) == Compare(op=CompareOp.EQ, left=first, right=Literal(value=3))
    assert parse_filter("ints[0] in [1, 2]", schema) == InList(operand=first, values=(1, 2))
    assert parse_filter("ARRAY_CONTAINS(ints, 3)", schema) == JsonContains(
        mode=ContainsMode.ONE, path=INTS, values=(3,)
    )
    assert parse_filter('json_contains_any(words, ["a"])', schema) == JsonContains(
        mode=ContainsMode.ANY, path=WORDS, values=("a",)
    )
    assert parse_filter("array_length(ints) == 2", schema) == Compare(
        op=CompareOp.EQ, left=ArrayLength(path=INTS), right=Literal(value=2)
    )
    assert parse_filter("ints is not null", schema) == Not(operand=IsNull(operand=INTS))
    flag = parse_filter("flags[1]", schema)
    assert flag == Compare(
        op=CompareOp.EQ, left=ArrayElement(array=ArrayRef(name="flags", element_type=DataType.BOOL), index=1),
        right=Literal(value=True),
    )  # fmt: skip
    assert referenced_fields(parse_filter("ints[2] > x and array_contains(words, 'a')", schema)) == {
        "ints",
        "words",
        "$meta",
    }


@pytest.mark.parametrize(
    ("text", "rendered"),
    [
        ("ints[0] == 3", "ints[0] == 3"),
        ("ARRAY_CONTAINS_ALL(ints, [1, 2])", "array_contains_all(ints, [1, 2])"),
        ("json_contains(words, 'a')", 'array_contains(words, "a")'),
        ("ints == [1, 2]", "ints == [1, 2]"),
        ("not (array_length(floats) >= 1)", "not (array_length(floats) >= 1)"),
    ],
)
def test_render_round_trips(text: str, rendered: str, schema: CollectionSchema) -> None:
    expr = parse_filter(text, schema)
    assert render(expr) == rendered
    assert parse_filter(rendered, schema) == expr


# --------------------------------------------------------------- evaluation

CASES = {
    "element": [
        ("ints[0] == 3", [2]),
        ("ints[0] == 1", [1, 6]),
        ("ints[1] > 1", [1, 6]),
        ("3 <= ints[3] < 4", [6]),
        ("ints[0] + ints[1] == 3", [1, 5, 6]),
        ("ints[0] * 2 >= 4", [2, 5]),
        ("ints[0] in [2, 3]", [2, 5]),
        ("ints[0] not in [2, 3]", [1, 4, 6]),
        ("bytes8[1] == 127", [5]),
        ("bytes8[0] < 0", [1, 5]),
        ("floats[1] == 0.5", [4]),
        ("floats[0] > 0.5", [4, 6]),
        ("floats[0] in [0.5, 2]", [1, 4]),
        ('words[0] == "red"', [1, 6]),
        ('words[1] like "bl_e"', [1]),
        ('words[2] like "bl\\\\_e"', [4]),
        ('words[0] like "b\\\\%"', [5]),
        ('words[1] > "c"', [4]),
        ("flags[0]", [1, 5, 6]),
        ("flags[1] == false", [1]),
        ("ints[0] == x", [6]),
        ("ints[1] == x", [1]),
    ],
    "past the end": [
        # Milvus: a missing element makes every comparison false, `!=` included.
        ("ints[1] != 2", [5]),
        ("not (ints[1] == 2)", [2, 4, 5]),
        ("ints[3] != 3", []),
        ("ints[5] == 0 or ints[5] != 0", []),
        ("ints[4096] > 0", []),
        ("ints[9223372036854775807] != 1", []),
        ("not flags[0]", [2, 4]),
        ("ints[1] != x", [5, 6]),
        ("ints[2] + 1 != 100", [1, 6]),
        ("ints[2] not in [3]", [2, 4, 5]),
        ('words[1] not like "%"', [2, 5, 6]),
    ],
    "length": [
        ("array_length(ints) == 0", [4]),
        ("array_length(ints) >= 2", [1, 5, 6]),
        ("array_length(words) != 1", [1, 2, 4]),
        ("array_length(bytes8) * 2 == 6", [5]),
        ("array_length(floats) == x", [1, 4, 6]),
        ("not (array_length(ints) == 1)", [1, 4, 5, 6]),
    ],
    "contains": [
        ("array_contains(ints, 3)", [1, 2, 6]),
        ("array_contains(ints, 3.0)", [1, 2, 6]),
        ("array_contains(ints, 2.5)", []),
        ("not array_contains(ints, 3)", [4, 5]),
        ("array_contains_all(ints, [1, 2])", [1, 5, 6]),
        ("array_contains_all(ints, [3, 3, 1])", [1, 6]),
        ("array_contains_all(ints, [])", NON_NULL),
        ("array_contains_any(ints, [3, 9])", [1, 2, 6]),
        ("array_contains_any(ints, [])", []),
        ("array_contains(bytes8, -128)", [5]),
        ("array_contains_any(bytes8, [127, 7])", [4, 5]),
        ("array_contains(floats, 0.5)", [1, 4]),
        ("array_contains(floats, 0.1)", []),  # float32 0.1 is not the double 0.1
        ("array_contains_all(floats, [0.5, 2])", [4]),
        ('array_contains(words, "red")', [1, 4, 6]),
        ('array_contains_all(words, ["red", "blue"])', [1, 4]),
        ('json_contains_any(words, ["b%", "bl_e"])', [4, 5]),
        ("array_contains(flags, false)", [1, 2]),
        ("array_contains_all(flags, [true, false])", [1]),
    ],
    "whole array": [
        ("ints == [1, 2, 3]", [1]),
        ("ints == [1.0, 2, 3]", [1]),
        ("ints == [3]", [2]),
        ("ints == []", [4]),
        ("ints != [3]", [1, 4, 5, 6]),
        ("[2, 1] == ints", [5]),
        ('words == ["red"]', [6]),
        ("floats == [0.5, 1.5]", [1]),
        ("flags == [true, true]", [6]),
        ("ints is null", [3]),
        ("words is not null", NON_NULL),
        ("ints is null or array_length(ints) == 0", [3, 4]),
    ],
}


@pytest.mark.parametrize(
    ("text", "expected"),
    [case for cases in CASES.values() for case in cases],
    ids=[f"{group}: {text}" for group, cases in CASES.items() for text, _ in cases],
)
def test_evaluate(text: str, expected: list[int], schema: CollectionSchema, table: pa.Table) -> None:
    assert matching(text, schema, table) == expected


@pytest.mark.parametrize("text", [text for cases in CASES.values() for text, _ in cases])
def test_slices_and_chunks_agree(text: str, schema: CollectionSchema, table: pa.Table) -> None:
    """List columns with offsets (slices, record batches, several chunks) evaluate the same."""
    expected = matching(text, schema, table)
    chunked = pa.concat_tables([table.slice(0, 2), table.slice(2, 3), table.slice(5)])
    assert matching(text, schema, chunked) == expected
    batch = table.slice(2).to_batches()[0]
    assert batch.column(table.schema.get_field_index("ints")).offset == 2
    assert matching(text, schema, batch) == [i for i in expected if i > 2]


def test_null_rows_backed_by_elements(schema: CollectionSchema, table: pa.Table) -> None:
    """A null array whose slot still holds elements (legal in Arrow) has no elements."""
    ints = pa.ListArray.from_arrays(
        pa.array([0, 3, 4, 6, 6, 8, 10], pa.int32()),
        pa.array([1, 2, 3, 3, 3, 3, 2, 1, 1, 2], pa.int64()),  # the null row 3 is backed by [3, 3]
        mask=pa.array([False, False, True, False, False, False]),
    )
    backed = table.set_column(table.schema.get_field_index("ints"), "ints", ints)
    for text in ("array_contains(ints, 3)", "ints[0] == 3", "array_length(ints) == 1", "ints == [3]"):
        assert 3 not in matching(text, schema, backed), text
    assert matching("array_contains(ints, 3)", schema, backed) == [1, 2]
    assert matching("ints is null", schema, backed) == [3]


# ------------------------------------------------------------------ errors

ERRORS = [
    ("ints > 1", "cannot compare ARRAY<INT64> field 'ints' with number 1"),
    ("ints == 1", "cannot compare ARRAY<INT64> field 'ints' with number 1"),
    ("ints < [1]", "operator '<' cannot be applied to ARRAY<INT64> field 'ints'"),
    ("ints == words", "cannot compare ARRAY<INT64> field 'ints' with ARRAY<VARCHAR> field 'words'"),
    ('ints == meta["a"]', "cannot compare ARRAY<INT64> field 'ints' with JSON value meta"),
    ('ints == ["a"]', "cannot compare the INT64 elements of ARRAY<INT64> field 'ints' with string \"a\""),
    ("ints == [[1]]", "ARRAY<INT64> field 'ints' holds no lists, so it cannot hold list [1]"),
    ("flags == [1]", "cannot compare the BOOL elements of ARRAY<BOOL> field 'flags' with number 1"),
    ("ints in [1, 2]", "'in' cannot be applied to ARRAY<INT64> field 'ints'; use array_contains_any"),
    ("ints[0] == 'a'", "cannot compare INT64 element 'ints[0]' with string \"a\""),
    ("words[0] > 1", "cannot compare VARCHAR element 'words[0]' with number 1"),
    ("ints[0] in [1, 'a']", "cannot compare INT64 element 'ints[0]' with string \"a\""),
    ('ints["0"] == 1', "ARRAY<INT64> field 'ints' is indexed by one integer, as in ints[0]"),
    ("ints[0][0] == 1", "ARRAY<INT64> field 'ints' is indexed by one integer"),
    ("ints + 1 == 2", "arithmetic operator '+' cannot be applied to ARRAY<INT64> field 'ints'"),
    ("-ints == 2", "unary '-' cannot be applied to ARRAY<INT64> field 'ints'"),
    ("ints[0] like 'a%'", "'like' cannot be applied to INT64 element 'ints[0]'"),
    ("words like 'a%'", "'like' cannot be applied to ARRAY<VARCHAR> field 'words'"),
    ("ints[0] is null", "'is null' needs a field or JSON value, got INT64 element 'ints[0]'"),
    ("exists ints", "'exists' needs a JSON value such as meta[\"key\"], got ARRAY<INT64> field 'ints'"),
    ("ints", "ARRAY<INT64> field 'ints' is not a boolean expression"),
    ("ints[0]", "INT64 element 'ints[0]' is not a boolean expression"),
    ("array_contains(ints, 'a')", "cannot compare the INT64 elements of ARRAY<INT64> field 'ints' with string"),
    ("array_contains(ints, [1])", "array_contains on ARRAY<INT64> field 'ints' needs one INT64 value, got list"),
    ("array_contains(ints, age)", "needs one INT64 value, got INT32 field 'age'"),
    ("array_contains_all(ints, 1)", "array_contains_all needs a list as its second argument, got number 1"),
    ('array_contains_any(words, ["a", 1])', "cannot compare the VARCHAR elements of ARRAY<VARCHAR> field 'words'"),
    ("array_contains(ints[0], 1)", "array_contains needs an ARRAY field or a JSON value such as meta"),
    ("array_length(ints[0]) == 1", "array_length needs an ARRAY field or a JSON value such as meta"),
    ("array_length(ints, 1) == 1", "function array_length takes 1 argument, got 2"),
]


@pytest.mark.parametrize(("text", "message"), ERRORS, ids=[e[0] for e in ERRORS])
def test_errors(text: str, message: str, schema: CollectionSchema) -> None:
    with pytest.raises(IllegalFilter) as err:
        parse_filter(text, schema)
    assert message in err.value.message
