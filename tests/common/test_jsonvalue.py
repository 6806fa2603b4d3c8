"""load_json: JSON from clients is refused past MAX_JSON_DEPTH before anything recursive runs,
and whatever is accepted survives every recursive step that later handles it."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from common.expr import evaluate, parse_filter
from common.jsonvalue import MAX_JSON_DEPTH, JsonTooDeep, check_depth, load_json, nesting_depth
from tests.common.expr.conftest import build_schema, build_table


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize(
    ("text", "depth"),
    [
        ("1", 0),
        ('"[[[["', 0),
        ("[]", 1),
        ('{"a": [1]}', 2),
        ('["]]]\\"[[", [[1]]]', 3),
        ('{"a": "\\\\", "b": [[]]}', 3),
        (_nested(1000), 1000),
        ('{"k": ' * 300 + "1" + "}" * 300, 300),
    ],
)
def test_nesting_depth_ignores_brackets_in_strings(text: str, depth: int) -> None:
    assert nesting_depth(text) == depth
    assert nesting_depth(text.encode()) == depth


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 10_000, 100_000, 1_000_000])
@pytest.mark.parametrize("shape", ["list", "object"])
def test_too_deep_documents_are_refused_before_decoding(depth: int, shape: str) -> None:
    text = _nested(depth) if shape == "list" else '{"a":' * depth + "1" + "}" * depth
    with pytest.raises(JsonTooDeep, match=f"nested more than {MAX_JSON_DEPTH} levels deep"):
        load_json(text)
    with pytest.raises(ValueError):  # callers that catch ValueError for bad JSON catch this too
        load_json(text.encode())


def test_documents_up_to_the_limit_are_decoded() -> None:
    doc = load_json(_nested(MAX_JSON_DEPTH))
    for _ in range(MAX_JSON_DEPTH - 1):
        doc = doc[0]
    assert doc == []
    many = json.dumps({"k": ["[" * 50] * 1000, "n": [[1]] * 1000})  # many brackets, little depth
    check_depth(many)
    assert load_json(many)["n"][5] == [1]


def test_invalid_json_is_still_a_value_error() -> None:
    with pytest.raises(ValueError) as info:
        load_json('{"a": ')
    assert not isinstance(info.value, JsonTooDeep)


def _on_a_deep_stack(frames: int, fn: Callable[[], object]) -> object:
    return fn() if frames == 0 else _on_a_deep_stack(frames - 1, fn)


def test_the_deepest_accepted_document_is_filtered_and_dumped() -> None:
    """A stored value at the limit goes through the evaluator's decoding and comparisons and
    back out through json.dumps, even called from deep inside a server."""
    schema = build_schema(dynamic=True)
    deepest = load_json(_nested(MAX_JSON_DEPTH))
    table = build_table(schema, [{"id": 1, "meta": {"k": deepest}, "x": deepest}, {"id": 2, "meta": {"k": 1}}])

    def everything() -> object:
        for text, expected in [
            ('meta["k"] == 1', [False, True]),
            ('meta["k"] == [[[1]]]', [False, False]),
            ('json_contains(meta["k"], [[[]]])', [False, False]),
            ('meta["k"][0][0][0] != 1', [True, True]),
            ("exists x", [True, False]),
        ]:
            assert evaluate(parse_filter(text, schema), table).tolist() == expected, text
        return json.dumps(deepest)

    _on_a_deep_stack(300, everything)
