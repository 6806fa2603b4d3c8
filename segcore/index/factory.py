"""Building and restoring an index of the kind an ``IndexSpec`` names.

Both block on CPU work (an HNSW build takes seconds to minutes): callers run
them in a worker thread. ``IndexSpec`` is re-exported here for the callers
that define indexes.
"""

from __future__ import annotations

from typing import assert_never

import numpy as np

from segcore.index.base import VectorIndex
from segcore.index.bin_flat import BinFlatIndex
from segcore.index.bin_ivf import BinIvfIndex
from segcore.index.diskann_index import DiskannIndex
from segcore.index.diskann_params import DiskannParams
from segcore.index.faiss_index import FaissIndex
from segcore.index.faiss_params import FaissParams
from segcore.index.flat import FlatIndex
from segcore.index.hnsw import HnswIndex
from segcore.index.options import DEFAULT_OPTIONS, IndexOptions
from segcore.index.sparse_inverted import SparseInvertedIndex
from segcore.index.sparse_params import SparseBuildParams
from segcore.index.spec import IndexKind, IndexSpec
from segcore.segments.sparse_rows import SparseRows

__all__ = ["IndexSpec", "VectorData", "build_index", "restore_index"]

#: What an index is built over: a dense matrix, or a sparse field's rows.
VectorData = np.ndarray | SparseRows


def build_index(spec: IndexSpec, vectors: VectorData, *, options: IndexOptions = DEFAULT_OPTIONS) -> VectorIndex:
    """Build ``spec``'s index over ``vectors`` (``(rows, dim)`` float32, ``(rows, dim / 8)``
    uint8 codes for the binary kinds, ``SparseRows`` for the sparse ones; row position = label).

    FLAT keeps a reference to ``vectors`` (no copy when already float32), and
    so do HNSW for its exact fallback and the binary kinds: do not modify them afterwards.
    """
    kind = spec.kind
    if isinstance(vectors, SparseRows):
        return SparseInvertedIndex.build(kind, vectors, spec.metric_type, _sparse(spec))
    match kind:
        case IndexKind.FLAT:
            return FlatIndex(vectors, spec.metric_type)
        case IndexKind.HNSW:
            return HnswIndex.build(vectors, spec.metric_type, spec.hnsw, options)
        case IndexKind.BIN_FLAT:
            return BinFlatIndex(vectors, spec.metric_type)
        case IndexKind.BIN_IVF_FLAT:
            return BinIvfIndex.build(vectors, spec.metric_type, spec.bin_ivf, options)
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
            spec.check_dim(_dim(vectors))
            return FaissIndex.build(kind, vectors, spec.metric_type, _faiss(spec), options)
        case IndexKind.SPARSE_INVERTED_INDEX | IndexKind.SPARSE_WAND:
            raise ValueError(f"a {kind.value} index is built over sparse rows, not a matrix")
        case IndexKind.DISKANN:
            return DiskannIndex.build(vectors, spec.metric_type, _diskann(spec), options)
        case _:
            assert_never(kind)


def restore_index(
    spec: IndexSpec, vectors: VectorData, data: bytes | None, *, options: IndexOptions = DEFAULT_OPTIONS
) -> VectorIndex:
    """The index ``serialize()`` turned into ``data``, over the same ``vectors``.

    Raises:
        ValueError: ``data`` does not fit the vectors or the spec.
        RuntimeError: the backend cannot read ``data``.
    """
    kind = spec.kind
    if isinstance(vectors, SparseRows):
        return SparseInvertedIndex.restore(kind, data, vectors, spec.metric_type, _sparse(spec))
    match kind:
        case IndexKind.FLAT:
            if data is not None:
                raise ValueError("a FLAT index has no data")
            return FlatIndex(vectors, spec.metric_type)
        case IndexKind.HNSW:
            return HnswIndex.restore(data, vectors, spec.metric_type, spec.hnsw, options)
        case IndexKind.BIN_FLAT:
            if data is not None:
                raise ValueError("a BIN_FLAT index has no data")
            return BinFlatIndex(vectors, spec.metric_type)
        case IndexKind.BIN_IVF_FLAT:
            return BinIvfIndex.restore(data, vectors, spec.metric_type, spec.bin_ivf, options)
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
            return FaissIndex.restore(kind, data, vectors, spec.metric_type, _faiss(spec), options)
        case IndexKind.SPARSE_INVERTED_INDEX | IndexKind.SPARSE_WAND:
            raise ValueError(f"a {kind.value} index is built over sparse rows, not a matrix")
        case IndexKind.DISKANN:
            return DiskannIndex.restore(data, vectors, spec.metric_type, _diskann(spec), options)
        case _:
            assert_never(kind)


def _sparse(spec: IndexSpec) -> SparseBuildParams:
    params = spec.sparse_params
    if params is None:
        raise ValueError(f"{spec.kind.value} cannot index sparse vectors")
    return params


def _faiss(spec: IndexSpec) -> FaissParams:
    params = spec.faiss
    assert params is not None, "a faiss kind has faiss parameters"
    return params


def _diskann(spec: IndexSpec) -> DiskannParams:
    params = spec.diskann
    assert params is not None, "DISKANN has its parameters"
    return params


def _dim(vectors: np.ndarray) -> int:
    return int(vectors.shape[1]) if vectors.ndim == 2 else 0
