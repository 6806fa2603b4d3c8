"""Random Milvus filter expressions, each paired with its meaning over a model row.

A ``Filter`` is the text sent to the servers and a predicate giving the row's
truth value (True, False, or None for unknown) under the rules in
``semantics.py``. Each leaf also records the ``Feature`` values milvus-lite
lacks or answers differently (``differences.py``), so the workload knows which
server to ask. Adding a kind of leaf is one method and one line in
``FilterMaker.leaves``.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from tests.differential.data import JSON_INTS, MAX_CAPACITY, SMALL_INTS, WORDS, CollectionSpec, Row
from tests.differential.differences import Feature
from tests.differential.semantics import (
    MIRRORED,
    MISSING,
    OPS,
    JsonPath,
    arithmetic,
    is_number,
    json_compare,
    json_value,
    like_pattern,
    literal,
    path_text,
)

Truth = bool | None
Predicate = Callable[[Row], Truth]

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


_JSON_NEGATED: Final = frozenset({Feature.JSON_NEGATED})
_ARRAY_NEGATED: Final = frozenset({Feature.ARRAY_NEGATED})


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


def _contains(fn: str, have: Collection[object], values: Sequence[object]) -> bool:
    """``json_contains*`` / ``array_contains*`` (any spelling) of ``values[0]`` or ``values`` in ``have``."""
    name = fn.lower()
    if name.endswith("_all"):
        return all(v in have for v in values)
    if name.endswith("_any"):
        return any(v in have for v in values)
    return values[0] in have


class FilterMaker:
    """Random filters over one collection's fields, with constants often taken from its live rows."""

    def __init__(
        self, rng: random.Random, spec: CollectionSpec, rows: Mapping[int, Row], wide_ints: Callable[[], bool]
    ) -> None:
        self._rng = rng
        self._spec = spec
        self._rows = rows
        self._wide_ints = wide_ints  # whether an ``i`` beyond ±2**53 was ever written (deleted rows count too)
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

    # ---- constants -------------------------------------------------------------------------------------------

    def _sample(self, field: str) -> Any:
        """A value of ``field`` from a live row (None when there is none or it is null)."""
        if not self._rows:
            return None
        return self._rng.choice(list(self._rows.values()))[field]

    def _constant(self, field: str) -> Any:
        rng = self._rng
        seen = self._sample(field) if rng.random() < 0.5 else None
        if seen is not None:
            return seen
        match field:
            case "id":
                return rng.randint(-2, max(self._rows, default=0) + 2)
            case "i":
                return rng.choice(SMALL_INTS) + (0.5 if rng.random() < 0.1 else 0)
            case "d":
                return rng.randint(-12, 12) / 4 if rng.random() < 0.9 else rng.randint(-3, 3)
            case "s":
                return rng.choice(WORDS)
        raise ValueError(f"no constants for {field}")

    def _nullable(self, field: str) -> bool:
        return field in self._spec.nullable

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

    def _json_like(self, pattern: str, regex: re.Pattern[str], features: frozenset[Feature]) -> Filter:
        path: JsonPath = ("name",)

        def truth(row: Row) -> Truth:
            v = json_value(row, path)
            if v is None:
                return None
            return isinstance(v, str) and regex.fullmatch(v) is not None

        return Filter(
            text=f"{path_text(path)} like {literal(pattern)}", truth=truth, features=features, if_negated=_JSON_NEGATED
        )

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
                      if_negated=_JSON_NEGATED if target == "meta" else frozenset())  # fmt: skip

    def compare_json(self) -> Filter:
        rng = self._rng
        path: JsonPath
        path, natural = rng.choice((
            (("a",), "number"),
            (("a",), "number"),
            (("name",), "string"),
            (("flag",), "bool"),
            (("n", "x"), "number"),
            (("tags", 0), "number"),
        ))  # fmt: skip
        kind = natural if rng.random() < 0.85 else rng.choice(("number", "string", "bool"))
        c: object
        if kind == "number":
            c = rng.choice(JSON_INTS) if rng.random() < 0.85 else rng.choice((1.5, 2.0, -1))
        elif kind == "string":
            c = rng.choice(WORDS) if natural == "string" else rng.choice(("1", "x"))
        else:
            c = rng.random() < 0.5
        op = rng.choice(("==", "!=")) if kind == "bool" else rng.choice(tuple(OPS))
        features: set[Feature] = {Feature.JSON_NEGATED} if op == "!=" else set()
        if (kind == "bool") != (natural == "bool"):
            features.add(Feature.JSON_BOOL_VS_NUMBER)

        def truth(row: Row) -> Truth:
            v = json_value(row, path)
            return None if v is None else json_compare(op, v, c)

        return Filter(text=f"{path_text(path)} {op} {literal(c)}", truth=truth, features=frozenset(features),
                      if_negated=_JSON_NEGATED)  # fmt: skip

    def json_contains(self) -> Filter:
        rng = self._rng
        fn = rng.choice(("json_contains", "json_contains_any", "json_contains_all", "JSON_CONTAINS"))
        values = rng.sample(JSON_INTS, rng.randint(1, 3))
        arg: object = values[0] if fn.lower() == "json_contains" else values
        path: JsonPath = ("tags",)

        def truth(row: Row) -> Truth:
            tags = json_value(row, path)
            if tags is None:
                return None
            if not isinstance(tags, list):
                return False
            return _contains(fn, {t for t in tags if is_number(t)}, values)

        return Filter(text=f"{fn}({path_text(path)}, {literal(arg)})", truth=truth, if_negated=_JSON_NEGATED)

    def json_exists(self) -> Filter:
        path: JsonPath = self._rng.choice((("a",), ("n", "x"), ("flag",)))
        spelled = f"exists {path_text(path)}" if self._rng.random() < 0.5 else f"exists({path_text(path)})"

        def truth(row: Row) -> Truth:
            doc = row["meta"]
            if doc is None:
                return None
            cur: object = doc
            for key in path:
                if not (isinstance(key, str) and isinstance(cur, dict) and key in cur):
                    return False
                cur = cur[key]
            return True  # present, even when its value is JSON null

        return Filter(text=spelled, truth=truth, features=frozenset({Feature.JSON_EXISTS}), if_negated=_JSON_NEGATED)

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

    def json_membership(self) -> Filter:
        rng = self._rng
        values = rng.sample(JSON_INTS, rng.randint(1, 3))
        negated = rng.random() < 0.3
        features = {Feature.JSON_IN} | ({Feature.JSON_NEGATED} if negated else set())
        path: JsonPath = ("a",)

        def truth(row: Row) -> Truth:
            v = json_value(row, path)
            if v is None:
                return None
            return (is_number(v) and v in values) != negated

        return Filter(text=f"{path_text(path)} {'not in' if negated else 'in'} {literal(values)}", truth=truth,
                      features=frozenset(features), if_negated=_JSON_NEGATED)  # fmt: skip

    def json_array_length(self) -> Filter:
        op = self._rng.choice(tuple(OPS))
        n = self._rng.randint(0, 3)
        path: JsonPath = ("tags",)
        features = {Feature.JSON_ARRAY_LENGTH} | ({Feature.JSON_NEGATED} if op == "!=" else set())

        def truth(row: Row) -> Truth:
            tags = json_value(row, path)
            if tags is None:
                return None
            return OPS[op](len(tags), n) if isinstance(tags, list) else op == "!="

        return Filter(text=f"array_length({path_text(path)}) {op} {n}", truth=truth, features=frozenset(features),
                      if_negated=_JSON_NEGATED)  # fmt: skip

    def array_contains(self) -> Filter:
        rng = self._rng
        fn = rng.choice(("array_contains", "array_contains_any", "array_contains_all", "ARRAY_CONTAINS"))
        values = rng.sample(JSON_INTS, rng.randint(1, 3))
        arg: object = values[0] if fn.lower() == "array_contains" else values

        def truth(row: Row) -> Truth:
            arr = row["arr"]
            return None if arr is None else _contains(fn, arr, values)

        return Filter(text=f"{fn}(arr, {literal(arg)})", truth=truth, if_negated=_ARRAY_NEGATED)

    def array_length(self) -> Filter:
        op = self._rng.choice(tuple(OPS))
        n = self._rng.randint(0, MAX_CAPACITY)

        def truth(row: Row) -> Truth:
            arr = row["arr"]
            return None if arr is None else OPS[op](len(arr), n)

        features = (_ARRAY_NEGATED if op == "!=" else frozenset()) | (
            {Feature.NULL_ARRAY_LENGTH} if self._nullable("arr") else frozenset()
        )
        return Filter(text=f"array_length(arr) {op} {n}", truth=truth, features=features, if_negated=_ARRAY_NEGATED)

    def array_element(self) -> Filter:
        """``arr[k] op c``: false where ``arr`` is shorter than ``k + 1`` (``!=`` too), which ``not`` makes true."""
        rng = self._rng
        k = rng.randint(0, MAX_CAPACITY - 1)
        op = rng.choice(tuple(OPS))
        c = rng.choice(JSON_INTS)

        def truth(row: Row) -> Truth:
            arr = row["arr"]
            if arr is None:
                return None
            return k < len(arr) and OPS[op](arr[k], c)

        return Filter(text=f"arr[{k}] {op} {c}", truth=truth,
                      features=_ARRAY_NEGATED if op == "!=" else frozenset(), if_negated=_ARRAY_NEGATED)  # fmt: skip

    def array_equality(self) -> Filter:
        seen = self._sample("arr")
        values = list(seen) if seen is not None and self._rng.random() < 0.7 else self._rng.sample(JSON_INTS, 2)
        op = self._rng.choice(("==", "!="))

        def truth(row: Row) -> Truth:
            arr = row["arr"]
            return None if arr is None else (list(arr) == values) == (op == "==")

        return Filter(text=f"arr {op} {literal(values)}", truth=truth,
                      features=frozenset({Feature.ARRAY_LIST_EQUALITY}))

    def json_list_equality(self) -> Filter:
        seen = json_value(self._rng.choice(list(self._rows.values())), ("tags",)) if self._rows else MISSING
        values = list(seen) if isinstance(seen, list) else self._rng.sample(JSON_INTS, 2)
        path: JsonPath = ("tags",)

        def truth(row: Row) -> Truth:
            v = json_value(row, path)
            return None if v is None else json_compare("==", v, values)

        return Filter(text=f"{path_text(path)} == {literal(values)}", truth=truth,
                      features=frozenset({Feature.JSON_LIST_EQUALITY}), if_negated=_JSON_NEGATED)  # fmt: skip
