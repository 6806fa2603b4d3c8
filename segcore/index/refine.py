"""Re-scoring an index's candidates with a more precise representation of their vectors.

The refine step of HNSW_SQ/PQ/PRQ and IVF_RABITQ (``refine_type``) and
SCANN's re-ranking (``with_raw_data``): the quantized index proposes
candidates, and their distances are computed again from either the segment's
own vectors (FP32: exact distances, nothing stored; narrow rows are converted per candidate) or a scalar
quantizer's decoded vectors (SQ6, SQ8, FP16, BF16), as faiss' ``IndexRefine``
does. The caller ranks the re-scored candidates and keeps the best.

float32 rows are re-scored in C by faiss' ``fvec_L2sqr_by_idx`` /
``fvec_inner_products_by_idx`` (reading the candidates where they are, on the
caller's OpenMP threads); narrow rows and decoded codes with numpy.
"""

from __future__ import annotations

from typing import Any

import faiss as faiss_module
import numpy as np

from common.narrow_vectors import to_float32
from segcore.index.base import worst_distance
from segcore.segments.metric import Metric

faiss: Any = faiss_module  # the by-index distance functions are untyped SWIG

#: Largest candidate block (queries x candidates x dimension) decoded at once: 32 MiB of float32.
BLOCK_CELLS = 8 * 1024 * 1024


class Refiner:
    """Distances of candidate rows, from the raw vectors or from a scalar quantizer's codes.

    Args:
        metric: the distance, in Milvus' conventions.
        vectors: the segment's ``(rows, dim)`` float32 vectors (FP32 refine), or None.
        sqnorms: their squared norms (FP32 refine), or None.
        store: a faiss ``IndexScalarQuantizer`` over the same rows (normalised for
            COSINE), or None for FP32.
    """

    def __init__(
        self, metric: Metric, *, vectors: np.ndarray | None = None, sqnorms: np.ndarray | None = None,
        store: Any = None,
    ) -> None:
        if (store is None) == (vectors is None):
            raise ValueError("a refiner re-scores from either the raw vectors or a quantizer's codes")
        self._metric = metric
        self._vectors = vectors
        self._sqnorms = sqnorms
        self.store = store
        self._in_c = vectors is not None and vectors.dtype == np.float32 and vectors.flags.c_contiguous

    def distances(self, queries: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """``(nq, k)`` float32 distances of ``queries`` (raw, ``(nq, dim)``) to ``rows`` (``-1``: none).

        A missing row gets the metric's worst value.
        """
        nq, k = rows.shape
        out = np.full((nq, k), worst_distance(self._metric), dtype=np.float32)
        if nq == 0 or k == 0:
            return out
        if self._in_c and metric_in_c(self._metric):
            return self._in_faiss(np.ascontiguousarray(queries, dtype=np.float32), rows)
        step = max(1, BLOCK_CELLS // (k * queries.shape[1]))
        for start in range(0, nq, step):
            block = slice(start, min(nq, start + step))
            out[block] = self._block(queries[block], rows[block])
        return out

    def _in_faiss(self, queries: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Distances computed by faiss straight from the float32 rows (no gathered copy)."""
        assert self._vectors is not None and self._sqnorms is not None
        nq, k = rows.shape
        ids = np.ascontiguousarray(rows, dtype=np.int64)
        out = np.empty((nq, k), dtype=np.float32)
        args = (faiss.swig_ptr(out), faiss.swig_ptr(queries), faiss.swig_ptr(self._vectors), faiss.swig_ptr(ids))
        dim = queries.shape[1]
        if self._metric is Metric.L2:
            faiss.fvec_L2sqr_by_idx(*args, dim, nq, k)
        else:
            faiss.fvec_inner_products_by_idx(*args, dim, nq, k)
        valid = rows >= 0
        if self._metric is Metric.COSINE:
            qn = np.sqrt(np.einsum("ij,ij->i", queries, queries))
            denom = qn[:, None] * np.sqrt(self._sqnorms[np.where(valid, rows, 0)])
            out = np.divide(out, denom, out=np.zeros_like(out), where=valid & (denom > 0))
        out[~valid] = worst_distance(self._metric)
        return out

    def _block(self, queries: np.ndarray, rows: np.ndarray) -> np.ndarray:
        valid = rows >= 0
        safe = np.where(valid, rows, 0)
        if self.store is None:
            assert self._vectors is not None and self._sqnorms is not None
            cand = to_float32(self._vectors[safe])  # only the candidates of narrow rows
            sq = self._sqnorms[safe]
        else:
            flat = self.store.reconstruct_batch(np.ascontiguousarray(safe.ravel(), dtype=np.int64))
            cand = flat.reshape(rows.shape[0], rows.shape[1], -1)
            sq = np.einsum("qkd,qkd->qk", cand, cand)
        q = queries
        if self._metric is Metric.COSINE and self.store is not None:
            q = _unit(queries)  # the codes hold unit vectors: cosine = inner product
        dots = np.einsum("qkd,qd->qk", cand, q)
        match self._metric:
            case Metric.L2:
                qn = np.einsum("ij,ij->i", q, q)
                dist = np.maximum(qn[:, None] + sq - 2.0 * dots, 0.0)
            case Metric.IP:
                dist = dots
            case Metric.COSINE:
                if self.store is not None:
                    dist = dots
                else:
                    qn = np.sqrt(np.einsum("ij,ij->i", q, q))
                    denom = qn[:, None] * np.sqrt(sq)
                    dist = np.divide(dots, denom, out=np.zeros_like(dots), where=denom > 0)
            case _:
                raise ValueError(f"no refine for {self._metric.value}")
        return np.where(valid, dist, worst_distance(self._metric)).astype(np.float32, copy=False)


def metric_in_c(metric: Metric) -> bool:
    return metric in (Metric.L2, Metric.IP, Metric.COSINE)


def _unit(matrix: np.ndarray) -> np.ndarray:
    norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix))
    return np.divide(matrix, norms[:, None], out=np.zeros_like(matrix), where=norms[:, None] > 0)
