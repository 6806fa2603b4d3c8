"""The faiss-backed kinds (IVF_FLAT, IVF_SQ8, IVF_PQ, IVF_RABITQ, SCANN, HNSW_SQ, HNSW_PQ, HNSW_PRQ).

One ``FaissIndex`` wraps the faiss structure ``faiss_build.py`` trains, an
optional ``Refiner`` and a ``FlatIndex`` over the segment's vectors (for exact
searches and FP32 re-scoring). Labels are row positions.

Search, per query batch:

1. Few allowed rows (``IndexOptions.exact_threshold``, as HNSW) or a segment
   too small to have a structure: an exact search over the allowed rows.
2. Otherwise faiss searches with the ``allowed`` bitset as an
   ``IDSelectorBitmap`` (checked in C during the list scan or graph walk), for
   ``kb`` candidates: ``topk``, or ``ceil(topk * refine_k)`` when the index
   refines, or ``max(reorder_k, topk)`` for SCANN with raw data. Search
   parameters: ``nprobe`` (default 8), ``ef`` (default ``max(topk, 16)``, never
   below ``kb``), ``rbq_query_bits`` (default 0: the query is not quantized).
3. The candidates are re-scored (``refine.py``) when the index refines, ranked
   best first with ties by the smaller row, and cut to ``topk``.

A graph walk (HNSW_*) that finds fewer rows than it could because the filter
skipped them has those queries searched exactly, as ``hnsw.py`` does (and so
has a zero query to SCANN under IP or COSINE, which fast-scan cannot score:
every distance is 0 then); an IVF
search keeps what its probed lists hold (as Milvus: fewer than ``topk`` when
they hold fewer allowed rows).

Range search: as ``hnsw.py``, search for ``k = max(2 * topk, ef)`` candidates
(``ef`` defaults to 512 for a range, as knowhere's)
and cut by the range; a query is settled once ``topk`` are in range or its
worst candidate is beyond ``radius``; the rest search again with ``k``
doubled, and exactly once ``2 * k`` exceeds the allowed rows.

COSINE searches unit queries against unit vectors with faiss' inner product
(a zero vector stays zero and scores 0); distances are Milvus': squared L2,
inner product, cosine.
"""

from __future__ import annotations

import math
import struct
from dataclasses import replace
from typing import Any

import faiss as faiss_module
import numpy as np

from segcore.index.approximate import ApproximateIndex
from segcore.index.base import IndexHits, SearchParams, worst_distance
from segcore.index.faiss_build import (
    build_refine_store,
    build_structure,
    faiss_metric,
    match_nlist,
    normalized,
    omp_threads,
    trainable,
)
from segcore.index.faiss_params import FaissParams
from segcore.index.flat import FlatIndex
from segcore.index.float_rows import FloatRows
from segcore.index.options import DEFAULT_OPTIONS, IndexOptions
from segcore.index.rank import best_k
from segcore.index.refine import Refiner
from segcore.index.spec import IndexKind
from segcore.segments.metric import Metric

# faiss' bundled stubs lack the search-parameter classes, their keyword constructors and the
# SWIG ownership attributes used here: the module is used untyped.
faiss: Any = faiss_module

#: knowhere's default ``nprobe``.
DEFAULT_NPROBE = 8
#: knowhere's smallest default ``ef`` of the faiss HNSW indexes (``max(topk, 16)``).
MIN_DEFAULT_EF = 16
#: knowhere's default ``ef`` of a range search on the faiss HNSW indexes.
DEFAULT_RANGE_EF = 512
_HNSW_VISITS_PER_EF = 32  # distance computations per candidate of a walk (offload.py's estimate)

#: Serialized form: magic, format version, structure bytes, refine-store bytes, then the two blobs.
_MAGIC = b"STRAFAIS"
_HEADER = struct.Struct("<8sIQQ")
_VERSION = 1

_CLASSES: dict[IndexKind, Any] = {
    IndexKind.IVF_FLAT: faiss.IndexIVFFlat,
    IndexKind.IVF_SQ8: faiss.IndexIVFScalarQuantizer,
    IndexKind.IVF_PQ: faiss.IndexIVFPQ,
    IndexKind.IVF_RABITQ: faiss.IndexPreTransform,
    IndexKind.SCANN: faiss.IndexIVFPQFastScan,
    IndexKind.HNSW_SQ: faiss.IndexHNSWSQ,
    IndexKind.HNSW_PQ: faiss.IndexHNSWPQ,
    IndexKind.HNSW_PRQ: faiss.IndexHNSW,
}


class FaissIndex(ApproximateIndex):
    """A faiss structure over rows ``0..n-1``, its refiner, and the vectors for exact searches.

    Immutable once built; searches of one index may run in parallel (faiss'
    searches only read the structure).
    """

    def __init__(
        self,
        kind: IndexKind,
        params: FaissParams,
        flat: FlatIndex,
        structure: Any,
        refiner: Refiner | None,
        options: IndexOptions,
    ) -> None:
        """Wrap built or loaded parts; prefer :meth:`build` and :meth:`restore`."""
        super().__init__(flat, options)
        self._kind = kind
        self._params = params
        self._structure = structure
        self._refiner = refiner
        ivf = None if structure is None or kind.is_graph else faiss.extract_index_ivf(structure)
        self._nlist = 0 if ivf is None else int(ivf.nlist)

    @staticmethod
    def build(
        kind: IndexKind, vectors: np.ndarray, metric: Metric, params: FaissParams,
        options: IndexOptions = DEFAULT_OPTIONS,
    ) -> FaissIndex:
        """Train and fill the structure over ``vectors`` (blocking, ``options.threads`` threads)."""
        flat = FlatIndex(vectors, metric)
        faiss_metric(metric)  # refuses a metric faiss cannot serve
        if not trainable(kind, params, flat.num_rows):
            return FaissIndex(kind, params, flat, None, None, options)
        data = FloatRows(flat.vectors, metric)  # narrow rows: converted a chunk at a time
        with omp_threads(options.threads):
            structure = build_structure(kind, params, metric, data)
            store = None
            if params.refine_type not in (None, "FP32"):
                assert params.refine_type is not None
                store = build_refine_store(params.refine_type, metric, data)
        return FaissIndex(kind, params, flat, structure, _refiner(kind, params, flat, store), options)

    @staticmethod
    def restore(
        kind: IndexKind, data: bytes | None, vectors: np.ndarray, metric: Metric, params: FaissParams,
        options: IndexOptions = DEFAULT_OPTIONS,
    ) -> FaissIndex:
        """Load what :meth:`serialize` wrote for these ``vectors`` (blocking).

        Raises:
            ValueError: the data does not fit the vectors, the kind or the parameters.
            RuntimeError: faiss cannot read it.
        """
        flat = FlatIndex(vectors, metric)
        if data is None:
            if trainable(kind, params, flat.num_rows):
                raise ValueError(f"a {kind.value} index over {flat.num_rows} rows needs its data")
            return FaissIndex(kind, params, flat, None, None, options)
        structure_bytes, store_bytes = _split(data)
        structure = faiss.deserialize_index(np.frombuffer(structure_bytes, dtype=np.uint8))  # already downcast, owned
        _check_structure(kind, structure, flat, metric, params)
        store = None
        if store_bytes:
            store = faiss.deserialize_index(np.frombuffer(store_bytes, dtype=np.uint8))
            if store.ntotal != flat.num_rows or store.d != flat.dim:
                raise ValueError(f"refine store holds {store.ntotal} rows of {store.d}, expected {flat.num_rows}")
        if (store is not None) != (params.refine_type not in (None, "FP32")):
            raise ValueError(f"refine store present={store is not None} does not fit refine_type={params.refine_type}")
        return FaissIndex(kind, params, flat, structure, _refiner(kind, params, flat, store), options)

    @property
    def kind(self) -> IndexKind:
        return self._kind

    def has_structure(self) -> bool:
        return self._structure is not None

    @property
    def params(self) -> FaissParams:
        return self._params

    @property
    def structure(self) -> Any:
        """The faiss index (None for a segment too small to train): for tests and benchmarks."""
        return self._structure

    def serialize(self) -> bytes | None:
        """The structure and refine store in faiss' format, or ``None`` when there is no structure."""
        if self._structure is None:
            return None
        structure = faiss.serialize_index(self._structure).tobytes()
        store = self._refiner.store if self._refiner is not None else None
        extra = b"" if store is None else faiss.serialize_index(store).tobytes()
        return _HEADER.pack(_MAGIC, _VERSION, len(structure), len(extra)) + structure + extra

    def search_work(self, nq: int, params: SearchParams) -> int:
        """Rough multiply-adds of an unfiltered search of ``nq`` queries (``offload.py`` sizes it)."""
        if self._structure is None:
            return nq * self.num_rows * self.dim
        if self._kind.is_graph:
            return nq * (params.ef or 64) * _HNSW_VISITS_PER_EF * self.dim
        probed = min(params.nprobe or DEFAULT_NPROBE, self._nlist)
        return nq * (self._nlist + probed * self.num_rows // max(1, self._nlist)) * self.dim

    def _approximate(
        self,
        queries: np.ndarray,
        topk: int,
        mask: np.ndarray | None,
        num_allowed: int,
        params: SearchParams,
        threads: int,
    ) -> IndexHits:
        """faiss' search of the structure, then the exact redo of the queries it could not serve."""
        if params.is_range:
            if self._kind.is_graph and params.ef is None:
                params = replace(params, ef=DEFAULT_RANGE_EF)
            first_k = max(2 * topk, params.ef or 0) if self._kind.is_graph else 2 * topk
            return self.range_by_doubling(
                queries, topk, mask, num_allowed, params, first_k,
                lambda q, k: self._knn(q, k, mask, params, threads),
            )  # fmt: skip
        rows, dist = self._knn(queries, topk, mask, params, threads)
        hits = IndexHits(rows=rows, distances=dist)
        short = np.zeros(len(queries), dtype=bool)
        if mask is not None and self._kind.is_graph:
            # The walk ran out among filtered-out nodes.
            short |= (rows >= 0).sum(axis=1) < min(topk, num_allowed)
        if self._kind is IndexKind.SCANN and self.metric.larger_is_better:
            # Fast-scan's lookup tables of a zero query have no range to quantize: it finds nothing.
            short |= ~queries.any(axis=1)
        self.fill_exactly(hits, np.flatnonzero(short), queries, topk, mask, params)
        return hits

    def _knn(
        self, queries: np.ndarray, k: int, mask: np.ndarray | None, params: SearchParams, threads: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(rows, distances)``, ``(nq, k)`` each, best first, ``-1`` / worst after the last hit."""
        kb = self._candidates(k, params)
        bits = None if mask is None else np.packbits(mask, bitorder="little")
        selector = None if bits is None else faiss.IDSelectorBitmap(self.num_rows, faiss.swig_ptr(bits))
        search_params, keep_alive = self._faiss_params(kb, params, selector)
        with omp_threads(threads):
            raw, labels = self._structure.search(normalized(self.metric, queries), kb, params=search_params)
        del keep_alive, bits
        rows = labels.astype(np.int64, copy=False)
        if self._refiner is not None:
            with omp_threads(threads):
                dist = self._refiner.distances(queries, rows)
            return best_k(rows, dist, k, larger_is_better=self.metric.larger_is_better)  # re-scored: unordered
        dist = np.where(rows >= 0, raw, worst_distance(self.metric)).astype(np.float32, copy=False)
        return _rank(self.metric, rows, dist, k)

    def _candidates(self, k: int, params: SearchParams) -> int:
        if self._refiner is None:
            return k
        if self._kind is IndexKind.SCANN:
            return max(k, params.reorder_k or k)
        return max(k, math.ceil(k * (params.refine_k or 1.0)))

    def _faiss_params(self, kb: int, params: SearchParams, selector: Any) -> tuple[Any, list[Any]]:
        """faiss' search parameters, and the objects they point to (kept alive for the search)."""
        if self._kind.is_graph:
            ef = params.ef if params.ef is not None else max(kb, MIN_DEFAULT_EF)
            return faiss.SearchParametersHNSW(efSearch=max(ef, kb), sel=selector), [selector]
        nprobe = min(params.nprobe or DEFAULT_NPROBE, self._nlist)
        if self._kind is IndexKind.IVF_RABITQ:
            inner = faiss.IVFRaBitQSearchParameters(nprobe=nprobe, sel=selector)
            inner.qb = params.rbq_query_bits or 0
            return faiss.SearchParametersPreTransform(index_params=inner), [inner, selector]
        return faiss.SearchParametersIVF(nprobe=nprobe, sel=selector), [selector]


def _refiner(kind: IndexKind, params: FaissParams, flat: FlatIndex, store: Any) -> Refiner | None:
    """What re-scores candidates: the raw vectors (FP32 refine, SCANN with raw data), a store, or nothing."""
    if store is not None:
        return Refiner(flat.metric, store=store)
    raw = params.refine_type == "FP32" or (kind is IndexKind.SCANN and bool(params.with_raw_data))
    if not raw:
        return None
    return Refiner(flat.metric, vectors=flat.vectors, sqnorms=flat.sqnorms())


def _rank(metric: Metric, rows: np.ndarray, dist: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The best ``k`` per query, ties by the smaller row, missing rows (``-1``) last."""
    scores = -dist if metric.larger_is_better else dist
    missing = rows < 0
    key_rows = np.where(missing, np.iinfo(np.int64).max, rows)
    key_scores = np.where(missing | np.isnan(scores), np.inf, scores)
    before, after = key_scores[:, :-1], key_scores[:, 1:]
    wrong = (after < before) | ((after == before) & (key_rows[:, 1:] < key_rows[:, :-1]))
    if not wrong.any():  # faiss' usual answer without a refine: no re-sort
        return rows[:, :k], dist[:, :k]
    return best_k(rows, dist, k, larger_is_better=metric.larger_is_better)


def _split(data: bytes) -> tuple[bytes, bytes]:
    if len(data) < _HEADER.size:
        raise ValueError("faiss index data is shorter than its header")
    magic, version, structure_len, store_len = _HEADER.unpack_from(data)
    if magic != _MAGIC or version != _VERSION:
        raise ValueError(f"not a faiss index of format {_VERSION} (magic {magic!r}, version {version})")
    if _HEADER.size + structure_len + store_len != len(data):
        raise ValueError("faiss index data is truncated or too long")
    start = _HEADER.size
    return data[start : start + structure_len], data[start + structure_len :]


def _check_structure(kind: IndexKind, structure: Any, flat: FlatIndex, metric: Metric, params: FaissParams) -> None:
    expected = _CLASSES[kind]
    if not isinstance(structure, expected):
        raise ValueError(f"{kind.value} data holds a {type(structure).__name__}, expected {expected.__name__}")
    if structure.ntotal != flat.num_rows or structure.d != flat.dim:
        raise ValueError(
            f"{kind.value} data holds {structure.ntotal} rows of {structure.d}, expected {flat.num_rows} of {flat.dim}"
        )
    if structure.metric_type != faiss_metric(metric):
        raise ValueError(f"{kind.value} data was built for faiss metric {structure.metric_type}")
    if kind.is_graph:
        hnsw = structure.hnsw
        if (hnsw.nb_neighbors(1), hnsw.efConstruction) != (params.graph_m, params.ef_construction):
            raise ValueError(
                f"{kind.value} graph was built with M={hnsw.nb_neighbors(1)}, efConstruction={hnsw.efConstruction}"
            )
    else:
        assert params.nlist is not None
        nlist = faiss.extract_index_ivf(structure).nlist
        if nlist != match_nlist(flat.num_rows, params.nlist):
            raise ValueError(f"{kind.value} data has {nlist} lists, expected {match_nlist(flat.num_rows, params.nlist)}")
