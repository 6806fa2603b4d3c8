"""What index to build: the kind, the metric and the build parameters, validated like Milvus.

``index_type`` is ``FLAT``, ``HNSW`` or ``AUTOINDEX`` (any case); AUTOINDEX is
HNSW with the default build parameters (any given ones are ignored, as Milvus
picks them itself). HNSW reads ``M`` (in [2, 2048], default 16) and
``efConstruction`` (in [1, 2**31 - 1], default 200); values may be integers or
decimal strings, as pymilvus sends them. Other keys are ignored. Every error is
an ``InvalidArgument`` whose message names the parameter.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import assert_never

from querynode.segments.metric import Metric, UnknownMetricError, parse_metric
from services.errors import InvalidArgument

INT32_MAX = 2**31 - 1

#: Milvus' bounds and defaults for HNSW.
M_RANGE = (2, 2048)
EF_CONSTRUCTION_RANGE = (1, INT32_MAX)
DEFAULT_M = 16
DEFAULT_EF_CONSTRUCTION = 200


class IndexKind(enum.Enum):
    """What is actually built."""

    FLAT = "FLAT"
    HNSW = "HNSW"


#: Accepted ``index_type`` names (upper case) and the kind each builds.
INDEX_TYPES: Mapping[str, IndexKind] = {
    "FLAT": IndexKind.FLAT,
    "HNSW": IndexKind.HNSW,
    "AUTOINDEX": IndexKind.HNSW,
}


@dataclass(frozen=True, slots=True, kw_only=True)
class HnswParams:
    """HNSW build parameters (Milvus names: ``M``, ``efConstruction``)."""

    m: int = DEFAULT_M
    ef_construction: int = DEFAULT_EF_CONSTRUCTION


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexSpec:
    """An index definition as the user gave it; construction validates it.

    Raises:
        InvalidArgument: unknown ``index_type``, missing or unknown ``metric``,
            a build parameter out of range or not an integer.
    """

    index_type: str
    metric: str
    params: Mapping[str, str | int | float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raise ``InvalidArgument`` naming the first bad parameter."""
        # Each property parses (and so checks) its part; the kind first, as the others read it.
        _ = (self.kind, self.metric_type, self.hnsw)

    @property
    def kind(self) -> IndexKind:
        """What is built (AUTOINDEX builds HNSW)."""
        kind = INDEX_TYPES.get(self.index_type.upper()) if isinstance(self.index_type, str) else None
        if kind is None:
            raise InvalidArgument(
                f"invalid index params: index_type must be one of {', '.join(INDEX_TYPES)}, got {self.index_type!r}"
            )
        return kind

    @property
    def metric_type(self) -> Metric:
        """The parsed metric."""
        if not self.metric:
            raise InvalidArgument("invalid index params: metric_type is missing")
        try:
            return parse_metric(self.metric)
        except UnknownMetricError:
            names = ", ".join(m.value for m in Metric)
            raise InvalidArgument(
                f"invalid index params: metric_type must be one of {names}, got {self.metric!r}"
            ) from None

    @property
    def hnsw(self) -> HnswParams:
        """The HNSW build parameters: the given ones for HNSW, the defaults otherwise (AUTOINDEX)."""
        if self.index_type.upper() != "HNSW":
            return HnswParams()
        return HnswParams(
            m=_int_param(self.params, "M", DEFAULT_M, M_RANGE),
            ef_construction=_int_param(self.params, "efConstruction", DEFAULT_EF_CONSTRUCTION, EF_CONSTRUCTION_RANGE),
        )

    def canonical(self) -> dict[str, object]:
        """What the built index depends on, as plain JSON values (kind, metric, resolved params)."""
        kind = self.kind
        match kind:
            case IndexKind.FLAT:
                params: dict[str, int] = {}
            case IndexKind.HNSW:
                hnsw = self.hnsw
                params = {"M": hnsw.m, "efConstruction": hnsw.ef_construction}
            case _:
                assert_never(kind)
        return {"index_type": kind.value, "metric": self.metric_type.value, "params": params}


def _int_param(params: Mapping[str, str | int | float], key: str, default: int, bounds: tuple[int, int]) -> int:
    raw = params.get(key, default)
    value = _as_int(raw)
    if value is None:
        raise InvalidArgument(f"invalid index params: {key} must be an integer, got {raw!r}")
    low, high = bounds
    if not low <= value <= high:
        raise InvalidArgument(f"invalid index params: {key} must be in [{low}, {high}], got {value}")
    return value


def _as_int(raw: object) -> int | None:
    """``raw`` as an int if it is one (an int, an integral float, a decimal string), else None."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        return raw
    if isinstance(raw, float):
        return int(raw) if raw.is_integer() else None
    if isinstance(raw, str):
        text = raw.strip()
        digits = text[1:] if text[:1] in "+-" else text
        return int(text) if digits.isdecimal() and digits.isascii() else None
    return None
