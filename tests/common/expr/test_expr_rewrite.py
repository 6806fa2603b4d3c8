"""Many equalities on one field joined by `or` are evaluated as one `in` list, with the same answer."""

from __future__ import annotations

import time

import numpy as np
import pytest

from common.expr import evaluate, parse_filter, rewrite
from common.expr.ast import InList, Or
from common.expr.rewrite import MIN_TERMS
from common.schema import CollectionSchema
from tests.common.expr.conftest import TableBuilder


def _rows(n: int) -> list[dict[str, object]]:
    return [
        {"id": i, "age": None if i % 7 == 0 else i % 50, "name": None if i % 11 == 0 else f"n{i % 40}",
         "score": float(i % 9)}
        for i in range(n)
    ]


@pytest.mark.parametrize(
    "text",
    [
        " or ".join(f"age == {v}" for v in range(0, 40, 2)),
        " or ".join(f"{v} == age" for v in range(20)),
        " or ".join(f'name == "n{v}"' for v in range(0, 60, 3)),
        " or ".join([*(f"age == {v}" for v in range(20)), "score > 7", *(f'name == "n{v}"' for v in range(18))]),
    ],
)
def test_the_rewrite_answers_as_the_chain_does(
    text: str, schema: CollectionSchema, table_of: TableBuilder, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = table_of(_rows(300))
    wrapped = f"not ({text})"  # null rows stay unknown: false under `not` as well
    rewritten = [parse_filter(t, schema) for t in (text, wrapped)]
    first = rewritten[0]
    assert any(isinstance(e, InList) for e in (first.operands if isinstance(first, Or) else (first,)))
    monkeypatch.setattr(rewrite, "MIN_TERMS", 10**9)
    as_written = [parse_filter(t, schema) for t in (text, wrapped)]
    assert not any(isinstance(e, InList) for e in as_written[0].operands)  # type: ignore[union-attr]
    for new, old in zip(rewritten, as_written, strict=True):
        np.testing.assert_array_equal(evaluate(new, table), evaluate(old, table))


def test_short_chains_and_float_constants_stay_as_written(schema: CollectionSchema) -> None:
    short = parse_filter(" or ".join(f"age == {v}" for v in range(MIN_TERMS - 1)), schema)
    assert isinstance(short, Or) and not any(isinstance(e, InList) for e in short.operands)
    floats = parse_filter(" or ".join(f"score == {v}.5" for v in range(40)), schema)
    assert isinstance(floats, Or) and not any(isinstance(e, InList) for e in floats.operands)


def test_a_chain_of_100k_equalities_is_a_set_lookup(schema: CollectionSchema, table_of: TableBuilder) -> None:
    table = table_of(_rows(2000))
    text = " or ".join(f"id == {v}" for v in range(0, 200_000, 2))
    began = time.perf_counter()
    got = evaluate(parse_filter(text, schema), table)
    took = time.perf_counter() - began
    assert got.sum() == 1000 and got[::2].all()
    print(f"100k-term or chain: parse + evaluate {took:.2f} s")
