"""Build parameters of the faiss index families, with Milvus' names, ranges and defaults.

The ranges and defaults are Milvus 2.6's (knowhere's config checks and the
index pages of the Milvus docs):

==============  ============================================================
IVF_FLAT        ``nlist`` [1, 65536] = 128
IVF_SQ8         ``nlist``
IVF_PQ          ``nlist``; ``m`` [1, 65536], required, divides the dimension;
                ``nbits`` [1, 24] = 8
IVF_RABITQ      ``nlist``; ``refine`` = false; ``refine_type`` in SQ6, SQ8,
                FP16, BF16, FP32 (FP32 when ``refine`` is set without one)
SCANN           ``nlist``; ``with_raw_data`` = true; ``sub_dim`` [1, 65536] = 2,
                divides the dimension
HNSW_SQ         ``M`` [2, 2048] = 30; ``efConstruction`` [1, 2^31 - 1] = 360;
                ``sq_type`` in SQ6, SQ8, FP16, BF16 = SQ8; ``refine``, ``refine_type``
HNSW_PQ         ``M``, ``efConstruction``; ``m`` [1, 65536] = 32, divides the
                dimension; ``nbits`` [1, 16] = 8; ``refine``, ``refine_type``
HNSW_PRQ        ``M``, ``efConstruction``; ``m`` (splits) [1, 65536] = 2, divides
                the dimension; ``nrq`` [1, 16] = 2; ``nbits`` [1, 16] = 8;
                ``refine``, ``refine_type``
==============  ============================================================

Numbers may be integers, integral floats or decimal strings; booleans ``true``
/ ``false`` (any case, or JSON booleans); type names any case. Other keys are
ignored, as Milvus does. Every error is an ``InvalidArgument`` whose message
names the parameter.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from common.errors import InvalidArgument

INT32_MAX = 2**31 - 1

NLIST_RANGE = (1, 65536)
DEFAULT_NLIST = 128
PQ_M_RANGE = (1, 65536)
IVF_PQ_NBITS_RANGE = (1, 24)
HNSW_PQ_NBITS_RANGE = (1, 16)
PRQ_NRQ_RANGE = (1, 16)
DEFAULT_NBITS = 8
DEFAULT_HNSW_PQ_M = 32
DEFAULT_PRQ_M = 2
DEFAULT_PRQ_NRQ = 2
SUB_DIM_RANGE = (1, 65536)
DEFAULT_SUB_DIM = 2
#: faiss-backed HNSW defaults (Milvus 2.6's HNSW_SQ/PQ/PRQ pages; plain HNSW keeps 16 / 200).
GRAPH_M_RANGE = (2, 2048)
EF_CONSTRUCTION_RANGE = (1, INT32_MAX)
DEFAULT_GRAPH_M = 30
DEFAULT_GRAPH_EF_CONSTRUCTION = 360

#: Scalar quantizer types of HNSW_SQ's ``sq_type``.
SQ_TYPES = ("SQ6", "SQ8", "FP16", "BF16")
#: ``refine_type`` values; FLAT is knowhere's alias of FP32.
REFINE_TYPES = ("SQ6", "SQ8", "FP16", "BF16", "FP32")
DEFAULT_SQ_TYPE = "SQ8"

Raw = Mapping[str, str | int | float]


@dataclass(frozen=True, slots=True, kw_only=True)
class FaissParams:
    """The resolved build parameters of one faiss-backed index (``None``: not used by its kind).

    ``refine_type`` is set only when ``refine`` is on: the representation
    candidates are re-scored with (``FP32`` = the segment's own vectors).
    """

    nlist: int | None = None
    m: int | None = None
    nbits: int | None = None
    nrq: int | None = None
    sub_dim: int | None = None
    with_raw_data: bool | None = None
    graph_m: int | None = None
    ef_construction: int | None = None
    sq_type: str | None = None
    refine_type: str | None = None

    def canonical(self) -> dict[str, int | str | bool]:
        """Milvus' names of the parameters that are set (``refine_type`` only when refining)."""
        names = {
            "nlist": self.nlist,
            "m": self.m,
            "nbits": self.nbits,
            "nrq": self.nrq,
            "sub_dim": self.sub_dim,
            "with_raw_data": self.with_raw_data,
            "M": self.graph_m,
            "efConstruction": self.ef_construction,
            "sq_type": self.sq_type,
            "refine_type": self.refine_type,
        }
        return {k: v for k, v in names.items() if v is not None}

    def check_dim(self, index_type: str, dim: int) -> None:
        """Raise ``InvalidArgument`` when the parameters do not fit a ``dim``-dimensional field."""
        if self.m is not None and dim % self.m:
            what = "the number of splits (m)" if self.nrq is not None else "the number of subquantizers (m)"
            raise InvalidArgument(
                f"invalid index params: {index_type}: the dimension of a vector (dim) should be a multiple of "
                f"{what}. Dimension: {dim}, m: {self.m}"
            )
        if self.sub_dim is not None and dim % self.sub_dim:
            raise InvalidArgument(
                f"invalid index params: {index_type}: the dimension of a vector (dim) should be a multiple of "
                f"sub_dim. Dimension: {dim}, sub_dim: {self.sub_dim}"
            )


def ivf_params(index_type: str, raw: Raw) -> FaissParams:
    """IVF_FLAT, IVF_SQ8, IVF_PQ, IVF_RABITQ and SCANN (``index_type`` upper case)."""
    nlist = int_param(raw, "nlist", DEFAULT_NLIST, NLIST_RANGE)
    match index_type:
        case "IVF_FLAT" | "IVF_SQ8":
            return FaissParams(nlist=nlist)
        case "IVF_PQ":
            return FaissParams(
                nlist=nlist,
                m=int_param(raw, "m", None, PQ_M_RANGE),
                nbits=int_param(raw, "nbits", DEFAULT_NBITS, IVF_PQ_NBITS_RANGE),
            )
        case "IVF_RABITQ":
            return FaissParams(nlist=nlist, refine_type=refine_param(raw))
        case "SCANN":
            return FaissParams(
                nlist=nlist,
                with_raw_data=bool_param(raw, "with_raw_data", True),
                sub_dim=int_param(raw, "sub_dim", DEFAULT_SUB_DIM, SUB_DIM_RANGE),
            )
    raise AssertionError(f"not an IVF index type: {index_type}")


def graph_params(index_type: str, raw: Raw) -> FaissParams:
    """HNSW_SQ, HNSW_PQ and HNSW_PRQ (``index_type`` upper case)."""
    graph_m = int_param(raw, "M", DEFAULT_GRAPH_M, GRAPH_M_RANGE)
    ef_construction = int_param(raw, "efConstruction", DEFAULT_GRAPH_EF_CONSTRUCTION, EF_CONSTRUCTION_RANGE)
    refine_type = refine_param(raw)
    match index_type:
        case "HNSW_SQ":
            sq_type = choice_param(raw, "sq_type", DEFAULT_SQ_TYPE, SQ_TYPES)
            return FaissParams(graph_m=graph_m, ef_construction=ef_construction, sq_type=sq_type,
                               refine_type=refine_type)
        case "HNSW_PQ":
            return FaissParams(
                graph_m=graph_m,
                ef_construction=ef_construction,
                m=int_param(raw, "m", DEFAULT_HNSW_PQ_M, PQ_M_RANGE),
                nbits=int_param(raw, "nbits", DEFAULT_NBITS, HNSW_PQ_NBITS_RANGE),
                refine_type=refine_type,
            )
        case "HNSW_PRQ":
            return FaissParams(
                graph_m=graph_m,
                ef_construction=ef_construction,
                m=int_param(raw, "m", DEFAULT_PRQ_M, PQ_M_RANGE),
                nrq=int_param(raw, "nrq", DEFAULT_PRQ_NRQ, PRQ_NRQ_RANGE),
                nbits=int_param(raw, "nbits", DEFAULT_NBITS, HNSW_PQ_NBITS_RANGE),
                refine_type=refine_type,
            )
    raise AssertionError(f"not a faiss HNSW index type: {index_type}")


def refine_param(raw: Raw) -> str | None:
    """The refine representation when ``refine`` is on (``FP32`` by default), else ``None``.

    A given ``refine_type`` is checked even when ``refine`` is off.
    """
    refine = bool_param(raw, "refine", False)
    refine_type = choice_param(raw, "refine_type", None, REFINE_TYPES, aliases={"FLAT": "FP32"})
    if not refine:
        return None
    return refine_type or "FP32"


def int_param(raw: Raw, key: str, default: int | None, bounds: tuple[int, int]) -> int:
    """``raw[key]`` as an int in ``bounds`` (``default`` when absent; required when it is None)."""
    value = raw.get(key)
    if value is None:
        if default is None:
            raise InvalidArgument(f"invalid index params: {key} is required, got nothing")
        return default
    parsed = as_int(value)
    if parsed is None:
        raise InvalidArgument(f"invalid index params: {key} must be an integer, got {value!r}")
    low, high = bounds
    if not low <= parsed <= high:
        raise InvalidArgument(f"invalid index params: {key} must be in [{low}, {high}], got {parsed}")
    return parsed


def bool_param(raw: Raw, key: str, default: bool) -> bool:
    value = raw.get(key)
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise InvalidArgument(f"invalid index params: {key} must be true or false, got {value!r}")


def choice_param(
    raw: Raw, key: str, default: str | None, choices: tuple[str, ...], *, aliases: Mapping[str, str] | None = None
) -> str | None:
    value = raw.get(key)
    if value is None:
        return default
    name = value.strip().upper() if isinstance(value, str) else None
    if name is not None and aliases:
        name = aliases.get(name, name)
    if name not in choices:
        raise InvalidArgument(f"invalid index params: {key} must be one of {', '.join(choices)}, got {value!r}")
    return name


def as_int(raw: object) -> int | None:
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
