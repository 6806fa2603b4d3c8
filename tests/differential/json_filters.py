"""Random filter leaves on the JSON field ``meta``: comparisons, ``like``, ``in``, ``json_contains*``,
``exists``, ``array_length`` of a JSON list and list equality, each with its three-valued predicate."""

from __future__ import annotations

import re

from tests.differential.data import JSON_INTS, WORDS, Row
from tests.differential.differences import Feature
from tests.differential.filter_source import JSON_NEGATED, FilterSource
from tests.differential.filter_tree import Filter, Truth
from tests.differential.semantics import (
    MISSING,
    OPS,
    JsonPath,
    contains,
    is_number,
    json_compare,
    json_value,
    literal,
    path_text,
)


class JsonFilters(FilterSource):
    """The JSON leaves of ``FilterMaker``."""

    def _json_like(self, pattern: str, regex: re.Pattern[str], features: frozenset[Feature]) -> Filter:
        path: JsonPath = ("name",)

        def truth(row: Row) -> Truth:
            v = json_value(row, path)
            if v is None:
                return None
            return isinstance(v, str) and regex.fullmatch(v) is not None

        return Filter(
            text=f"{path_text(path)} like {literal(pattern)}", truth=truth, features=features, if_negated=JSON_NEGATED
        )

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
                      if_negated=JSON_NEGATED)  # fmt: skip

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
            return contains(fn, {t for t in tags if is_number(t)}, values)

        return Filter(text=f"{fn}({path_text(path)}, {literal(arg)})", truth=truth, if_negated=JSON_NEGATED)

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

        return Filter(text=spelled, truth=truth, features=frozenset({Feature.JSON_EXISTS}), if_negated=JSON_NEGATED)

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
                      features=frozenset(features), if_negated=JSON_NEGATED)  # fmt: skip

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
                      if_negated=JSON_NEGATED)  # fmt: skip

    def json_list_equality(self) -> Filter:
        seen = json_value(self._rng.choice(list(self._rows.values())), ("tags",)) if self._rows else MISSING
        values = list(seen) if isinstance(seen, list) else self._rng.sample(JSON_INTS, 2)
        path: JsonPath = ("tags",)

        def truth(row: Row) -> Truth:
            v = json_value(row, path)
            return None if v is None else json_compare("==", v, values)

        return Filter(text=f"{path_text(path)} == {literal(values)}", truth=truth,
                      features=frozenset({Feature.JSON_LIST_EQUALITY}), if_negated=JSON_NEGATED)  # fmt: skip
