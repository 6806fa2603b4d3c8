"""A workload step: one ``MilvusClient`` call and the answer the model expects. Data only."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum, auto
from typing import Any, Final, Literal

from tests.differential.differences import Feature, model_only

STRONG: Final = "Strong"


class Shape(Enum):
    """What a call answers, hence how answers are compared (``compare.py``)."""

    ACK = auto()  # only whether it raised
    VALUE = auto()  # the answer as is (insert/upsert results, has_collection)
    PKS = auto()  # how many keys a delete names or matches (its count, or the keys milvus-lite answers)
    ROWS = auto()  # rows in any order (query, get)
    PAGE = auto()  # a query with limit: rows of the matching set, as many as the page holds
    COUNT = auto()  # count(*)
    SEARCH = auto()  # hits per query vector, best first
    DESCRIBE = auto()  # describe_collection without server-assigned ids
    NAMES = auto()  # list_collections (restricted to this workload's names), list_partitions, list_aliases
    STATS = auto()  # get_collection_stats row_count


class Expect(Enum):
    RAISES = "the call must fail"
    ANSWERS = "the call must succeed; its answer is only compared between the servers"


@dataclass(frozen=True, slots=True, kw_only=True)
class PageExpectation:
    rows: tuple[Mapping[str, Any], ...]  # every matching row, projected, by ascending key
    limit: int
    offset: int


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchExpectation:
    ranked: tuple[tuple[tuple[int, float], ...], ...]  # per query vector: every matching (key, distance), best first
    entities: Mapping[int, Mapping[str, Any]]  # key -> the hit's expected entity
    limit: int
    offset: int
    metric: Literal["L2", "IP"]


@dataclass(frozen=True, slots=True, kw_only=True)
class NamesExpectation:
    prefix: str
    names: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Step:
    """One ``MilvusClient`` call: ``getattr(client, method)(**kwargs)``, and what it should answer.

    ``read`` steps change nothing and may run concurrently with the reads next
    to them. ``expect`` is an ``Expect`` or the model's answer for ``shape``.
    """

    index: int
    op: str
    method: str
    kwargs: Mapping[str, Any]
    shape: Shape
    read: bool
    expect: object
    features: frozenset[Feature] = frozenset()
    peer_kwargs: Mapping[str, Any] | None = None  # milvus-lite's arguments, where it needs others for the same rows

    @property
    def model_only(self) -> bool:
        """Whether milvus-lite is left out: it lacks or answers differently one of the step's features."""
        return model_only(self.features)

    def describe(self) -> str:
        args = ", ".join(f"{k}={_render(k, v)}" for k, v in self.kwargs.items())
        tags = (
            f"  [features: {', '.join(f.name for f in sorted(self.features, key=lambda f: f.name))}]"
            if self.features
            else ""
        )
        peer = ""
        if self.peer_kwargs is not None:
            peer = f"  [milvus-lite: {', '.join(f'{k}={_render(k, v)}' for k, v in self.peer_kwargs.items())}]"
        return f"step {self.index} ({self.op}): {self.method}({args}){tags}{peer}"


def _render(key: str, value: object) -> str:
    if key == "schema":
        return "<schema id INT64 pk, i INT64, d DOUBLE, s VARCHAR(32), b BOOL, meta JSON, arr ARRAY<INT64>(4), v FLOAT_VECTOR(8), sp SPARSE_FLOAT_VECTOR>"
    if key == "index_params":
        return "<FLAT on v, SPARSE_INVERTED_INDEX on sp>"
    if key == "data" and isinstance(value, list) and len(value) > 3:
        ids = [row.get("id") for row in value if isinstance(row, dict)]
        return f"<{len(value)} rows, ids {ids}; first {value[0]!r}>" if ids else f"<{len(value)} vectors>"
    return repr(value)


def strong(**kwargs: Any) -> dict[str, Any]:
    """A read's arguments at Strong consistency."""
    return {**kwargs, "consistency_level": STRONG}


def scoped(kwargs: dict[str, Any], partitions: list[str] | None) -> dict[str, Any]:
    """A read's arguments limited to ``partitions`` (None: all of them)."""
    return kwargs if partitions is None else {**kwargs, "partition_names": partitions}
