"""A filter expression and its meaning over a model row, and the and/or/not that combine filters.

A ``Filter`` is the text sent to the servers and a predicate giving the row's
truth value (True, False, or None for unknown) under the rules in
``semantics.py`` (three-valued logic: ``and``/``or`` are Kleene, ``not`` keeps
unknown), with the ``Feature`` values it exercises.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tests.differential.data import Row
from tests.differential.differences import Feature

Truth = bool | None
Predicate = Callable[[Row], Truth]


@dataclass(frozen=True, slots=True, kw_only=True)
class Filter:
    text: str
    truth: Predicate
    features: frozenset[Feature] = frozenset()
    if_negated: frozenset[Feature] = frozenset()  # what a `not` around it adds (milvus-lite's null handling differs)
    pk_lookup: bool = False  # exactly `id in [...]`
    keys: tuple[int, ...] = ()  # the keys a `pk_lookup` filter lists

    def holds(self, row: Row) -> bool:
        return self.truth(row) is True


def conjunction(a: Filter, b: Filter, word: str = "and") -> Filter:
    def truth(row: Row) -> Truth:
        x, y = a.truth(row), b.truth(row)
        if x is False or y is False:
            return False
        return None if x is None or y is None else True

    return Filter(text=f"({a.text}) {word} ({b.text})", truth=truth, features=a.features | b.features,
                  if_negated=a.if_negated | b.if_negated)  # fmt: skip


def disjunction(a: Filter, b: Filter, word: str = "or") -> Filter:
    def truth(row: Row) -> Truth:
        x, y = a.truth(row), b.truth(row)
        if x is True or y is True:
            return True
        return None if x is None or y is None else False

    return Filter(text=f"({a.text}) {word} ({b.text})", truth=truth, features=a.features | b.features,
                  if_negated=a.if_negated | b.if_negated)  # fmt: skip


def negation(a: Filter, word: str = "not") -> Filter:
    def truth(row: Row) -> Truth:
        x = a.truth(row)
        return None if x is None else not x

    return Filter(text=f"{word} ({a.text})", truth=truth, features=a.features | a.if_negated, if_negated=a.if_negated)

