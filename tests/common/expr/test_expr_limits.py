"""Filters at the edges of size: deep nesting is refused with a clear error before anything
recursive runs, long flat chains and huge literals are answered (or refused) cleanly."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from common.errors import ErrorCode, IllegalFilter
from common.expr import evaluate, parse_filter, referenced_fields, render
from common.expr.parser import MAX_DEPTH
from common.schema import CollectionSchema
from tests.common.expr.conftest import TableBuilder

DEPTH_MESSAGE = f"filter expression is nested more than {MAX_DEPTH} levels deep"

# Filters that nest ``n`` levels of one construct each.
NESTINGS: dict[str, Callable[[int], str]] = {
    "not": lambda n: "not " * n + "active",
    "bang": lambda n: "!" * n + "(age > 1)",
    "unary minus": lambda n: "age > " + "-" * n + "age",
    "unary minus on a literal": lambda n: "age > " + "-" * n + "1",
    "arithmetic chain": lambda n: "age" + " + 1" * n + " > 0",
    "power chain": lambda n: "score" + " ** 1" * n + " > 0",
    "parenthesised arithmetic": lambda n: "(" * n + "age" + " + 1)" * n + " > 0",
    "nested list": lambda n: 'meta["k"] == ' + "[" * n + "]" * n,
    "nested list in": lambda n: 'meta["k"] in [' + "[" * n + "]" * n + "]",
    "nested list contains": lambda n: 'json_contains(meta["k"], ' + "[" * n + "]" * n + ")",
    "nested JSON literal on both sides": lambda n: "[" * n + "]" * n + " == " + "[" * n + "]" * n,
}


def _accepted(text: str, schema: CollectionSchema) -> bool:
    try:
        parse_filter(text, schema)
    except IllegalFilter as err:
        assert DEPTH_MESSAGE in err.message, err.message
        return False
    return True


def _deepest_accepted(make: Callable[[int], str], schema: CollectionSchema) -> int:
    low, high = 1, MAX_DEPTH + 1  # make(low) is accepted, make(high) is not
    assert _accepted(make(low), schema)
    assert not _accepted(make(high), schema)
    while high - low > 1:
        middle = (low + high) // 2
        if _accepted(make(middle), schema):
            low = middle
        else:
            high = middle
    return low


def _on_a_deep_stack(frames: int, fn: Callable[[], object]) -> object:
    """``fn()`` called below ``frames`` extra Python frames, as from deep inside a server."""
    return fn() if frames == 0 else _on_a_deep_stack(frames - 1, fn)


@pytest.mark.parametrize("shape", sorted(NESTINGS))
@pytest.mark.parametrize("depth", [10_000, 100_000])
def test_deep_nesting_is_refused_with_the_limit_named(shape: str, depth: int, schema: CollectionSchema) -> None:
    with pytest.raises(IllegalFilter) as info:
        parse_filter(NESTINGS[shape](depth), schema)
    assert DEPTH_MESSAGE in info.value.message
    assert info.value.code is ErrorCode.ILLEGAL_FILTER


def test_a_hundred_nested_nots_and_parentheses_still_parse(schema: CollectionSchema, table_of: TableBuilder) -> None:
    # Milvus' own parser accepts these (its depth-limit test uses them as the "within the limit" case).
    table = table_of([{"id": 1, "age": 5}, {"id": 2, "age": 0}])
    for text in ("not " * 100 + "(age > 1)", "(" * 100 + "age > 1" + ")" * 100):
        assert evaluate(parse_filter(text, schema), table).tolist() == [True, False]


@pytest.mark.parametrize("shape", sorted(NESTINGS))
def test_the_deepest_accepted_filter_binds_renders_and_evaluates(
    shape: str, schema: CollectionSchema, table_of: TableBuilder
) -> None:
    """Whatever passes the depth check runs through every recursive step, even on a deep stack."""
    make = NESTINGS[shape]
    depth = _deepest_accepted(make, schema)
    assert depth >= MAX_DEPTH // 2, depth  # the limit counts nesting, not characters
    table = table_of([{"id": 1, "age": 3, "score": 1.5, "active": True, "meta": {"k": [[1]]}}])

    def everything() -> object:
        expr = parse_filter(make(depth), schema)
        render(expr)
        referenced_fields(expr)
        return evaluate(expr, table)

    _on_a_deep_stack(300, everything)


@pytest.mark.parametrize("terms", [5_000])
def test_long_flat_chains_are_not_nesting(terms: int, schema: CollectionSchema, table_of: TableBuilder) -> None:
    """`a == 1 or a == 2 or ...` is one level however long: far more terms than the recursion limit work."""
    table = table_of([{"id": i, "age": i} for i in range(10)])
    either = " or ".join(f"age == {i}" for i in range(3, 3 + terms))
    assert evaluate(parse_filter(either, schema), table).tolist() == [i >= 3 for i in range(10)]
    both = " and ".join(f"age != {i}" for i in range(5, 5 + terms))
    assert evaluate(parse_filter(both, schema), table).tolist() == [i < 5 for i in range(10)]
    many = "age in [" + ", ".join(str(i) for i in range(7, 7 + 20 * terms)) + "]"
    assert evaluate(parse_filter(many, schema), table).tolist() == [i >= 7 for i in range(10)]
    keys = 'meta["a"]' + '["a"]' * terms + " == 1"
    assert evaluate(parse_filter(keys, schema), table).tolist() == [False] * 10


@pytest.mark.parametrize(
    "literal",
    ["1" * 1_000_000, "0x" + "f" * 1_000_000, "0b" + "1" * 1_000_000, "0o" + "7" * 1_000_000, "9" * 5_000],
    ids=["decimal", "hex", "binary", "octal", "past python's digit limit"],
)
def test_huge_integer_literals_are_out_of_range(literal: str, schema: CollectionSchema) -> None:
    with pytest.raises(IllegalFilter) as info:
        parse_filter(f"age > {literal}", schema)
    assert "is out of the int64 range" in info.value.message
    assert len(info.value.message) < 400  # the literal is cut, not echoed whole


def test_leading_zeros_do_not_make_an_integer_huge(schema: CollectionSchema, table_of: TableBuilder) -> None:
    table = table_of([{"id": 1, "age": 7}, {"id": 2, "age": 8}])
    assert evaluate(parse_filter("age == " + "0" * 1_000_000 + "7", schema), table).tolist() == [True, False]


@pytest.mark.parametrize("literal", ["1e999", "1" * 1_000_000 + ".5", "-1e400"])
def test_float_literals_beyond_float64_are_refused(literal: str, schema: CollectionSchema) -> None:
    with pytest.raises(IllegalFilter) as info:
        parse_filter(f"score > {literal}", schema)
    assert "is out of the float64 range" in info.value.message
    assert len(info.value.message) < 400


def test_a_ten_megabyte_string_literal_is_compared(schema: CollectionSchema, table_of: TableBuilder) -> None:
    big = "x" * 10_000_000
    table = table_of([{"id": 1, "name": big}, {"id": 2, "name": big[:-1]}])
    assert evaluate(parse_filter(f'name == "{big}"', schema), table).tolist() == [True, False]
    escaped = "\\n" * 1_000_000
    expr = parse_filter(f'name != "{escaped}"', schema)
    assert evaluate(expr, table).tolist() == [True, True]


@pytest.mark.parametrize(
    "text",
    [
        'age == "' + "x" * 10_000_000 + '"',
        'name == "' + "x" * 10_000_000,
        "age > 1 " + "x" * 10_000_000,
        '(age > 1 and name == "' + "x" * 10_000_000 + '") + 1 > 2',
    ],
    ids=["type error", "unterminated string", "syntax error", "boolean as a value"],
)
def test_errors_about_huge_filters_quote_them_short(text: str, schema: CollectionSchema) -> None:
    with pytest.raises(IllegalFilter) as info:
        parse_filter(text, schema)
    assert len(info.value.message) < 1_000, info.value.message[:300]


def test_deeply_nested_placeholder_values_are_refused(schema: CollectionSchema, table_of: TableBuilder) -> None:
    def nested(depth: int) -> list[object]:
        value: list[object] = []
        for _ in range(depth - 1):
            value = [value]
        return value

    with pytest.raises(IllegalFilter, match=r"placeholder \{p\} holds lists nested more than 120 levels deep"):
        parse_filter('meta["k"] == {p}', schema, {"p": nested(10_000)})
    table = table_of([{"id": 1, "meta": {"k": nested(120)}}, {"id": 2, "meta": {"k": []}}])
    expr = parse_filter('meta["k"] == {p}', schema, {"p": nested(120)})
    assert _on_a_deep_stack(300, lambda: evaluate(expr, table).tolist()) == [True, False]
