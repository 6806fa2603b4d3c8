"""What index to build: the kind, the metric and the build parameters, validated like Milvus.

``index_type`` is ``FLAT``, ``HNSW``, ``AUTOINDEX`` or one of the faiss
families (``IVF_FLAT``, ``IVF_SQ8``, ``IVF_PQ``, ``IVF_RABITQ``, ``SCANN``,
``HNSW_SQ``, ``HNSW_PQ``, ``HNSW_PRQ``; their parameters are in
``faiss_params.py``), ``DISKANN`` (``diskann_params.py``; any case) for a float vector field, ``BIN_FLAT``, ``BIN_IVF_FLAT`` or ``AUTOINDEX`` for a binary one
(``IndexSpec.binary``), and the HNSW family or AUTOINDEX for an INT8_VECTOR
(``IndexSpec.int8``; FLOAT16 and BFLOAT16 take every float kind). AUTOINDEX is HNSW with the default build parameters on
a float field and BIN_IVF_FLAT with ``nlist`` 1024 on a binary one (Milvus'
``autoIndex.params.binary.build``); any given build parameters are ignored, as
Milvus picks them itself. HNSW reads ``M`` (in [2, 2048], default 16) and
``efConstruction`` (in [1, 2**31 - 1], default 200), BIN_IVF_FLAT ``nlist`` (in
[1, 65536], default 128, knowhere's); values may be integers or decimal strings,
as pymilvus sends them. Other keys are ignored. Every error is an
``InvalidArgument`` whose message names the parameter; the metric and the kind
are checked against the field's vector type first, with Milvus' messages
(``binary vector index does not support metric type: L2``, ``data type
BinaryVector can't build with this index HNSW``). SUBSTRUCTURE and
SUPERSTRUCTURE are BIN_FLAT's only, as in Milvus. A sparse float vector field
(``IndexSpec.sparse``) takes ``SPARSE_INVERTED_INDEX``, ``SPARSE_WAND`` or
``AUTOINDEX`` (SPARSE_INVERTED_INDEX with DAAT_MAXSCORE) and the metric ``IP``
only (their parameters are in ``sparse_params.py``), or ``BM25``, which the proxy
allows on a BM25 function's output field only, as Milvus does.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import assert_never

from common.errors import InvalidArgument
from segcore.index.diskann_params import DiskannParams, diskann_params
from segcore.index.faiss_params import FaissParams, graph_params, ivf_params
from segcore.index.sparse_params import SparseBuildParams, sparse_build_params
from segcore.segments.metric import Metric, UnknownMetricError, parse_metric

INT32_MAX = 2**31 - 1

#: Milvus' bounds and defaults for HNSW.
M_RANGE = (2, 2048)
EF_CONSTRUCTION_RANGE = (1, INT32_MAX)
DEFAULT_M = 16
DEFAULT_EF_CONSTRUCTION = 200

#: Milvus' (knowhere's) bounds and defaults for the IVF kinds, and AUTOINDEX's nlist on binary fields.
NLIST_RANGE = (1, 65536)
DEFAULT_NLIST = 128
AUTOINDEX_BINARY_NLIST = 1024
#: Metrics BIN_IVF_FLAT (and so AUTOINDEX on a binary field) accepts: no structure metrics.
BIN_IVF_METRICS = (Metric.HAMMING, Metric.JACCARD)
#: Milvus' suffix of a parameter error (``merr.WrapErrParameterInvalid``).
_PARAMS_SUFFIX = "invalid parameter[expected=valid index params][actual=invalid index params]"


class IndexKind(enum.Enum):
    """What is actually built."""

    FLAT = "FLAT"
    HNSW = "HNSW"
    BIN_FLAT = "BIN_FLAT"
    BIN_IVF_FLAT = "BIN_IVF_FLAT"
    # faiss-backed families (faiss_index.py).
    IVF_FLAT = "IVF_FLAT"
    IVF_SQ8 = "IVF_SQ8"
    IVF_PQ = "IVF_PQ"
    IVF_RABITQ = "IVF_RABITQ"
    SCANN = "SCANN"
    HNSW_SQ = "HNSW_SQ"
    HNSW_PQ = "HNSW_PQ"
    HNSW_PRQ = "HNSW_PRQ"
    # sparse float vectors (sparse_inverted.py).
    SPARSE_INVERTED_INDEX = "SPARSE_INVERTED_INDEX"
    SPARSE_WAND = "SPARSE_WAND"
    # DiskANN's disk index (diskann_index.py).
    DISKANN = "DISKANN"

    @property
    def is_faiss(self) -> bool:
        """Built with faiss (``faiss_index.py``)."""
        return self in FAISS_KINDS

    @property
    def is_graph(self) -> bool:
        """Searched by walking an HNSW graph (``ef``)."""
        return self in (IndexKind.HNSW, IndexKind.HNSW_SQ, IndexKind.HNSW_PQ, IndexKind.HNSW_PRQ)


#: The kinds built with faiss: inverted lists (IVF_*, SCANN) and quantized HNSW graphs (HNSW_*).
FAISS_KINDS = (
    IndexKind.IVF_FLAT,
    IndexKind.IVF_SQ8,
    IndexKind.IVF_PQ,
    IndexKind.IVF_RABITQ,
    IndexKind.SCANN,
    IndexKind.HNSW_SQ,
    IndexKind.HNSW_PQ,
    IndexKind.HNSW_PRQ,
)

#: Accepted ``index_type`` names (upper case) and the kind each builds (AUTOINDEX: on a float field).
INDEX_TYPES: Mapping[str, IndexKind] = {
    "FLAT": IndexKind.FLAT,
    "HNSW": IndexKind.HNSW,
    "AUTOINDEX": IndexKind.HNSW,
    "BIN_FLAT": IndexKind.BIN_FLAT,
    "BIN_IVF_FLAT": IndexKind.BIN_IVF_FLAT,
    **{kind.value: kind for kind in FAISS_KINDS},
    "SPARSE_INVERTED_INDEX": IndexKind.SPARSE_INVERTED_INDEX,
    "SPARSE_WAND": IndexKind.SPARSE_WAND,
    "DISKANN": IndexKind.DISKANN,
}
#: The kinds that index binary vectors (the others index float vectors).
BINARY_KINDS = frozenset({IndexKind.BIN_FLAT, IndexKind.BIN_IVF_FLAT})
#: The kinds that index sparse float vectors.
SPARSE_KINDS = frozenset({IndexKind.SPARSE_INVERTED_INDEX, IndexKind.SPARSE_WAND})
#: Metrics Milvus lists for sparse indexes (BM25 only on a BM25 function's output field).
SPARSE_METRIC_NAMES = ("IP", "BM25")
#: The kinds an INT8_VECTOR field may have (Milvus 2.6: the HNSW family; AUTOINDEX builds HNSW).
INT8_KINDS = frozenset({IndexKind.HNSW, IndexKind.HNSW_SQ, IndexKind.HNSW_PQ, IndexKind.HNSW_PRQ})


@dataclass(frozen=True, slots=True, kw_only=True)
class HnswParams:
    """HNSW build parameters (Milvus names: ``M``, ``efConstruction``)."""

    m: int = DEFAULT_M
    ef_construction: int = DEFAULT_EF_CONSTRUCTION


@dataclass(frozen=True, slots=True, kw_only=True)
class BinIvfParams:
    """BIN_IVF_FLAT build parameters: ``nlist`` lists (fewer when the segment is small: ``bin_ivf.py``)."""

    nlist: int = DEFAULT_NLIST


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexSpec:
    """An index definition as the user gave it; construction validates it.

    ``binary``: the indexed field is a ``BINARY_VECTOR`` (the metric and kind must
    be binary ones; AUTOINDEX builds BIN_IVF_FLAT). ``int8``: an ``INT8_VECTOR``
    (float metrics; only the ``INT8_KINDS``). FLOAT16 and BFLOAT16 fields take
    every float kind.

    Raises:
        InvalidArgument: unknown ``index_type``, missing or unknown ``metric``, a
            metric or kind of the other vector type, a build parameter out of
            range or not an integer.
    """

    index_type: str
    metric: str
    params: Mapping[str, str | int | float] = field(default_factory=dict)
    binary: bool = False
    sparse: bool = False
    int8: bool = False
    #: Milvus's name of the field's vector type in messages (``Float16Vector``...); derived from the
    #: flags when empty.
    type_name: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raise ``InvalidArgument`` naming the first bad parameter."""
        # Each property parses (and so checks) its part: the metric first (Milvus checks it against
        # the field's type before the index type), then the kind, as the others read it.
        _ = (self.metric_type, self.kind, self.hnsw, self.bin_ivf, self.faiss, self.sparse_params, self.diskann)

    def _type_name(self) -> str:
        if self.type_name:
            return self.type_name
        if self.sparse:
            return "SparseFloatVector"
        return "BinaryVector" if self.binary else "Int8Vector" if self.int8 else "FloatVector"

    @property
    def kind(self) -> IndexKind:
        """What is built (AUTOINDEX: HNSW on a float field, BIN_IVF_FLAT on a binary one)."""
        name = self.index_type.upper() if isinstance(self.index_type, str) else ""
        kind = INDEX_TYPES.get(name)
        if kind is None:
            raise InvalidArgument(
                f"invalid index params: index_type must be one of {', '.join(INDEX_TYPES)}, got {self.index_type!r}"
            )
        if name == "AUTOINDEX" and self.binary:
            return IndexKind.BIN_IVF_FLAT
        if name == "AUTOINDEX" and self.sparse:
            return IndexKind.SPARSE_INVERTED_INDEX
        if (kind in SPARSE_KINDS) != self.sparse or (kind in BINARY_KINDS) != self.binary or (
            self.int8 and kind not in INT8_KINDS
        ):
            raise InvalidArgument(
                f"data type {self._type_name()} can't build with this index {name}: invalid parameter"
            )
        if kind is IndexKind.BIN_IVF_FLAT and self.metric_type not in BIN_IVF_METRICS:
            supported = " ".join(m.value for m in BIN_IVF_METRICS)
            raise InvalidArgument(
                f"metric type {self.metric_type.value} not found or not supported, supported: [{supported}]"
            )
        return kind

    @property
    def metric_type(self) -> Metric:
        """The parsed metric, one of the field's vector type."""
        if not self.metric:
            raise InvalidArgument("invalid index params: metric_type is missing")
        if self.sparse:
            return _sparse_metric(self.metric)
        family = "binary" if self.binary else "float"
        try:
            metric = parse_metric(self.metric)
        except UnknownMetricError:
            metric = None
        if metric is None or metric.is_binary != self.binary:
            raise InvalidArgument(
                f"{family} vector index does not support metric type: {str(self.metric).upper()}: {_PARAMS_SUFFIX}"
            )
        if self.binary and str(self.index_type).upper() == "AUTOINDEX" and metric not in BIN_IVF_METRICS:
            raise InvalidArgument(
                f"binary vector index does not support metric type: {metric.value}: {_PARAMS_SUFFIX}"
            )
        return metric

    @property
    def hnsw(self) -> HnswParams:
        """The HNSW build parameters: the given ones for HNSW, the defaults otherwise (AUTOINDEX)."""
        if self.index_type.upper() != "HNSW":
            return HnswParams()
        return HnswParams(
            m=_int_param(self.params, "M", DEFAULT_M, M_RANGE),
            ef_construction=_int_param(self.params, "efConstruction", DEFAULT_EF_CONSTRUCTION, EF_CONSTRUCTION_RANGE),
        )

    @property
    def bin_ivf(self) -> BinIvfParams:
        """BIN_IVF_FLAT's build parameters: the given ones, AUTOINDEX's on a binary field, the defaults otherwise."""
        name = str(self.index_type).upper()
        if name == "AUTOINDEX" and self.binary:
            return BinIvfParams(nlist=AUTOINDEX_BINARY_NLIST)
        if name != "BIN_IVF_FLAT":
            return BinIvfParams()
        return BinIvfParams(nlist=_int_param(self.params, "nlist", DEFAULT_NLIST, NLIST_RANGE))

    @property
    def faiss(self) -> FaissParams | None:
        """The build parameters of a faiss-backed kind (``faiss_params.py``); None for the others."""
        kind = self.kind
        if not kind.is_faiss:
            return None
        if kind in (IndexKind.HNSW_SQ, IndexKind.HNSW_PQ, IndexKind.HNSW_PRQ):
            return graph_params(kind.value, self.params)
        return ivf_params(kind.value, self.params)

    @property
    def sparse_params(self) -> SparseBuildParams | None:
        """The build parameters of a sparse kind (``sparse_params.py``); None for the others."""
        if not self.sparse:
            return None
        kind = self.kind
        return sparse_build_params(kind.value, {} if str(self.index_type).upper() == "AUTOINDEX" else self.params)

    @property
    def diskann(self) -> DiskannParams | None:
        """DISKANN's build parameters (``diskann_params.py``); None for the other kinds."""
        return diskann_params(self.params) if self.kind is IndexKind.DISKANN else None

    def check_dim(self, dim: int) -> None:
        """Raise ``InvalidArgument`` when the index cannot be built over ``dim``-dimensional vectors
        (IVF_PQ, HNSW_PQ and HNSW_PRQ need ``m`` to divide it, SCANN ``sub_dim``)."""
        params = self.faiss
        if params is not None:
            params.check_dim(self.kind.value, dim)

    def canonical(self) -> dict[str, object]:
        """What the built index depends on, as plain JSON values (kind, metric, resolved params)."""
        kind = self.kind
        match kind:
            case IndexKind.FLAT | IndexKind.BIN_FLAT:
                params: dict[str, int | str | bool] = {}
            case IndexKind.HNSW:
                hnsw = self.hnsw
                params = {"M": hnsw.m, "efConstruction": hnsw.ef_construction}
            case IndexKind.BIN_IVF_FLAT:
                params = {"nlist": self.bin_ivf.nlist}
            case (
                IndexKind.IVF_FLAT
                | IndexKind.IVF_SQ8
                | IndexKind.IVF_PQ
                | IndexKind.IVF_RABITQ
                | IndexKind.SCANN
                | IndexKind.HNSW_SQ
                | IndexKind.HNSW_PQ
                | IndexKind.HNSW_PRQ
            ):
                faiss = self.faiss
                assert faiss is not None
                params = faiss.canonical()
            case IndexKind.SPARSE_INVERTED_INDEX | IndexKind.SPARSE_WAND:
                sparse = self.sparse_params
                assert sparse is not None
                params = sparse.canonical()
            case IndexKind.DISKANN:
                diskann = self.diskann
                assert diskann is not None
                params = diskann.canonical()
            case _:
                assert_never(kind)
        return {"index_type": kind.value, "metric": self.metric_type.value, "params": params}


def _sparse_metric(name: str) -> Metric:
    """A sparse field's metric: IP; BM25 only belongs to a BM25 function's output field."""
    upper = str(name).strip().upper()
    if upper == "BM25":  # the proxy allows it on a BM25 function's output field only
        return Metric.BM25
    if upper != "IP":
        supported = " ".join(SPARSE_METRIC_NAMES)
        raise InvalidArgument(f"metric type {upper} not found or not supported, supported: [{supported}]")
    return Metric.IP


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
