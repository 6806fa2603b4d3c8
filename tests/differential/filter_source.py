"""What every kind of random filter leaf draws on: the random source, the collection, its live rows, and the
constants taken from them (``FilterMaker`` in ``filters.py`` is made of these leaves)."""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from typing import Any, Final

from tests.differential.data import SMALL_INTS, WORDS, CollectionSpec, Row
from tests.differential.differences import Feature

# What a `not` around a leaf on a JSON path or an array adds (milvus-lite's null handling differs).
JSON_NEGATED: Final = frozenset({Feature.JSON_NEGATED})
ARRAY_NEGATED: Final = frozenset({Feature.ARRAY_NEGATED})


class FilterSource:
    """The state random filter leaves are drawn from."""

    def __init__(
        self, rng: random.Random, spec: CollectionSpec, rows: Mapping[int, Row], wide_ints: Callable[[], bool]
    ) -> None:
        self._rng = rng
        self._spec = spec
        self._rows = rows
        self._wide_ints = wide_ints  # whether an ``i`` beyond ±2**53 was ever written (deleted rows count too)

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
