"""A bound filter sent over gRPC (``common/expr/wire.py``) decodes to the tree the proxy bound."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from common.errors import InvalidArgument
from common.expr import evaluate, parse_filter
from common.expr.wire import decode_expr, encode_expr
from common.schema import CollectionSchema
from tests.common.expr.conftest import TableBuilder
from tests.common.expr.expr_model import Node, render_pred
from tests.common.expr.test_expr_properties import PREDICATES, parse_or_reject

TEXTS = [
    'age > 1 and (name like "a%" or not active)',
    "1 <= age < 10 and score * 2 - 1 >= ratio",
    'meta["a"]["b"] in [1, "x", [2, 3]] or exists $meta["k"]',
    'json_contains_all(meta["t"], ["a", "b"]) and array_length(ints) == 2',
    "age is not null and meta is null",
    "(age + 1) ** 2 % 3 != 0.5",
    "score > -0.0 and score < -2.5 * 0",
    'name not like "a\\\\%b" and name == "quo\\"te\\n"',
    "ints[1] > 3 and array_contains_any(words, [\"a\", \"é\"]) and flags[0] == true",
    "score < 1e308 * 10 and true",
    "id in [" + ", ".join(str(i) for i in range(5000)) + "]",
]


@pytest.mark.parametrize("text", TEXTS)
def test_a_bound_filter_survives_the_wire(text: str, schema: CollectionSchema) -> None:
    expr = parse_filter(text, schema)
    decoded = decode_expr(encode_expr(expr))
    assert decoded == expr
    assert repr(decoded) == repr(expr)  # the raw constants too (True is not 1, 2.0 is not 2)


def test_placeholders_travel_bound(schema: CollectionSchema) -> None:
    expr = parse_filter("id in {ids} and name == {n}", schema, {"ids": [3, 1, 2], "n": "x"})
    assert decode_expr(encode_expr(expr)) == expr


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tree=PREDICATES, data=st.data())
def test_any_filter_evaluates_the_same_after_the_wire(
    tree: Node, data: st.DataObject, schema: CollectionSchema, table_of: TableBuilder
) -> None:
    expr = parse_or_reject(render_pred(tree, data.draw), schema)
    decoded = decode_expr(encode_expr(expr))
    assert repr(decoded) == repr(expr)
    table = table_of([{"id": 1, "age": 3, "name": "ab", "meta": {"a": 1}}, {"id": 2}])
    assert evaluate(decoded, table).tolist() == evaluate(expr, table).tolist()


@pytest.mark.parametrize(
    "raw",
    [
        b"not json",
        json.dumps({"$n": "os.system"}).encode(),
        json.dumps({"$n": "Const", "value": True, "extra": 1}).encode(),
        json.dumps({"$n": "Literal", "value": 1}).encode(),  # an operand is no predicate
        json.dumps({"$n": "Compare", "op": {"$e": "Unknown", "v": 1}}).encode(),
        b"[" * 100_000,
    ],
)
def test_anything_else_is_refused(raw: bytes) -> None:
    with pytest.raises(InvalidArgument, match="malformed filter expression"):
        decode_expr(raw)


def test_a_text_match_survives_the_wire() -> None:
    from common.expr.ast import And, Const, FieldRef, TextMatch
    from common.schema import DataType

    expr = And(operands=(TextMatch(field=FieldRef(name="t", dtype=DataType.VARCHAR), query="a b", slop=2,
                                   analyzer_params='{"tokenizer": "standard"}'), Const(value=True)))
    assert repr(decode_expr(encode_expr(expr))) == repr(expr)
