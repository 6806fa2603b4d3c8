"""Building the faiss structures of the faiss-backed kinds (blocking CPU work).

What each kind builds (``d`` = dimension; COSINE normalises the vectors
first and uses faiss' inner product):

=============  ==================================================================
IVF_FLAT       ``IndexIVFFlat`` over an ``IndexFlat`` coarse quantizer, ``nlist`` lists
IVF_SQ8        ``IndexIVFScalarQuantizer`` (8-bit per dimension)
IVF_PQ         ``IndexIVFPQ`` (``m`` subquantizers of ``nbits``)
IVF_RABITQ     ``RR{d},IVF{nlist},RaBitQ``: a random rotation, then ``IndexIVFRaBitQ``
               (one bit per dimension), as Milvus builds it
SCANN          ``IndexIVFPQFastScan`` with ``d / sub_dim`` 4-bit subquantizers (the
               fast-scan PQ that knowhere's SCANN wraps); the exact re-ranking over
               the raw vectors happens at search (``faiss_index.py``)
HNSW_SQ        ``IndexHNSWSQ`` (``sq_type``: 6-bit, 8-bit, fp16 or bf16 codes)
HNSW_PQ        ``IndexHNSWPQ`` (``m`` subquantizers of ``nbits``)
HNSW_PRQ       ``IndexHNSW`` whose storage is an ``IndexProductResidualQuantizer``
               (``m`` splits, each ``nrq`` residual quantizers of ``nbits``)
=============  ==================================================================

HNSW_PQ's and HNSW_PRQ's graphs are built over the float vectors
(``IndexHNSWFlat``) and then given the quantized codes as their storage, as
knowhere builds them: faiss linking nodes by PQ codes compares them with
symmetric L2 tables even under IP, which leaves nodes unreachable, and
decoding PRQ codes for every comparison of the build is slow.

Like knowhere, ``nlist`` is lowered to ``rows // 39`` (at least 1) when the
segment has fewer than 39 rows per list, and a PQ's ``nbits`` to 8, 4, 2 or 1
when it has fewer rows than the codebook has centroids. A segment too small
to train at all (no rows; fewer than 16 for SCANN's 4-bit codebooks; fewer than
one per PQ centroid, i.e. a single row) gets no structure and is searched exactly.

A refine representation other than FP32 (SQ6, SQ8, FP16, BF16) is an
``IndexScalarQuantizer`` over the same rows; FP32 re-scores with the
segment's own vectors, so nothing is stored for it.

Rows come as a ``FloatRows`` (``float_rows.py``): a float32 segment in one
piece, the rows of a FLOAT16, BFLOAT16 or INT8 one converted a chunk at a time.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import faiss as faiss_module
import numpy as np

from segcore.index.faiss_params import FaissParams
from segcore.index.float_rows import FloatRows
from segcore.index.spec import IndexKind
from segcore.segments.metric import Metric

# faiss' bundled stubs lack the search-parameter classes, their keyword constructors and the
# SWIG ownership attributes used here: the module is used untyped.
faiss: Any = faiss_module

#: knowhere's rows per inverted list below which ``nlist`` is lowered.
MIN_POINTS_PER_CENTROID = 39
#: Fewest rows SCANN's 4-bit fast-scan codebooks train on (knowhere refuses fewer).
SCANN_MIN_ROWS = 16
SCANN_NBITS = 4

_SQ_TYPES = {
    "SQ6": faiss.ScalarQuantizer.QT_6bit,
    "SQ8": faiss.ScalarQuantizer.QT_8bit,
    "FP16": faiss.ScalarQuantizer.QT_fp16,
    "BF16": faiss.ScalarQuantizer.QT_bf16,
}


def faiss_metric(metric: Metric) -> int:
    """faiss' metric for ``metric`` (COSINE: inner product over normalised vectors)."""
    if metric is Metric.L2:
        return int(faiss.METRIC_L2)
    if metric in (Metric.IP, Metric.COSINE):
        return int(faiss.METRIC_INNER_PRODUCT)
    raise ValueError(f"faiss indexes take L2, IP or COSINE, not {metric.value}")


def normalized(metric: Metric, matrix: np.ndarray) -> np.ndarray:
    """``matrix`` with unit rows for COSINE (a copy; zero rows stay zero), else ``matrix`` itself."""
    if metric is not Metric.COSINE:
        return matrix
    out = np.array(matrix, dtype=np.float32, copy=True, order="C")
    faiss.normalize_L2(out)
    return out


@contextlib.contextmanager
def omp_threads(threads: int) -> Iterator[None]:
    """faiss' OpenMP threads for the calling thread while the block runs, restored after.

    libgomp keeps the setting per OS thread, so concurrent searches in other
    threads keep theirs.
    """
    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(max(1, threads))
    try:
        yield
    finally:
        faiss.omp_set_num_threads(before)


def match_nlist(rows: int, nlist: int) -> int:
    """knowhere's ``MatchNlist``: at least 39 rows per list, at least one list."""
    if nlist * MIN_POINTS_PER_CENTROID > rows:
        return max(1, rows // MIN_POINTS_PER_CENTROID)
    return nlist


def match_nbits(rows: int, nbits: int) -> int:
    """knowhere's ``MatchNbits``: no more codebook centroids than rows."""
    if rows >= 1 << nbits:
        return nbits
    for smaller in (8, 4, 2):
        if rows >= 1 << smaller:
            return smaller
    return 1


def trainable(kind: IndexKind, params: FaissParams, rows: int) -> bool:
    """Whether ``rows`` vectors are enough to train ``kind`` (else the segment is searched exactly)."""
    if rows == 0:
        return False
    if kind is IndexKind.SCANN:
        return rows >= SCANN_MIN_ROWS
    if params.nbits is not None:
        return rows >= 1 << match_nbits(rows, params.nbits)
    return True


def build_structure(kind: IndexKind, params: FaissParams, metric: Metric, data: FloatRows) -> Any:
    """Train and fill the faiss index of ``kind`` over ``data`` (float32, unit rows for COSINE).

    Runs on the calling thread's OpenMP threads (see ``omp_threads``).
    """
    rows, dim = data.shape
    mt = faiss_metric(metric)
    index = _new_index(kind, params, mt, rows, dim)
    _quiet(index)
    if kind in (IndexKind.HNSW_PQ, IndexKind.HNSW_PRQ):
        _link_over_floats(index, params, mt, data)
        return index
    index.train(data.sample())
    for chunk in data.chunks():
        index.add(chunk)
    return index


def _link_over_floats(index: Any, params: FaissParams, mt: int, data: FloatRows) -> None:
    """Fill ``index``'s quantized storage with ``data`` and give it a graph linked over the floats."""
    assert params.graph_m is not None and params.ef_construction is not None
    exact = faiss.IndexHNSWFlat(data.shape[1], params.graph_m, mt)
    exact.hnsw.efConstruction = params.ef_construction
    storage = faiss.downcast_index(index.storage)
    storage.train(data.sample())
    for chunk in data.chunks():
        exact.add(chunk)
        storage.add(chunk)
    index.hnsw = exact.hnsw  # a copy of the graph; the float storage goes with ``exact``
    index.ntotal = storage.ntotal
    index.is_trained = True


def build_refine_store(refine_type: str, metric: Metric, data: FloatRows) -> Any:
    """The ``IndexScalarQuantizer`` that re-scores candidates for ``refine_type`` (not FP32)."""
    store = faiss.IndexScalarQuantizer(data.shape[1], _SQ_TYPES[refine_type], faiss_metric(metric))
    store.train(data.sample())
    for chunk in data.chunks():
        store.add(chunk)
    return store


def _new_index(kind: IndexKind, params: FaissParams, mt: int, rows: int, dim: int) -> Any:
    if kind in (IndexKind.HNSW_SQ, IndexKind.HNSW_PQ, IndexKind.HNSW_PRQ):
        graph = _new_graph(kind, params, mt, rows, dim)
        assert params.ef_construction is not None
        graph.hnsw.efConstruction = params.ef_construction
        return graph
    assert params.nlist is not None
    nlist = match_nlist(rows, params.nlist)
    if kind is IndexKind.IVF_RABITQ:
        return faiss.index_factory(dim, f"RR{dim},IVF{nlist},RaBitQ", mt)
    quantizer = faiss.IndexFlat(dim, mt)
    match kind:
        case IndexKind.IVF_FLAT:
            index = faiss.IndexIVFFlat(quantizer, dim, nlist, mt)
        case IndexKind.IVF_SQ8:
            index = faiss.IndexIVFScalarQuantizer(quantizer, dim, nlist, faiss.ScalarQuantizer.QT_8bit, mt)
        case IndexKind.IVF_PQ:
            assert params.m is not None and params.nbits is not None
            index = faiss.IndexIVFPQ(quantizer, dim, nlist, params.m, match_nbits(rows, params.nbits), mt)
        case IndexKind.SCANN:
            assert params.sub_dim is not None
            index = faiss.IndexIVFPQFastScan(quantizer, dim, nlist, dim // params.sub_dim, SCANN_NBITS, mt)
        case _:
            raise AssertionError(f"not a faiss IVF kind: {kind}")
    # The IVF index owns its coarse quantizer from now on (freed with it).
    quantizer.this.disown()
    index.own_fields = True
    return index


def _new_graph(kind: IndexKind, params: FaissParams, mt: int, rows: int, dim: int) -> Any:
    assert params.graph_m is not None
    match kind:
        case IndexKind.HNSW_SQ:
            assert params.sq_type is not None
            return faiss.IndexHNSWSQ(dim, _SQ_TYPES[params.sq_type], params.graph_m, mt)
        case IndexKind.HNSW_PQ:
            assert params.m is not None and params.nbits is not None
            return faiss.IndexHNSWPQ(dim, params.m, params.graph_m, match_nbits(rows, params.nbits), mt)
        case IndexKind.HNSW_PRQ:
            assert params.m is not None and params.nrq is not None and params.nbits is not None
            storage = faiss.IndexProductResidualQuantizer(dim, params.m, params.nrq, match_nbits(rows, params.nbits), mt)
            graph = faiss.IndexHNSW(storage, params.graph_m)
            # The graph owns its storage from now on (freed with it).
            storage.this.disown()
            graph.own_fields = True
            return graph
    raise AssertionError(f"not a faiss HNSW kind: {kind}")


def _quiet(index: Any) -> None:
    """No clustering warnings on stderr for small segments (they train on fewer than 39 rows per centroid)."""
    ivf = faiss.try_extract_index_ivf(index)
    if ivf is not None:
        ivf.cp.min_points_per_centroid = 1
        pq = getattr(faiss.downcast_index(ivf), "pq", None)
        if pq is not None:
            pq.cp.min_points_per_centroid = 1
    storage = getattr(faiss.downcast_index(index), "storage", None)
    pq = getattr(faiss.downcast_index(storage), "pq", None) if storage is not None else None
    if pq is not None:
        pq.cp.min_points_per_centroid = 1
