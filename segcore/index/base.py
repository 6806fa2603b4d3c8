"""The vector index contract: what a search takes and what it returns.

An index covers the rows ``0..n-1`` of one vector field of one sealed
segment; a row's position is its label. Every index kind (``flat.py``,
``hnsw.py``) answers the same :meth:`VectorIndex.search`, in Milvus'
conventions: ``L2`` is the squared distance, smallest first; ``IP`` and
``COSINE`` are similarities, largest first.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Protocol, SupportsFloat, SupportsInt

import numpy as np

from common.errors import InvalidArgument
from segcore.index.sparse_params import check_sparse_search
from segcore.index.spec import IndexKind
from segcore.segments.metric import Metric

#: Milvus' upper bound on ``ef`` (knowhere's HNSW check).
MAX_EF = 32768
#: knowhere's bounds of the IVF and quantizer search parameters.
NPROBE_RANGE = (1, 65536)
REORDER_K_RANGE = (1, 2**31 - 1)
RBQ_QUERY_BITS_RANGE = (0, 8)
#: DISKANN's ``search_list`` bounds (knowhere's ``search_list_size``; at least topk, checked by the index).
SEARCH_LIST_RANGE = (1, 2**31 - 1)


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchParams:
    """Per-request search parameters (Milvus' ``search_params``).

    ``ef``: HNSW candidate list size; ``None`` = the index's default. Other
    kinds ignore it, and each kind ignores the parameters of the others:

    * ``nprobe``: inverted lists probed (IVF_*, SCANN, BIN_IVF_FLAT; [1, 65536], default 8);
    * ``refine_k``: candidates re-scored per hit by a refining index (``>= 1``);
    * ``reorder_k``: SCANN's candidates re-scored with the raw vectors (``>= 1``);
    * ``rbq_query_bits``: IVF_RABITQ's query quantization bits ([0, 8], 0 = none);
    * ``drop_ratio_search``, ``dim_max_score_ratio``: the sparse kinds' (``sparse_params.py``).
    * ``search_list``: DISKANN's candidate list ([topk, 2^31 - 1], default ``max(topk, 16)``).

    ``radius`` / ``range_filter``: a range search when ``radius`` is set
    (``range_filter`` alone is ignored, like Milvus). Kept distances:

    * ``L2``: ``range_filter <= d < radius``;
    * ``IP`` / ``COSINE``: ``radius < d <= range_filter``.

    ``range_filter`` is optional. A range search still returns at most
    ``topk`` rows per query, best first.
    """

    ef: int | None = None
    radius: float | None = None
    range_filter: float | None = None
    nprobe: int | None = None
    refine_k: float | None = None
    reorder_k: int | None = None
    rbq_query_bits: int | None = None
    drop_ratio_search: float | None = None
    dim_max_score_ratio: float | None = None
    search_list: int | None = None
    bm25_k1: float | None = None  # the BM25 metric's (the delegator sets them: ``bm25_scoring.py``)
    bm25_b: float | None = None
    bm25_avgdl: float | None = None

    @property
    def is_range(self) -> bool:
        return self.radius is not None

    def validate(self, metric: Metric) -> None:
        """Raise ``InvalidArgument`` unless the parameters make sense for ``metric``."""
        if self.ef is not None:
            if isinstance(self.ef, bool) or not isinstance(self.ef, int | np.integer):
                raise InvalidArgument(f"invalid search params: ef must be an integer, got {self.ef!r}")
            if not 1 <= self.ef <= MAX_EF:
                raise InvalidArgument(f"invalid search params: ef must be in [1, {MAX_EF}], got {self.ef}")
        _int_in("nprobe", self.nprobe, NPROBE_RANGE)
        _int_in("reorder_k", self.reorder_k, REORDER_K_RANGE)
        _int_in("rbq_query_bits", self.rbq_query_bits, RBQ_QUERY_BITS_RANGE)
        _int_in("search_list", self.search_list, SEARCH_LIST_RANGE)
        if self.refine_k is not None and not _finite("refine_k", self.refine_k) >= 1.0:
            raise InvalidArgument(f"invalid search params: refine_k must be at least 1, got {self.refine_k}")
        check_sparse_search(self.drop_ratio_search, self.dim_max_score_ratio)
        if self.radius is None:
            return
        if metric in (Metric.SUBSTRUCTURE, Metric.SUPERSTRUCTURE):
            raise InvalidArgument(f"invalid search params: range search does not support metric {metric.value}")
        radius = _finite("radius", self.radius)
        if self.range_filter is None:
            return
        range_filter = _finite("range_filter", self.range_filter)
        if metric.larger_is_better and not range_filter > radius:
            raise InvalidArgument(
                f"invalid search params: range_filter must be greater than radius for {metric.value}, "
                f"got radius={radius}, range_filter={range_filter}"
            )
        if not metric.larger_is_better and not range_filter < radius:
            raise InvalidArgument(
                f"invalid search params: range_filter must be less than radius for {metric.value}, "
                f"got radius={radius}, range_filter={range_filter}"
            )

    def in_range(self, metric: Metric, dist: np.ndarray) -> np.ndarray:
        """Bool per distance: kept by the range (all ``True`` when not a range search; NaN is never kept)."""
        if self.radius is None:
            return np.ones(dist.shape, dtype=bool)
        if metric.larger_is_better:
            keep = dist > self.radius
            if self.range_filter is not None:
                keep &= dist <= self.range_filter
        else:
            keep = dist < self.radius
            if self.range_filter is not None:
                keep &= dist >= self.range_filter
        return keep

    def beyond_radius(self, metric: Metric, dist: np.ndarray) -> np.ndarray:
        """Bool per distance: worse than ``radius`` (so every worse row is out of range too)."""
        assert self.radius is not None, "only range searches have a radius"
        return dist <= self.radius if metric.larger_is_better else dist >= self.radius


#: Default search parameters: no range, the index's default ``ef``.
NO_PARAMS = SearchParams()


def _int_in(name: str, value: int | None, bounds: tuple[int, int]) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise InvalidArgument(f"invalid search params: {name} must be an integer, got {value!r}")
    low, high = bounds
    if not low <= value <= high:
        raise InvalidArgument(f"invalid search params: {name} must be in [{low}, {high}], got {value}")


def _finite(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.floating | np.integer):
        raise InvalidArgument(f"invalid search params: {name} must be a number, got {value!r}")
    if not math.isfinite(value):
        raise InvalidArgument(f"invalid search params: {name} must be finite, got {value}")
    return float(value)


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexHits:
    """Top-k per query, best first, ties by the smaller row.

    ``rows``: ``(nq, k)`` int64 row positions, ``-1`` after the last hit when a
    query has fewer than ``k``. ``distances``: ``(nq, k)`` float32 in Milvus'
    conventions; where ``rows`` is ``-1`` it holds the worst value of the metric
    (``+inf`` for ``L2``, ``-inf`` for ``IP`` and ``COSINE``).
    """

    rows: np.ndarray
    distances: np.ndarray

    @staticmethod
    def empty(nq: int, topk: int, metric: Metric) -> IndexHits:
        """``nq`` queries without any hit."""
        return IndexHits(
            rows=np.full((nq, topk), -1, dtype=np.int64),
            distances=np.full((nq, topk), worst_distance(metric), dtype=np.float32),
        )


def worst_distance(metric: Metric) -> float:
    """The padding distance of a missing hit: ranks after every real one."""
    return -math.inf if metric.larger_is_better else math.inf


class VectorIndex(Protocol):
    """A searchable index over the rows ``0..num_rows-1`` of one vector field.

    Immutable once built. ``search`` blocks (CPU work): call it from a worker
    thread. Implementations may serialise concurrent searches internally.
    """

    @property
    def kind(self) -> IndexKind: ...

    @property
    def metric(self) -> Metric: ...

    @property
    def dim(self) -> int: ...

    @property
    def num_rows(self) -> int: ...

    def search(
        self,
        queries: np.ndarray,
        topk: int,
        *,
        allowed: np.ndarray | None = None,
        params: SearchParams = NO_PARAMS,
        threads: int = 1,
    ) -> IndexHits:
        """The ``topk`` best rows per query, among the ``allowed`` ones.

        Args:
            queries: ``(nq, dim)`` float32 (converted if another float type).
            topk: rows per query at most; at least 1.
            allowed: bool per row, ``True`` = may be returned (the filter and
                visibility bitset); ``None`` = every row. A row not allowed is
                never returned.
            params: ``ef`` and the range (see :class:`SearchParams`).
            threads: threads this call may use; an unfiltered HNSW walk splits
                the queries among them, other searches use one.

        Returns:
            ``(nq, topk)`` hits (see :class:`IndexHits`).

        Raises:
            InvalidArgument: wrong query dimension, ``topk < 1``, bad params.
        """
        ...

    def serialize(self) -> bytes | None:
        """The bytes to persist, or ``None`` when the index is rebuilt from the vectors alone."""
        ...


def search_params(params: dict[str, object]) -> SearchParams:
    # The values are JSON's: float() and int() take all but a list or an object (a TypeError, as theirs).
    def num(key: str) -> float | None:
        v = params.get(key)
        if v is not None and not isinstance(v, str | SupportsFloat):
            raise TypeError(f"search param {key} must be a string or a number, not {type(v).__name__}")
        return None if v is None else float(v)

    def integer(key: str) -> int | None:
        v = params.get(key)
        if v is not None and not isinstance(v, str | SupportsInt):
            raise TypeError(f"search param {key} must be a string or a number, not {type(v).__name__}")
        return None if v is None else int(v)

    return SearchParams(
        ef=integer("ef"),
        radius=num("radius"),
        range_filter=num("range_filter"),
        nprobe=integer("nprobe"),
        refine_k=num("refine_k"),
        reorder_k=integer("reorder_k"),
        rbq_query_bits=integer("rbq_query_bits"),
        drop_ratio_search=num("drop_ratio_search"),
        dim_max_score_ratio=num("dim_max_score_ratio"),
        search_list=integer("search_list") if "search_list" in params else integer("search_list_size"),
        bm25_k1=num("bm25_k1"),
        bm25_b=num("bm25_b"),
        bm25_avgdl=num("bm25_avgdl"),
    )


def parse_params(raw: str) -> dict[str, object]:
    return json.loads(raw) if raw else {}
