"""HNSW over hnswlib, with the allowed-rows bitset applied during the graph walk.

Metric mapping (hnswlib space -> Milvus convention):

* ``L2`` -> ``l2``: hnswlib's distance is already the squared L2 distance;
* ``IP`` -> ``ip``: hnswlib gives ``1 - dot``; we return ``1 - d``;
* ``COSINE`` -> ``cosine``: hnswlib normalises the vectors it stores and the
  queries and gives ``1 - cos``; we return ``1 - d`` (a zero vector scores 0).

Labels are row positions. Results are re-sorted by (distance, row) so ties
rank by the smaller row, as in FLAT.

Filtering: the bitset goes into the walk through hnswlib's ``filter`` callback
(a lookup in a ``memoryview`` of the bool array, no copy). When fewer rows
are allowed than ``IndexOptions.exact_threshold(rows, nq)``, or no more than
``topk``, the search is exact over the allowed rows instead (see
``options.py`` for the measurements behind the threshold). If the filtered
walk cannot find ``k`` allowed rows, hnswlib raises and the batch is searched
exactly.

Range search: ask the graph for ``k = max(2 * topk, ef)`` candidates per query
and cut them by the range. A query is settled when ``topk`` candidates are in
range or its worst candidate is already beyond ``radius`` (everything farther
is out of range too); unsettled queries ask again with ``k`` doubled. Once
``2 * k`` exceeds the allowed rows, the rest are searched exactly.
"""

from __future__ import annotations

import os
import tempfile
import threading
from typing import assert_never

import hnswlib
import numpy as np
import structlog

from common.narrow_vectors import float_chunks
from segcore.index.approximate import ApproximateIndex
from segcore.index.base import IndexHits, SearchParams
from segcore.index.flat import FlatIndex
from segcore.index.options import DEFAULT_OPTIONS, IndexOptions
from segcore.index.rank import best_k
from segcore.index.spec import HnswParams, IndexKind
from segcore.segments.metric import Metric

#: Narrow rows (FLOAT16, BFLOAT16, INT8) converted to float32 per ``add_items`` call: 64 MiB.
BUILD_CHUNK_CELLS = 16 * 1024 * 1024
#: ``ef`` when the request gives none (at least ``topk``).
DEFAULT_EF = 64

log = structlog.get_logger().bind(component="hnsw-index")


def hnsw_space(metric: Metric) -> str:
    """hnswlib's name for ``metric``'s space."""
    match metric:
        case Metric.L2:
            return "l2"
        case Metric.IP:
            return "ip"
        case Metric.COSINE:
            return "cosine"
        case Metric.HAMMING | Metric.JACCARD | Metric.SUBSTRUCTURE | Metric.SUPERSTRUCTURE | Metric.BM25:
            raise ValueError(f"HNSW indexes float vectors, not the metric {metric.value}")
        case _:
            assert_never(metric)


def to_milvus_distance(metric: Metric, raw: np.ndarray) -> np.ndarray:
    """hnswlib's distances as Milvus' (float32): L2 as is, ``1 - d`` for IP and COSINE."""
    raw = np.asarray(raw, dtype=np.float32)
    match metric:
        case Metric.L2:
            return raw
        case Metric.IP | Metric.COSINE:
            return np.float32(1.0) - raw
        case Metric.HAMMING | Metric.JACCARD | Metric.SUBSTRUCTURE | Metric.SUPERSTRUCTURE | Metric.BM25:
            raise ValueError(f"HNSW indexes float vectors, not the metric {metric.value}")
        case _:
            assert_never(metric)


class HnswIndex(ApproximateIndex):
    """An hnswlib graph over rows ``0..n-1`` plus the vectors, for exact fallbacks.

    An empty segment has no graph (hnswlib needs room for one element at
    least); every search of it finds nothing. Searches hold a lock while they
    set ``ef`` and walk, because ``ef`` is state of the hnswlib index: two
    searches of one index run one after the other.
    """

    def __init__(self, graph: hnswlib.Index | None, flat: FlatIndex, params: HnswParams, options: IndexOptions) -> None:
        """Wrap a built or loaded graph; prefer :meth:`build` and :meth:`restore`."""
        super().__init__(flat, options)
        self._graph = graph
        self._params = params
        self._lock = threading.Lock()

    @staticmethod
    def build(
        vectors: np.ndarray, metric: Metric, params: HnswParams, options: IndexOptions = DEFAULT_OPTIONS
    ) -> HnswIndex:
        """Build the graph over ``vectors`` (blocking CPU work, ``options.threads`` threads)."""
        flat = FlatIndex(vectors, metric)
        matrix = flat.vectors  # float32, or narrow rows: the graph gets them converted a chunk at a time
        if len(matrix) == 0:
            return HnswIndex(None, flat, params, options)
        graph = hnswlib.Index(space=hnsw_space(metric), dim=matrix.shape[1])
        graph.init_index(
            max_elements=len(matrix), M=params.m, ef_construction=params.ef_construction, random_seed=options.seed
        )
        graph.set_num_threads(options.threads)
        for start, chunk in float_chunks(matrix, BUILD_CHUNK_CELLS):
            labels = np.arange(start, start + len(chunk), dtype=np.int64)
            graph.add_items(np.ascontiguousarray(chunk), labels, num_threads=options.threads)
        return HnswIndex(graph, flat, params, options)

    @staticmethod
    def restore(
        data: bytes | None,
        vectors: np.ndarray,
        metric: Metric,
        params: HnswParams,
        options: IndexOptions = DEFAULT_OPTIONS,
    ) -> HnswIndex:
        """Load a graph that :meth:`serialize` wrote for these ``vectors`` (blocking).

        Raises:
            ValueError: the graph does not fit the vectors or the parameters.
            RuntimeError: hnswlib cannot read ``data``.
        """
        flat = FlatIndex(vectors, metric)
        if data is None:
            if flat.num_rows:
                raise ValueError(f"an HNSW index over {flat.num_rows} rows needs its graph data")
            return HnswIndex(None, flat, params, options)
        graph = hnswlib.Index(space=hnsw_space(metric), dim=flat.dim)
        with tempfile.TemporaryDirectory(prefix="strata-hnsw-") as tmp:
            path = os.path.join(tmp, "graph.bin")
            with open(path, "wb") as f:
                f.write(data)
            graph.load_index(path, max_elements=max(flat.num_rows, 1))
        if graph.element_count != flat.num_rows:
            raise ValueError(f"HNSW graph holds {graph.element_count} rows, the segment {flat.num_rows}")
        if (graph.M, graph.ef_construction) != (params.m, params.ef_construction):
            raise ValueError(
                f"HNSW graph was built with M={graph.M}, efConstruction={graph.ef_construction}, "
                f"expected M={params.m}, efConstruction={params.ef_construction}"
            )
        graph.set_num_threads(options.threads)
        return HnswIndex(graph, flat, params, options)

    @property
    def kind(self) -> IndexKind:
        return IndexKind.HNSW

    def has_structure(self) -> bool:
        return self._graph is not None

    @property
    def params(self) -> HnswParams:
        return self._params

    def serialize(self) -> bytes | None:
        """hnswlib's file format (through a temporary file), or ``None`` for an empty segment (blocking)."""
        if self._graph is None:
            return None
        with tempfile.TemporaryDirectory(prefix="strata-hnsw-") as tmp:
            path = os.path.join(tmp, "graph.bin")
            self._graph.save_index(path)
            with open(path, "rb") as f:
                return f.read()

    def _approximate(
        self,
        queries: np.ndarray,
        topk: int,
        mask: np.ndarray | None,
        num_allowed: int,
        params: SearchParams,
        threads: int,
    ) -> IndexHits:
        """The graph walk; ``params.ef`` defaults to ``max(topk, 64)`` and is raised to ``topk`` if below it."""
        ef = max(topk, DEFAULT_EF if params.ef is None else params.ef)
        if params.is_range:
            return self.range_by_doubling(
                queries, topk, mask, num_allowed, params, max(2 * topk, ef), lambda q, k: self._walk(q, k, k, mask)
            )
        found = self._walk(queries, topk, ef, mask, threads)
        if found is None:
            return self._flat.search(queries, topk, allowed=mask, params=params)
        return IndexHits(rows=found[0], distances=found[1])

    def _walk(
        self, queries: np.ndarray, k: int, ef: int, mask: np.ndarray | None, threads: int = 1
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """``(rows, distances)``, ``(nq, k)`` each, best first; ``None`` if hnswlib found fewer than ``k``.

        An unfiltered walk splits the queries among ``threads`` threads (hnswlib releases the
        GIL for the walk). A filtered one keeps to one: every thread would take the GIL to
        call the filter for each row it visits.
        """
        assert self._graph is not None
        threads = max(1, threads) if mask is None else 1
        # hnswlib calls the filter with a label and wants a truthy value: indexing a
        # memoryview of the bitset is a C call, and keeps the bitset alive meanwhile.
        allow = None if mask is None else mask.view(np.uint8).data.__getitem__
        with self._lock:
            self._graph.set_ef(max(ef, k))
            try:
                labels, raw = self._graph.knn_query(queries, k=k, num_threads=threads, filter=allow)
            except RuntimeError as err:
                # Raised when some query's walk found fewer than k (allowed) rows.
                log.debug("hnsw walk came up short, searching exactly", k=k, error=str(err))
                return None
        rows = labels.astype(np.int64)
        dist = to_milvus_distance(self.metric, raw)
        scores = -dist if self.metric.larger_is_better else dist
        if _ranked(rows, scores):  # hnswlib's usual answer: skip the re-sort
            return rows, dist
        return best_k(rows, dist, k, larger_is_better=self.metric.larger_is_better)


def _ranked(rows: np.ndarray, scores: np.ndarray) -> bool:
    """Whether every query's hits are already best first, equal scores by the smaller row."""
    before, after = scores[:, :-1], scores[:, 1:]
    wrong = (after < before) | ((after == before) & (rows[:, 1:] < rows[:, :-1]))
    return not wrong.any()
