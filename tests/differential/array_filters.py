"""Random filter leaves on the ARRAY<INT64> field ``arr``: ``array_contains*``, ``array_length``, ``arr[k]`` and
list equality, each with its three-valued predicate."""

from __future__ import annotations

from tests.differential.data import JSON_INTS, MAX_CAPACITY, Row
from tests.differential.differences import Feature
from tests.differential.filter_source import ARRAY_NEGATED, FilterSource
from tests.differential.filter_tree import Filter, Truth
from tests.differential.semantics import OPS, contains, literal


class ArrayFilters(FilterSource):
    """The array leaves of ``FilterMaker``."""

    def array_contains(self) -> Filter:
        rng = self._rng
        fn = rng.choice(("array_contains", "array_contains_any", "array_contains_all", "ARRAY_CONTAINS"))
        values = rng.sample(JSON_INTS, rng.randint(1, 3))
        arg: object = values[0] if fn.lower() == "array_contains" else values

        def truth(row: Row) -> Truth:
            arr = row["arr"]
            return None if arr is None else contains(fn, arr, values)

        return Filter(text=f"{fn}(arr, {literal(arg)})", truth=truth, if_negated=ARRAY_NEGATED)

    def array_length(self) -> Filter:
        op = self._rng.choice(tuple(OPS))
        n = self._rng.randint(0, MAX_CAPACITY)

        def truth(row: Row) -> Truth:
            arr = row["arr"]
            return None if arr is None else OPS[op](len(arr), n)

        features = (ARRAY_NEGATED if op == "!=" else frozenset()) | (
            {Feature.NULL_ARRAY_LENGTH} if self._nullable("arr") else frozenset()
        )
        return Filter(text=f"array_length(arr) {op} {n}", truth=truth, features=features, if_negated=ARRAY_NEGATED)

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
                      features=ARRAY_NEGATED if op == "!=" else frozenset(), if_negated=ARRAY_NEGATED)  # fmt: skip

    def array_equality(self) -> Filter:
        seen = self._sample("arr")
        values = list(seen) if seen is not None and self._rng.random() < 0.7 else self._rng.sample(JSON_INTS, 2)
        op = self._rng.choice(("==", "!="))

        def truth(row: Row) -> Truth:
            arr = row["arr"]
            return None if arr is None else (list(arr) == values) == (op == "==")

        return Filter(text=f"arr {op} {literal(values)}", truth=truth,
                      features=frozenset({Feature.ARRAY_LIST_EQUALITY}))
