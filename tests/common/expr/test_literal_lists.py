"""Long literal lists skip the grammar (``literal_lists.py``) and mean exactly what the grammar gives.

Each case parses a filter twice: as ``parse_filter`` does (lists of at least
``MIN_ELEMENTS`` elements, here lowered to 2 so that short lists take the fast
path too), and with the fast path off (``MIN_ELEMENTS`` beyond any list). The
two must give equal expressions, or the same error message.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from common.errors import IllegalFilter
from common.expr import Expr, InList, evaluate, literal_lists, parse_filter, render
from common.expr.literals import quote
from common.schema import CollectionSchema

Outcome = tuple[str, Any]


def _outcome(parse: Callable[[], Expr]) -> Outcome:
    try:
        return "ok", parse()
    except IllegalFilter as err:
        return "error", err.message


def both(
    monkeypatch: pytest.MonkeyPatch, text: str, schema: CollectionSchema, params: dict[str, Any] | None = None
) -> tuple[Outcome, Outcome]:
    """(fast path, grammar only) outcomes of parsing ``text``."""
    with monkeypatch.context() as m:
        m.setattr(literal_lists, "MIN_ELEMENTS", 2)
        fast = _outcome(lambda: parse_filter(text, schema, params))
    with monkeypatch.context() as m:
        m.setattr(literal_lists, "MIN_ELEMENTS", 10**9)
        slow = _outcome(lambda: parse_filter(text, schema, params))
    return fast, slow


def took_fast_path(text: str, params: dict[str, Any] | None = None) -> bool:
    return literal_lists.shorten(text, params or {}) is not None


CASES = [
    # integers in every spelling the grammar has, signs with and without spaces, a trailing comma
    "id in [1, -2, + 3, 0x1F, 0X1f, 0b101, 0o17, 007, -  9223372036854775808, 9223372036854775807,]",
    "id not in [\n1,\t2 ,\f3\r\n]",
    # floats, ints and floats mixed, exponents
    "score in [1.5, .5, 1., 1e3, 1E-3, -2.5e+2, 3, -0.0]",
    # strings with escapes, commas, brackets and quotes inside; both quote styles
    r"""name in ["a,b", 'c]d', "e\"f", 'g\'h', "\u00e9\n", "[1, 2]", 'x\%']""",
    # booleans in any case
    "active in [true, False, TRUE, tRuE]",
    # a list in a call, a list compared whole, a list inside a string left alone
    'array_contains_any(ints, [1, 2, 3]) and name == "[4, 5, 6]"',
    "ints == [1, 2, 3]",
    'meta["a"] in [1, "x", true, 2.5]',
    # lists the fast path leaves to the grammar: nested, expressions, names, double signs
    'meta["a"] in [[1, 2], [3, 4]]',
    "id in [1 + 1, 2]",
    "id in [1, age]",
    "id in [- -1, 2]",
    # errors the binder words: mixed types, an out-of-range integer, a list where none fits
    'id in [1, "a", 2]',
    'name in ["a", 1, true]',
    "active in [true, 1]",
    "id in [1, 9223372036854775808]",
    "id in [1, 99999999999999999999]",
    "[1, 2] in [1, 2]",
    "id > [1, 2]",
    # syntax errors around lists: an index with two elements, missing comma, unclosed list or string
    "ints[1, 2] == 1",
    "id in [1 2, 3]",
    "id in [1, 2, 3",
    'id in [1, 2] and name == "x',
    'name == "unterminated [1, 2, 3]',
    "id in [1, 2] [3, 4]",
    "id in [1, 2,, 3]",
    "id in [1, 2] id",
    "12abc in [1, 2]",
    "id in [0x, 1]",
    "id in [1.5.5, 2]",
]


@pytest.mark.parametrize("text", CASES)
def test_fast_path_means_what_the_grammar_means(
    monkeypatch: pytest.MonkeyPatch, text: str, schema: CollectionSchema
) -> None:
    fast, slow = both(monkeypatch, text, schema)
    assert fast == slow


def test_lists_shorter_than_the_threshold_stay_in_the_text() -> None:
    short = "id in [" + ", ".join(map(str, range(literal_lists.MIN_ELEMENTS - 1))) + "]"
    long = "id in [" + ", ".join(map(str, range(literal_lists.MIN_ELEMENTS))) + "]"
    assert not took_fast_path(short)
    assert took_fast_path(long)


def test_a_caller_parameter_named_like_a_placeholder_turns_the_fast_path_off(schema: CollectionSchema) -> None:
    text = "id in [" + ", ".join(map(str, range(100))) + "] and age == {__strata_list_0}"
    params = {"__strata_list_0": 7}
    assert not took_fast_path(text, params)
    assert "(age == 7)" in render(parse_filter(text, schema, params))


LITERAL = st.one_of(
    st.integers(-(2**63) - 2, 2**63 + 2).map(str),
    st.integers(0, 2**20).map(hex),
    st.integers(0, 2**20).map(bin),
    st.integers(0, 2**20).map(oct),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(["1.", ".5", "1e3", "-1E-3", "+ 2", "- 3.5", "true", "FALSE", "x", "[1]", "1 + 1"]),
    st.text(alphabet="ab,[]'\"\\ n", max_size=5).map(lambda s: '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'),
)
SEPARATOR = st.sampled_from([",", ", ", " ,\n", ",\t", ",\f", "  ,  "])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    field=st.sampled_from(["id", "age", "score", "name", "active", 'meta["a"]', "x"]),
    elements=st.lists(LITERAL, min_size=2, max_size=8),
    separators=st.lists(SEPARATOR, min_size=8, max_size=8),
    trailing=st.booleans(),
    negated=st.booleans(),
)
def test_random_lists_mean_what_the_grammar_means(
    monkeypatch: pytest.MonkeyPatch,
    schema: CollectionSchema,
    field: str,
    elements: list[str],
    separators: list[str],
    trailing: bool,
    negated: bool,
) -> None:
    body = "".join(e + (separators[i] if i < len(elements) - 1 else "") for i, e in enumerate(elements))
    text = f"{field} {'not in' if negated else 'in'} [{body}{',' if trailing else ''}]"
    fast, slow = both(monkeypatch, text, schema)
    assert fast == slow


def test_a_long_filter_with_a_syntax_error_names_the_original_text_and_column(schema: CollectionSchema) -> None:
    ids = ", ".join(map(str, range(20_000)))  # past EXACT_ERRORS_UP_TO: not parsed again whole
    text = f"id in [{ids}] and and"
    with pytest.raises(IllegalFilter) as info:
        parse_filter(text, schema)
    column = text.rindex("and") + 1
    assert info.value.message == f"cannot parse expression: `{quote(text)}`, unexpected token 'and' at column {column}"


def test_a_long_list_where_no_list_fits_is_named_at_its_bracket(schema: CollectionSchema) -> None:
    ids = ", ".join(map(str, range(20_000)))
    text = f"ints[{ids}] == 1"
    with pytest.raises(IllegalFilter) as info:
        parse_filter(text, schema)
    assert info.value.message == f"cannot parse expression: `{quote(text)}`, unexpected list at column 5"


def test_200k_ids_reach_the_grammar_as_one_placeholder(schema: CollectionSchema) -> None:
    """The finding: 200,000 ids (1.3 MB) went token by token through the grammar (~5 s)."""
    text = "id in [" + ", ".join(map(str, range(200_000))) + "]"
    short = literal_lists.shorten(text, {})
    assert short is not None and short.text == "id in {__strata_list_0}"
    expr = parse_filter(text, schema)
    assert isinstance(expr, InList) and expr.values == tuple(range(200_000))
    table = pa.table({"id": pa.array(np.arange(0, 400_000, 2, dtype=np.int64))})
    assert int(evaluate(expr, table).sum()) == 100_000
