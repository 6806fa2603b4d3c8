"""Property tests: evaluate() against a row-by-row reference evaluator.

Hypothesis draws a table (nullable ints, floats, strings, bools, JSON
documents, dynamic keys, ARRAY fields of ints, int8s, float32s, strings and
bools) and a random filter as a small test-side tree. The
tree is rendered to filter text (with random keyword spellings and only the
parentheses precedence requires), parsed, evaluated, and compared with the
plain-Python reference evaluation of the same tree in ``expr_model.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from common.errors import IllegalFilter
from common.expr import Expr, evaluate, parse_filter, referenced_fields, render
from common.schema import CollectionSchema
from tests.common.expr.expr_model import Node, Reference, node, render_pred, subtrees

TableBuilder = Callable[[list[dict[str, Any]]], pa.Table]

SETTINGS = settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

# ------------------------------------------------------------------ tables

INTS = st.integers(-6, 6)
FLOATS = st.one_of(
    st.sampled_from([-2.5, -1.0, 0.0, 0.5, 1.0, 3.0]),
    # Three decimals keep nested arithmetic far from overflow and subnormals.
    st.floats(-10, 10).map(lambda f: round(f, 3)),
)
TEXT = st.text(alphabet="ab%_\\", max_size=4)
JSON_SCALAR = st.one_of(st.none(), st.booleans(), INTS, FLOATS, st.text(alphabet="ab", max_size=2))
JSON_VALUE = st.one_of(JSON_SCALAR, st.lists(JSON_SCALAR, max_size=3))
TAGS = st.one_of(JSON_SCALAR, st.lists(st.sampled_from(["a", "b", 1, 2.0, True]), max_size=3))
META = st.one_of(
    st.none(),
    st.fixed_dictionaries(
        {"a": JSON_VALUE},
        optional={"b": st.fixed_dictionaries({"c": JSON_SCALAR}), "tags": TAGS},
    ),
)


def sometimes_null(values: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``values`` three times in four, else null."""
    return st.one_of(values, values, values, st.none())


# Array elements come from small domains, so that `a == [..]`, `a[i] == v` and
# `array_contains*` find matches; arrays hold at most 4 (the capacity).
ARRAY_INTS = st.integers(-2, 3)
ARRAY_FLOATS = st.sampled_from([-1.5, 0.0, 0.5, 1.0, 2.0, 0.1])
ARRAY_WORDS = st.text(alphabet="ab%", max_size=2)
ARRAY_ELEMENTS: dict[str, st.SearchStrategy[Any]] = {
    "ints": ARRAY_INTS,
    "bytes8": ARRAY_INTS,
    "floats": ARRAY_FLOATS,
    "words": ARRAY_WORDS,
    "flags": st.booleans(),
}


ROW = st.fixed_dictionaries(
    {
        "age": sometimes_null(INTS),
        "small": sometimes_null(INTS),
        "score": sometimes_null(FLOATS),
        "ratio": sometimes_null(FLOATS),
        "name": sometimes_null(TEXT),
        "active": sometimes_null(st.booleans()),
        "meta": META,
        **{name: sometimes_null(st.lists(element, max_size=4)) for name, element in ARRAY_ELEMENTS.items()},
    },
    # Rows without dynamic keys store a null $meta.
    optional={"x": JSON_VALUE, "tags": TAGS},
)
ROWS = st.lists(ROW, min_size=3, max_size=25).map(lambda rows: [{"id": i, **r} for i, r in enumerate(rows)])

# ------------------------------------------------------- expression trees


NUM_FIELDS = st.sampled_from(["age", "small", "score", "ratio", "id"]).map(lambda f: node("field", f))
JSON_PATHS = st.sampled_from([("meta", ("a",)), ("meta", ("b", "c")), ("meta", ("tags", 0)), ("$meta", ("x",))]).map(
    lambda p: node("json", *p)
)
LIST_PATHS = st.sampled_from([("meta", ("tags",)), ("$meta", ("tags",)), ("meta", ("a",))]).map(
    lambda p: node("json", *p)
)
NUM_LITS = st.one_of(INTS, st.sampled_from([-2.5, 0.5, 1.5, 4.0])).map(lambda v: node("lit", v))
ALENS = LIST_PATHS.map(lambda p: node("alen", p))
ARITH_OPS = st.sampled_from(["+", "-", "*", "/", "%"])


def arithmetic(inner: st.SearchStrategy[Node]) -> st.SearchStrategy[Node]:
    """One arithmetic step over ``inner``, often with a literal (maybe 0) divisor."""
    return st.one_of(
        st.tuples(ARITH_OPS, inner, inner).map(lambda t: node("arith", *t)),
        st.tuples(ARITH_OPS, inner, NUM_LITS).map(lambda t: node("arith", *t)),
        st.tuples(inner, st.sampled_from([2, 3])).map(lambda t: node("arith", "**", t[0], node("lit", t[1]))),
    )


# ARRAY fields: whole arrays, elements (index 4 is always past the end) and lengths.
NUM_ARRAYS = ("ints", "bytes8", "floats")
INDEXES = st.integers(0, 4)
NUM_ELEMS = st.tuples(st.sampled_from(NUM_ARRAYS), INDEXES).map(lambda t: node("elem", *t))
WORD_ELEMS = INDEXES.map(lambda i: node("elem", "words", i))
ARRAY_LENS = st.sampled_from(list(ARRAY_ELEMENTS)).map(lambda a: node("alen", node("field", a)))

# Scalar-only operands take the vectorised Arrow path, JSON ones the row-wise
# path; mixed ones exercise both rules meeting.
SCALAR_NUMS = st.recursive(st.one_of(NUM_FIELDS, NUM_FIELDS, NUM_LITS), arithmetic, max_leaves=3)
JSON_NUMS = st.recursive(st.one_of(JSON_PATHS, JSON_PATHS, ALENS, NUM_LITS), arithmetic, max_leaves=3)
MIXED_NUMS = st.recursive(st.one_of(NUM_FIELDS, NUM_LITS, JSON_PATHS, ALENS), arithmetic, max_leaves=3)
ARRAY_NUMS = st.recursive(st.one_of(NUM_ELEMS, NUM_ELEMS, ARRAY_LENS, NUM_FIELDS, NUM_LITS), arithmetic, max_leaves=3)
NUM_OPERANDS = st.one_of(SCALAR_NUMS, JSON_NUMS, MIXED_NUMS, ARRAY_NUMS)
CMP_OPS = st.sampled_from(["==", "!=", "<", "<=", ">", ">="])
STR_LITS = st.text(alphabet="ab%_", max_size=3).map(lambda v: node("lit", v))
ANY_LIT = st.one_of(INTS, FLOATS, st.booleans(), st.text(alphabet="ab", max_size=2))


def _range_leaf(t: tuple[Any, ...]) -> Node:
    low, ops, operand, high = t
    return node("range", low, ops[0], operand, ops[1], high)


def _array_contains(prefix: str, array: str, suffix: str, values: list[Any]) -> Node:
    """``array_contains*`` (or its ``json_contains*`` alias); the one-value form takes the first value."""
    return node("contains", f"{prefix}_contains{suffix}", node("field", array), values if suffix else values[:1])


ARRAY_WANTED = st.sampled_from(list(ARRAY_ELEMENTS)).flatmap(
    lambda a: st.tuples(st.just(a), st.lists(ARRAY_ELEMENTS[a], min_size=1, max_size=3))
)
# Every array operator Milvus has: a[i] in comparisons, ranges, arithmetic,
# `in` and `like`; array_length; array_contains(_all/_any); a == [..]; is null.
ARRAY_LEAVES = st.one_of(
    st.tuples(CMP_OPS, ARRAY_NUMS, NUM_LITS).map(lambda t: node("cmp", *t)),
    st.tuples(CMP_OPS, ARRAY_NUMS, NUM_OPERANDS).map(lambda t: node("cmp", *t)),
    st.tuples(CMP_OPS, WORD_ELEMS, st.one_of(STR_LITS, WORD_ELEMS, st.just(node("field", "name")))).map(
        lambda t: node("cmp", *t)
    ),
    st.tuples(
        st.sampled_from(["==", "!="]),
        INDEXES.map(lambda i: node("elem", "flags", i)),
        st.booleans().map(lambda b: node("lit", b)),
    ).map(lambda t: node("cmp", *t)),
    st.sampled_from(list(ARRAY_ELEMENTS))
    .flatmap(
        lambda a: st.tuples(
            st.sampled_from(["==", "!="]),
            st.just(node("field", a)),
            st.lists(ARRAY_ELEMENTS[a], max_size=3).map(lambda v: node("lit", v)),
        )
    )
    .map(lambda t: node("cmp", *t)),
    st.tuples(NUM_ELEMS, st.lists(ARRAY_INTS | ARRAY_FLOATS, max_size=4), st.booleans()).map(lambda t: node("in", *t)),
    st.tuples(WORD_ELEMS, st.lists(ARRAY_WORDS, max_size=3), st.booleans()).map(lambda t: node("in", *t)),
    st.tuples(WORD_ELEMS, TEXT, st.booleans()).map(lambda t: node("like", *t)),
    st.tuples(
        st.sampled_from(["array", "json"]),
        ARRAY_WANTED,
        st.sampled_from(["", "_all", "_any"]),
    ).map(lambda t: _array_contains(t[0], t[1][0], t[2], t[1][1])),
    st.tuples(st.sampled_from(list(ARRAY_ELEMENTS)).map(lambda a: node("field", a)), st.booleans()).map(
        lambda t: node("isnull", *t)
    ),
    INDEXES.map(lambda i: node("elem", "flags", i)),
)


LEAVES = st.one_of(
    st.tuples(CMP_OPS, SCALAR_NUMS, NUM_LITS).map(lambda t: node("cmp", *t)),
    st.tuples(CMP_OPS, SCALAR_NUMS, SCALAR_NUMS).map(lambda t: node("cmp", *t)),
    st.tuples(CMP_OPS, JSON_NUMS, NUM_LITS).map(lambda t: node("cmp", *t)),
    st.tuples(CMP_OPS, NUM_OPERANDS, NUM_OPERANDS).map(lambda t: node("cmp", *t)),
    st.tuples(CMP_OPS, JSON_PATHS, NUM_LITS).map(lambda t: node("cmp", *t)),
    st.tuples(CMP_OPS, st.just(node("field", "name")), st.one_of(STR_LITS, st.just(node("field", "name")))).map(
        lambda t: node("cmp", *t)
    ),
    st.tuples(CMP_OPS, JSON_PATHS, STR_LITS).map(lambda t: node("cmp", *t)),
    st.tuples(
        st.sampled_from(["==", "!="]),
        JSON_PATHS,
        st.one_of(st.booleans(), st.sampled_from([0, 1])).map(lambda b: node("lit", b)),
    ).map(lambda t: node("cmp", *t)),
    st.tuples(
        NUM_LITS,
        st.sampled_from([("<", "<="), ("<=", "<"), (">", ">="), (">=", ">")]),
        NUM_OPERANDS,
        NUM_LITS,
    ).map(_range_leaf),
    st.tuples(NUM_FIELDS, st.lists(INTS | st.sampled_from([0.5, 1.0]), max_size=4), st.booleans()).map(
        lambda t: node("in", *t)
    ),
    st.tuples(st.just(node("field", "name")), st.lists(TEXT, max_size=3), st.booleans()).map(lambda t: node("in", *t)),
    st.tuples(JSON_PATHS, st.lists(ANY_LIT, max_size=4), st.booleans()).map(lambda t: node("in", *t)),
    st.tuples(st.just(node("field", "name")) | JSON_PATHS, TEXT, st.booleans()).map(lambda t: node("like", *t)),
    st.tuples(
        st.sampled_from(["age", "score", "name", "active", "meta"]).map(lambda f: node("field", f)) | JSON_PATHS,
        st.booleans(),
    ).map(lambda t: node("isnull", *t)),
    st.tuples(
        st.sampled_from(["json_contains", "json_contains_all", "json_contains_any"]),
        LIST_PATHS,
        st.lists(st.sampled_from(["a", "b", 1, 2, True, 0.5]), max_size=3),
    ).map(lambda t: node("contains", *t)),
    st.one_of(JSON_PATHS, LIST_PATHS).map(lambda p: node("exists", p)),
    st.just(node("field", "active")),
    ARRAY_LEAVES,
)
PREDICATES = st.recursive(
    LEAVES,
    lambda inner: st.one_of(
        st.tuples(st.sampled_from(["and", "or"]), inner, inner).map(lambda t: node(*t)),
        inner.map(lambda x: node("not", x)),
    ),
    max_leaves=4,
)

# ------------------------------------------------------------------- tests


def parse_or_reject(text: str, schema: CollectionSchema) -> Expr:
    try:
        return parse_filter(text, schema)
    except IllegalFilter as err:
        # Constant sub-expressions are folded at parse time; 1 / 0 is refused.
        assume("division by zero" not in err.message)
        raise


def check_against_reference(
    tree: Node,
    rows: list[dict[str, Any]],
    draw: Callable[[st.SearchStrategy[Any]], Any],
    schema: CollectionSchema,
    table_of: TableBuilder,
) -> None:
    table = table_of(rows)
    stored_rows = table.to_pylist()
    for sub in subtrees(tree):
        text = render_pred(sub, draw)
        got = evaluate(parse_or_reject(text, schema), table)
        expected = [Reference(r).eval(sub) is True for r in stored_rows]
        assert got.dtype == np.bool_
        assert got.tolist() == expected, text


@SETTINGS
@given(rows=ROWS, tree=PREDICATES, data=st.data())
def test_evaluate_matches_reference(
    rows: list[dict[str, Any]],
    tree: Node,
    data: st.DataObject,
    schema: CollectionSchema,
    table_of: TableBuilder,
) -> None:
    check_against_reference(tree, rows, data.draw, schema, table_of)


ARRAY_PREDICATES = st.recursive(
    st.one_of(
        ARRAY_LEAVES,
        st.tuples(NUM_LITS, st.sampled_from([("<", "<="), (">=", ">")]), ARRAY_NUMS, NUM_LITS).map(_range_leaf),
    ),
    lambda inner: st.one_of(
        st.tuples(st.sampled_from(["and", "or"]), inner, inner).map(lambda t: node(*t)),
        inner.map(lambda x: node("not", x)),
    ),
    max_leaves=3,
)


@SETTINGS
@given(rows=ROWS, tree=ARRAY_PREDICATES, data=st.data())
def test_arrays_match_reference(
    rows: list[dict[str, Any]],
    tree: Node,
    data: st.DataObject,
    schema: CollectionSchema,
    table_of: TableBuilder,
) -> None:
    check_against_reference(tree, rows, data.draw, schema, table_of)


ARITH_LEAVES = st.tuples(CMP_OPS, st.one_of(arithmetic(SCALAR_NUMS), arithmetic(JSON_NUMS)), NUM_LITS).map(
    lambda t: node("cmp", *t)
)


@SETTINGS
@given(rows=ROWS, tree=ARITH_LEAVES, data=st.data())
def test_arithmetic_matches_reference(
    rows: list[dict[str, Any]],
    tree: Node,
    data: st.DataObject,
    schema: CollectionSchema,
    table_of: TableBuilder,
) -> None:
    check_against_reference(node("not", tree), rows, data.draw, schema, table_of)


PATTERNS = st.text(alphabet="ab%_\\", max_size=5)
LIKE_LEAVES = st.tuples(
    st.sampled_from([node("field", "name"), node("json", "meta", ("a",))]), PATTERNS, st.booleans()
).map(lambda t: node("like", *t))
LIKE_ROWS = st.lists(
    st.fixed_dictionaries({"name": TEXT, "meta": st.fixed_dictionaries({"a": TEXT})}),
    min_size=1,
    max_size=25,
).map(lambda rows: [{"id": i, **r} for i, r in enumerate(rows)])


@SETTINGS
@given(rows=LIKE_ROWS, tree=LIKE_LEAVES, data=st.data())
def test_like_matches_reference(
    rows: list[dict[str, Any]],
    tree: Node,
    data: st.DataObject,
    schema: CollectionSchema,
    table_of: TableBuilder,
) -> None:
    check_against_reference(tree, rows, data.draw, schema, table_of)


@SETTINGS
@given(rows=ROWS, tree=PREDICATES, data=st.data())
def test_reads_only_referenced_fields(
    rows: list[dict[str, Any]],
    tree: Node,
    data: st.DataObject,
    schema: CollectionSchema,
    table_of: TableBuilder,
) -> None:
    table = table_of(rows)
    expr = parse_or_reject(render_pred(tree, data.draw), schema)
    narrow = table.select(sorted(referenced_fields(expr)))
    chunked = pa.concat_tables([table.slice(0, len(rows) // 2), table.slice(len(rows) // 2)])
    assert evaluate(expr, narrow).tolist() == evaluate(expr, table).tolist()
    assert evaluate(expr, chunked).tolist() == evaluate(expr, table).tolist()


@settings(max_examples=150, deadline=None)
@given(tree=PREDICATES, data=st.data())
def test_render_round_trips(tree: Node, data: st.DataObject, schema: CollectionSchema) -> None:
    expr = parse_or_reject(render_pred(tree, data.draw), schema)
    assert parse_filter(render(expr), schema) == expr
