"""DISKANN: Microsoft's DiskANN (diskannpy 0.7's static disk index), graph and vectors on disk.

What is built (``diskannpy.build_disk_index``): a Vamana graph of out-degree
``max_degree`` linked with a candidate list of ``search_list_size``, written
to ``ann_disk.index`` with each row's full-precision vector beside its
neighbours (sector-aligned, read with the library's own file I/O), and product
quantization codes of ``pq_code_budget_gb_ratio`` times the raw vector bytes
(e.g. 64 one-byte codes per 128-dim row at 0.125), the only per-row part kept
in memory. ``search_cache_budget_gb_ratio`` of the raw bytes' worth of graph
nodes (chosen by sample queries at load) is cached in memory as well. A
search walks the graph with PQ distances, reading ``beam_width`` nodes of the
disk file per step, and ranks what it read with their full-precision
distances (``StaticDiskIndex.batch_search``; ``search_list`` is its
candidate list, ``complexity`` in diskannpy).

Metrics: L2 is DiskANN's L2; IP its MIPS (the data is rescaled and one
dimension added, as DiskANN does); COSINE is L2 over unit vectors (a copy,
written to disk; the same ranking as cosine). DiskANN's distances are then
replaced by the exact ones computed from the segment's own vectors for the
hits (``Refiner``): every distance is in Milvus' conventions.

Filters and ranges: diskannpy 0.7 has no filtered search for its disk index.
Few allowed rows (the same ``IndexOptions.exact_threshold`` as HNSW) are
searched exactly; otherwise the walk returns ``k`` candidates, the ones not
allowed are dropped, and the queries left with fewer than ``topk`` search
again with ``k`` doubled (from ``topk`` divided by the share of allowed rows),
exactly once ``k`` exceeds ``MAX_K`` or the rows. A range search grows ``k``
the same way from ``max(2 * topk, 100)`` (knowhere's ``min_k``), as
``hnsw.py`` does. A segment DiskANN cannot index (it writes no disk index
for a few rows) has no structure and is searched exactly, as Milvus does not
index tiny segments.

diskannpy is imported when first used (it is installed without its numpy pin:
see the Makefile). Its native code logs its progress on the process' stdout.
"""

from __future__ import annotations

import math
import os
import threading
from typing import Any

import numpy as np
import structlog

from common.errors import InvalidArgument
from common.narrow_vectors import to_float32
from segcore.index.approximate import ApproximateIndex
from segcore.index.base import IndexHits, SearchParams
from segcore.index.checks import check_dense_vectors
from segcore.index.diskann_files import DiskHeader, disk_root, new_index_dir, pack, unpack
from segcore.index.diskann_params import MIN_DEFAULT_SEARCH_LIST, DiskannParams
from segcore.index.flat import FlatIndex
from segcore.index.options import DEFAULT_OPTIONS, IndexOptions
from segcore.index.rank import best_k
from segcore.index.refine import Refiner
from segcore.index.spec import IndexKind
from segcore.segments.metric import Metric

#: Graph nodes a search reads per step: Milvus' ``BeamWidthRatio`` (4) times this machine's 2 cores.
BEAM_WIDTH = 8
#: knowhere's first ``k`` of a range search (``min_k``).
RANGE_MIN_K = 100
#: Candidates asked of the walk at most; beyond, the rest of a filtered or range search is exact.
MAX_K = 4096
#: diskannpy's file prefix and the files a loaded index reads.
_PREFIX = "ann"
_SEARCH_FILES = ("ann_disk.index", "ann_pq_compressed.bin", "ann_pq_pivots.bin")
_MIPS_FILE = "ann_disk.index_max_base_norm.bin"
_SAMPLE_FILE = "ann_sample_data.bin"
_WORK_PER_CANDIDATE = 8  # distance computations per candidate of a walk (offload.py's estimate)

log = structlog.get_logger().bind(component="diskann")


def _diskannpy() -> Any:
    import diskannpy  # noqa: PLC0415 - a native library imported when the first DISKANN index is used

    return diskannpy


class DiskannIndex(ApproximateIndex):
    """A DiskANN disk index over rows ``0..n-1`` in a private local directory, and the segment's
    vectors for exact searches and distances.

    Searches of one index are serialised (the native index's per-thread scratch is a fixed pool).
    """

    def __init__(self, params: DiskannParams, flat: FlatIndex, options: IndexOptions) -> None:
        """An index without a structure yet; :meth:`build` and :meth:`restore` give it one."""
        super().__init__(flat, options)
        self._params = params
        self._refiner = Refiner(flat.metric, vectors=flat.vectors, sqnorms=flat.sqnorms())
        self._native: Any = None
        self._dir = ""
        self._files: list[str] = []
        self._lock = threading.Lock()

    @staticmethod
    def build(
        vectors: np.ndarray, metric: Metric, params: DiskannParams, options: IndexOptions = DEFAULT_OPTIONS
    ) -> DiskannIndex:
        """Build the disk index over ``vectors`` into a new local directory (blocking)."""
        flat = FlatIndex(vectors, metric)
        index = DiskannIndex(params, flat, options)
        matrix = to_float32(check_dense_vectors(vectors))  # narrow rows: one float32 copy for the build
        if len(matrix) == 0:
            return index
        index._dir = new_index_dir(disk_root(options.disk_dir), index)
        data = _unit(matrix) if metric is Metric.COSINE else matrix
        raw_gb = matrix.nbytes / 2**30
        _diskannpy().build_disk_index(
            data=np.ascontiguousarray(data, dtype=np.float32),
            distance_metric=_native_metric(metric),
            index_directory=index._dir,
            complexity=params.search_list_size,
            graph_degree=params.max_degree,
            search_memory_maximum=params.pq_code_budget_gb_ratio * raw_gb,
            build_memory_maximum=4 * raw_gb + 1.0,  # one pass over the whole graph, as knowhere asks
            num_threads=params.build_threads(options.threads),
            pq_disk_bytes=0,
            index_prefix=_PREFIX,
        )
        if not os.path.exists(os.path.join(index._dir, _SEARCH_FILES[0])):
            log.info("segment too small for a disk index, searched exactly", rows=len(matrix))
            return index
        index._files = [f for f in (*_SEARCH_FILES, _MIPS_FILE, _SAMPLE_FILE) if _exists(index._dir, f)]
        for name in os.listdir(index._dir):  # the build's copies of the vectors and its in-memory graph
            if name not in index._files:
                os.remove(os.path.join(index._dir, name))
        index._open()
        return index

    @staticmethod
    def restore(
        data: bytes | None, vectors: np.ndarray, metric: Metric, params: DiskannParams,
        options: IndexOptions = DEFAULT_OPTIONS,
    ) -> DiskannIndex:
        """Write what :meth:`serialize` produced into a new local directory and open it (blocking).

        Raises:
            ValueError: the data does not fit the vectors, the metric or the parameters.
            RuntimeError: diskannpy cannot load it.
        """
        flat = FlatIndex(vectors, metric)
        index = DiskannIndex(params, flat, options)
        if data is None:
            return index  # a segment DiskANN did not index: searched exactly
        index._dir = new_index_dir(disk_root(options.disk_dir), index)
        header, names = unpack(data, index._dir)
        expected = DiskHeader(rows=flat.num_rows, dim=flat.dim, metric=metric.value, max_degree=params.max_degree)
        if header != expected:
            raise ValueError(f"DISKANN data holds {header}, expected {expected}")
        if not set(_SEARCH_FILES) <= set(names):
            raise ValueError(f"DISKANN data lacks some of {_SEARCH_FILES}: {names}")
        index._files = names
        index._open()
        return index

    def _open(self) -> None:
        """Load the native index from the directory: PQ codes and the node cache in memory only."""
        node_bytes = 4 * self.dim + 4 + 4 * self._params.max_degree
        budget = self._params.search_cache_budget_gb_ratio * 4 * self.dim * self.num_rows
        cache = min(self.num_rows, int(budget // node_bytes)) if _SAMPLE_FILE in self._files else 0
        self._native = _diskannpy().StaticDiskIndex(
            index_directory=self._dir,
            # Each thread gets a scratch context; diskannpy 0.7 hangs opening an index with one.
            num_threads=max(2, self._options.threads),
            num_nodes_to_cache=cache,
            cache_mechanism=1 if cache else 0,
            distance_metric=_native_metric(self.metric),
            vector_dtype=np.float32,
            dimensions=self.dim,
            index_prefix=_PREFIX,
        )

    @property
    def kind(self) -> IndexKind:
        return IndexKind.DISKANN

    def has_structure(self) -> bool:
        return self._native is not None

    @property
    def params(self) -> DiskannParams:
        return self._params

    @property
    def directory(self) -> str:
        """The local directory of the disk index ("" without one): for tests and benchmarks."""
        return self._dir if self._native is not None else ""

    def serialize(self) -> bytes | None:
        """The disk index's files in one blob (``diskann_files.py``), or ``None`` without a structure."""
        if self._native is None:
            return None
        header = DiskHeader(rows=self.num_rows, dim=self.dim, metric=self.metric.value,
                            max_degree=self._params.max_degree)
        return pack(self._dir, self._files, header)

    def search_work(self, nq: int, params: SearchParams) -> int:
        """Rough multiply-adds of an unfiltered search of ``nq`` queries (``offload.py`` sizes it)."""
        if self._native is None:
            return nq * self.num_rows * self.dim
        walk = params.search_list or DEFAULT_SEARCH_LIST_WORK
        return nq * walk * _WORK_PER_CANDIDATE * self.dim

    def _check_params(self, params: SearchParams, topk: int) -> None:
        """``search_list`` below ``topk`` is refused, in knowhere's words."""
        if params.search_list is not None and params.search_list < topk:
            raise InvalidArgument(f"search_list_size({params.search_list}) should be larger than k({topk})")

    def _approximate(
        self,
        queries: np.ndarray,
        topk: int,
        mask: np.ndarray | None,
        num_allowed: int,
        params: SearchParams,
        threads: int,
    ) -> IndexHits:
        share = num_allowed / self.num_rows
        first_k = max(2 * topk, RANGE_MIN_K) if params.is_range else math.ceil(topk / share)
        return self._grow(queries, topk, mask, num_allowed, params, threads, first_k)

    def _grow(
        self,
        queries: np.ndarray,
        topk: int,
        mask: np.ndarray | None,
        num_allowed: int,
        params: SearchParams,
        threads: int,
        k: int,
    ) -> IndexHits:
        """Walk for ``k`` candidates, doubling ``k`` for the queries not yet settled (module docstring)."""
        hits = IndexHits.empty(len(queries), topk, self.metric)
        pending = np.arange(len(queries))
        k = min(k, self.num_rows)
        while len(pending):
            if k > MAX_K or (params.is_range and 2 * k > num_allowed):
                self.fill_exactly(hits, pending, queries, topk, mask, params)
                break
            rows, dist = self._walk(queries[pending], k, params, threads)
            keep = rows >= 0
            if mask is not None:
                keep &= mask[np.where(keep, rows, 0)]
            keep &= params.in_range(self.metric, dist)
            found = keep.sum(axis=1)
            settled = found >= topk
            if params.is_range:
                settled |= params.beyond_radius(self.metric, dist[:, -1]) & (rows[:, -1] >= 0)
            settled |= k >= self.num_rows  # every row was a candidate
            for i in np.flatnonzero(settled):
                best = np.flatnonzero(keep[i])[:topk]
                hits.rows[pending[i], : len(best)] = rows[i, best]
                hits.distances[pending[i], : len(best)] = dist[i, best]
            pending = pending[~settled]
            k = min(2 * k, self.num_rows)
        return hits

    def _walk(self, queries: np.ndarray, k: int, params: SearchParams, threads: int) -> tuple[np.ndarray, np.ndarray]:
        """``k`` candidates per query from the graph, with exact distances, best first, ties by row."""
        search_list = max(k, params.search_list or max(k, MIN_DEFAULT_SEARCH_LIST))
        data = _unit(queries) if self.metric is Metric.COSINE else queries
        with self._lock:
            ids, _ = self._native.batch_search(
                np.ascontiguousarray(data, dtype=np.float32),
                k_neighbors=k,
                complexity=search_list,
                num_threads=max(1, threads),
                beam_width=BEAM_WIDTH,
            )
        rows = ids.astype(np.int64)
        rows[(rows < 0) | (rows >= self.num_rows)] = -1
        dist = self._refiner.distances(queries, rows)
        return best_k(rows, dist, k, larger_is_better=self.metric.larger_is_better)


#: ``search_work``'s candidate list when a search gives none (knowhere's ``max(topk, 16)`` for topk 10..16).
DEFAULT_SEARCH_LIST_WORK = MIN_DEFAULT_SEARCH_LIST


def _native_metric(metric: Metric) -> str:
    match metric:
        case Metric.L2 | Metric.COSINE:
            return "l2"  # COSINE: unit vectors
        case Metric.IP:
            return "mips"
    raise InvalidArgument(f"metric type {metric.value} not found or not supported, supported: [L2 IP COSINE]")


def _unit(matrix: np.ndarray) -> np.ndarray:
    norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix))
    return np.divide(matrix, norms[:, None], out=np.zeros_like(matrix), where=norms[:, None] > 0)


def _exists(directory: str, name: str) -> bool:
    return os.path.exists(os.path.join(directory, name))
