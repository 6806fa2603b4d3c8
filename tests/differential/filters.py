"""Random Milvus filter expressions, each paired with its meaning over a model row.

``FilterMaker`` draws a tree of and/or/not (``filter_tree.py``) over random
leaves: the scalar ones here, the JSON ones in ``json_filters.py``, the array
ones in ``array_filters.py``, all drawing constants from ``filter_source.py``.
Each leaf also records the ``Feature`` values milvus-lite lacks or answers
differently (``differences.py``), so the workload knows which server to ask.
Adding a kind of leaf is one method and one line in ``FilterMaker.leaves``.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from typing import Final

from tests.differential.array_filters import ArrayFilters
from tests.differential.data import JSON_INTS, SMALL_INTS, WORDS, CollectionSpec, Row
from tests.differential.differences import Feature
from tests.differential.filter_source import JSON_NEGATED
from tests.differential.filter_tree import Filter, Truth, conjunction, disjunction, negation
from tests.differential.json_filters import JsonFilters
from tests.differential.semantics import (
    MIRRORED,
    MISSING,
    OPS,
    JsonPath,
    arithmetic,
    is_number,
    json_value,
    like_pattern,
    literal,
    path_text,
)

# Filters both servers must refuse: syntax errors, unknown fields, type errors.
INVALID_FILTERS: Final = (
    "i >> 3",
    "meta == null",
    "zz > 1",
    "b == 1",
    "s == 1",
    "(i > 1",
    "i >",
    "id ==",
    'i like "a%"',
    "s in [1, 2]",
    "v > 1",
    'i + "a" > 1',
    "arr > 1",
)
# Filters Milvus and Strata refuse and milvus-lite answers (D15).
LITE_ACCEPTED_INVALID_FILTERS: Final = ('array_contains(arr, "x")', 'arr[0] == "x"')


class FilterMaker(JsonFilters, ArrayFilters):
    """Random filters over one collection's fields, with constants often taken from its live rows."""

    def __init__(
        self, rng: random.Random, spec: CollectionSpec, rows: Mapping[int, Row], wide_ints: Callable[[], bool]
    ) -> None:
        super().__init__(rng, spec, rows, wide_ints)
        self.leaves: Sequence[tuple[float, Callable[[], Filter]]] = (
            (6, self.compare_scalar),
            (1, self.compare_fields),
            (3, self.membership),
            (3, self.like),
            (2, self.null_check),
            (1, self.boolean),
            (3, self.arithmetic),
            (4, self.compare_json),
            (2, self.json_contains),
            (1, self.json_exists),
            (1, self.chained_range),
            (1, self.json_membership),
            (1, self.json_array_length),
            (0.5, self.json_list_equality),
            (2, self.array_contains),
            (1, self.array_length),
            (2, self.array_element),
            (0.5, self.array_equality),
        )

    def filter(self, depth: int = 2) -> Filter:
        """A random filter, ``depth`` levels of and/or/not at most."""
        rng = self._rng
        r = rng.random()
        if depth <= 0 or r < 0.45:
            return self.leaf()
        if r < 0.7:
            return conjunction(self.filter(depth - 1), self.filter(depth - 1), rng.choice(("and", "&&", "AND")))
        if r < 0.9:
            return disjunction(self.filter(depth - 1), self.filter(depth - 1), rng.choice(("or", "||")))
        return negation(self.filter(depth - 1), rng.choice(("not", "!")))

    def leaf(self) -> Filter:
        weights, makers = zip(*self.leaves, strict=True)
        return self._rng.choices(makers, weights=weights)[0]()

    # ---- leaves ----------------------------------------------------------------------------------------------

    def compare_scalar(self) -> Filter:
        rng = self._rng
        field = rng.choice(("id", "i", "i", "d", "d", "s"))
        op = rng.choice(tuple(OPS))
        c = self._constant(field)
        text = f"{literal(c)} {MIRRORED[op]} {field}" if rng.random() < 0.2 else f"{field} {op} {literal(c)}"

        def truth(row: Row) -> Truth:
            v = row[field]
            return None if v is None else OPS[op](v, c)

        return Filter(text=text, truth=truth, features=self._int_vs_double(field == "i" and isinstance(c, float)))

    def _int_vs_double(self, compares: bool) -> frozenset[Feature]:
        return frozenset({Feature.INT64_VS_DOUBLE}) if compares and self._wide_ints() else frozenset()

    def compare_fields(self) -> Filter:
        left, right = self._rng.choice((("i", "d"), ("id", "i"), ("d", "i")))
        op = self._rng.choice(tuple(OPS))

        def truth(row: Row) -> Truth:
            a, b = row[left], row[right]
            return None if a is None or b is None else OPS[op](a, b)

        return Filter(
            text=f"{left} {op} {right}", truth=truth, features=self._int_vs_double({left, right} == {"i", "d"})
        )

    def membership(self) -> Filter:
        rng = self._rng
        field = rng.choice(("id", "i", "s", "d"))
        values = [self._constant(field) for _ in range(rng.randint(0, 5))]
        if field == "i":
            values = [int(v) for v in values]
        negated = rng.random() < 0.4
        null_sensitive = frozenset({Feature.NOT_IN_NULL}) if self._nullable(field) else frozenset()

        def truth(row: Row) -> Truth:
            v = row[field]
            return None if v is None else (v in values) != negated

        features = null_sensitive if negated else frozenset()
        pk_lookup = field == "id" and not negated
        if pk_lookup and len(set(values)) < len(values):
            features |= {Feature.PK_LOOKUP}
        return Filter(text=f"{field} {'not in' if negated else 'in'} {literal(values)}", truth=truth,
                      features=features, if_negated=null_sensitive, pk_lookup=pk_lookup,
                      keys=tuple(values) if pk_lookup else ())  # fmt: skip

    def like(self) -> Filter:
        rng = self._rng
        word = rng.choice([w for w in WORDS if w]) if rng.random() < 0.8 else str(self._sample("s") or "a")
        cut = rng.randint(0, len(word))
        pattern = rng.choice((
            word[:cut] + "%",
            "%" + word[cut:],
            "%" + word[cut // 2 : cut] + "%",
            word[:cut] + "_" + word[cut + 1 :],
            word,
            "%",
            "a\\_b",
            "a\\%b",
            "%\\_%",
        ))  # fmt: skip
        regex = like_pattern(pattern)
        features = frozenset({Feature.LIKE_ESCAPE}) if "\\" in pattern else frozenset()
        if rng.random() < 0.25:
            return self._json_like(pattern, regex, features)

        def truth(row: Row) -> Truth:
            v = row["s"]
            return None if v is None else regex.fullmatch(v) is not None

        return Filter(text=f"s like {literal(pattern)}", truth=truth, features=features)

    def null_check(self) -> Filter:
        rng = self._rng
        negated = rng.random() < 0.5
        suffix = "is not null" if negated else "is null"
        nullable = sorted(self._spec.nullable - {"v"})  # a vector field is no filter operand (both refuse)
        if not nullable or rng.random() < 0.3:
            path: JsonPath = rng.choice((("a",), ("name",), ("n", "x"), ("tags", 0)))

            def json_truth(row: Row) -> Truth:
                v = json_value(row, path)
                return (v is None or v is MISSING) != negated

            return Filter(text=f"{path_text(path)} {suffix}", truth=json_truth)
        field = rng.choice(nullable)

        def truth(row: Row) -> Truth:
            return (row[field] is None) != negated

        return Filter(text=f"{field} {suffix}", truth=truth)

    def boolean(self) -> Filter:
        text, want = self._rng.choice((("b", True), ("b == true", True), ("b == false", False), ("b != false", True)))

        def truth(row: Row) -> Truth:
            return bool(row["b"]) == want

        return Filter(text=text, truth=truth)

    def arithmetic(self) -> Filter:
        rng = self._rng
        target = rng.choice(("i", "i", "d", "d", "meta"))
        cmp = rng.choice(tuple(OPS))
        features: set[Feature] = set()
        if target == "i":
            op = rng.choice(("+", "-", "*", "/", "%"))
            k: int | float = rng.choice((1, 2, 3, 4, -2, -3))
            features |= {Feature.INT_DIVISION} if op == "/" else {Feature.MODULO} if op == "%" else set()
        elif target == "d":
            op = rng.choice(("+", "-", "*", "/"))
            k = rng.choice((0.5, 2, 3, 0.25, 4, -1))
        else:
            op = rng.choice(("+", "-", "*", "/"))
            k = rng.choice((1, 2, 3))
            features |= {Feature.INT_DIVISION} if op == "/" else set()
            features |= {Feature.JSON_NEGATED} if cmp == "!=" else set()
        seen = self._sample(target) if target != "meta" else rng.choice(JSON_INTS)
        if isinstance(seen, int | float) and not isinstance(seen, bool) and rng.random() < 0.7:
            c = arithmetic(op, seen, k)
        else:
            c = rng.choice(SMALL_INTS)
        path: JsonPath = ("a",)
        left = path_text(path) if target == "meta" else target

        def truth(row: Row) -> Truth:
            v = json_value(row, path) if target == "meta" else row[target]
            if v is None:
                return None
            if not is_number(v):
                return cmp == "!="
            return OPS[cmp](arithmetic(op, v, k), c)

        return Filter(text=f"{left} {op} {literal(k)} {cmp} {literal(c)}", truth=truth, features=frozenset(features),
                      if_negated=JSON_NEGATED if target == "meta" else frozenset())  # fmt: skip

    def chained_range(self) -> Filter:
        rng = self._rng
        field = rng.choice(("i", "d"))
        lo, hi = sorted((self._constant(field), self._constant(field)))
        lo_op, hi_op = rng.choice(("<", "<=")), rng.choice(("<", "<="))
        if rng.random() < 0.5:
            text = f"{literal(lo)} {lo_op} {field} {hi_op} {literal(hi)}"
        else:
            text = f"{literal(hi)} {MIRRORED[hi_op]} {field} {MIRRORED[lo_op]} {literal(lo)}"

        def truth(row: Row) -> Truth:
            v = row[field]
            return None if v is None else OPS[lo_op](lo, v) and OPS[hi_op](v, hi)

        wide = self._int_vs_double(field == "i" and (isinstance(lo, float) or isinstance(hi, float)))
        return Filter(text=text, truth=truth, features=frozenset({Feature.CHAINED_RANGE}) | wide)
