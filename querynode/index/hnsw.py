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

from querynode.index.base import NO_PARAMS, IndexHits, SearchParams
from querynode.index.checks import check_allowed, check_queries, check_topk
from querynode.index.flat import FlatIndex
from querynode.index.options import DEFAULT_OPTIONS, IndexOptions
from querynode.index.spec import HnswParams, IndexKind
from querynode.segments.metric import Metric
from services.narrow_vectors import float_chunks

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
        case Metric.HAMMING | Metric.JACCARD | Metric.SUBSTRUCTURE | Metric.SUPERSTRUCTURE:
            raise ValueError(f"HNSW indexes float vectors, not the binary metric {metric.value}")
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
        case Metric.HAMMING | Metric.JACCARD | Metric.SUBSTRUCTURE | Metric.SUPERSTRUCTURE:
            raise ValueError(f"HNSW indexes float vectors, not the binary metric {metric.value}")
        case _:
            assert_never(metric)


class HnswIndex:
    """An hnswlib graph over rows ``0..n-1`` plus the vectors, for exact fallbacks.

    An empty segment has no graph (hnswlib needs room for one element at
    least); every search of it finds nothing. Searches hold a lock while they
    set ``ef`` and walk, because ``ef`` is state of the hnswlib index: two
    searches of one index run one after the other.
    """

    def __init__(self, graph: hnswlib.Index | None, flat: FlatIndex, params: HnswParams, options: IndexOptions) -> None:
        """Wrap a built or loaded graph; prefer :meth:`build` and :meth:`restore`."""
        self._graph = graph
        self._flat = flat
        self._params = params
        self._options = options
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

    @property
    def metric(self) -> Metric:
        return self._flat.metric

    @property
    def dim(self) -> int:
        return self._flat.dim

    @property
    def num_rows(self) -> int:
        return self._flat.num_rows

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

    def search(
        self,
        queries: np.ndarray,
        topk: int,
        *,
        allowed: np.ndarray | None = None,
        params: SearchParams = NO_PARAMS,
        threads: int = 1,
    ) -> IndexHits:
        """See ``VectorIndex.search`` and the module docstring for the strategy.

        ``params.ef`` defaults to ``max(topk, 64)`` and is raised to ``topk`` if below it.
        """
        queries = check_queries(queries, self.dim)
        check_topk(topk)
        params.validate(self.metric)
        mask = check_allowed(allowed, self.num_rows)
        num_allowed = self.num_rows if mask is None else int(np.count_nonzero(mask))
        if len(queries) == 0 or num_allowed == 0:
            return IndexHits.empty(len(queries), topk, self.metric)
        # The batch rule is measured against the filtered walk; an unfiltered one is far cheaper.
        if self.searches_exactly(num_allowed, topk, nq=1 if mask is None else len(queries)):
            return self._flat.search(queries, topk, allowed=mask, params=params)
        ef = max(topk, DEFAULT_EF if params.ef is None else params.ef)
        if params.is_range:
            return self._range_search(queries, topk, mask, num_allowed, ef, params)
        found = self._walk(queries, topk, ef, mask, threads)
        if found is None:
            return self._flat.search(queries, topk, allowed=mask, params=params)
        hits = IndexHits.empty(len(queries), topk, self.metric)
        hits.rows[:] = found[0]
        hits.distances[:] = found[1]
        return hits

    def searches_exactly(self, num_allowed: int, topk: int, nq: int = 1) -> bool:
        """Whether ``nq`` queries with ``num_allowed`` allowed rows skip the graph for an exact search."""
        if self._graph is None or num_allowed <= topk:
            return True
        return num_allowed < self._options.exact_threshold(self.num_rows, nq)

    def _range_search(
        self,
        queries: np.ndarray,
        topk: int,
        mask: np.ndarray | None,
        num_allowed: int,
        ef: int,
        params: SearchParams,
    ) -> IndexHits:
        """Walk with a growing ``k`` until each query's range is settled (see the module docstring)."""
        hits = IndexHits.empty(len(queries), topk, self.metric)
        pending = np.arange(len(queries))
        k = max(2 * topk, ef)
        while len(pending):
            found = None if 2 * k > num_allowed else self._walk(queries[pending], k, k, mask)
            if found is None:
                exact = self._flat.search(queries[pending], topk, allowed=mask, params=params)
                hits.rows[pending] = exact.rows
                hits.distances[pending] = exact.distances
                break
            rows, dist = found
            keep = params.in_range(self.metric, dist)
            settled = (keep.sum(axis=1) >= topk) | params.beyond_radius(self.metric, dist[:, -1])
            for i in np.flatnonzero(settled):
                in_range = np.flatnonzero(keep[i])[:topk]
                hits.rows[pending[i], : len(in_range)] = rows[i, in_range]
                hits.distances[pending[i], : len(in_range)] = dist[i, in_range]
            pending = pending[~settled]
            k *= 2
        return hits

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
        order = np.lexsort((rows, scores), axis=-1)
        return np.take_along_axis(rows, order, axis=1), np.take_along_axis(dist, order, axis=1)


def _ranked(rows: np.ndarray, scores: np.ndarray) -> bool:
    """Whether every query's hits are already best first, equal scores by the smaller row."""
    before, after = scores[:, :-1], scores[:, 1:]
    wrong = (after < before) | ((after == before) & (rows[:, 1:] < rows[:, :-1]))
    return not wrong.any()
