"""Distances between binary vectors (``BINARY_VECTOR``), with Milvus' conventions.

A binary vector of ``dim`` bits is a row of ``dim / 8`` bytes (uint8); a matrix
of them is ``(n, dim / 8)``. Every metric comes from two counts, the Hamming
distance ``h = |a ^ b|`` and the bits set in each side (``|a|``, ``|b|``):

* ``HAMMING``: ``h``, a whole number returned as float32 (knowhere converts
  faiss' int32 counts the same way);
* ``JACCARD``: ``1 - |a & b| / |a | b|``. With ``|a | b| = (|a| + |b| + h) / 2``
  and ``|a | b| - |a & b| = h`` it is ``h / |a | b|``, divided in float32 as
  faiss does (``(den - num) / den``); two all-zero vectors are at 1.0, as in
  faiss;
* ``SUBSTRUCTURE``: 0 where the row contains the query (``q & x == q``, that is
  ``|q & x| = |q|``, that is ``|x| - h = |q|``), ``+inf`` (never a hit) elsewhere;
* ``SUPERSTRUCTURE``: 0 where the query contains the row (``|q| - h = |x|``),
  ``+inf`` elsewhere.

The Hamming counts come from faiss' ``hammings`` (C, popcount over 64-bit words,
the GIL released): about 10 ms per query over 1M rows of 128 bits on this
machine, twice numpy's ``bitwise_count`` over the XOR. Every function blocks
(CPU work) and is safe to call from several threads.
"""

from __future__ import annotations

import faiss
import numpy as np

from segcore.segments.metric import Metric


def popcounts(codes: np.ndarray) -> np.ndarray:
    """Bits set per row of a ``(n, code_size)`` uint8 matrix, as int32."""
    matrix = _codes(codes)
    if matrix.shape[1] % 8 == 0 and matrix.shape[1]:
        matrix = matrix.view(np.uint64)  # a word at a time: 8x fewer elements to count
    counts: np.ndarray = np.bitwise_count(matrix).sum(axis=1, dtype=np.int32)
    return counts


def hamming(queries: np.ndarray, base: np.ndarray) -> np.ndarray:
    """``(nq, n)`` int32 Hamming distances between the rows of two uint8 code matrices."""
    q, b = _codes(queries), _codes(base)
    if q.shape[1] != b.shape[1]:
        raise ValueError(f"binary vectors of {q.shape[1]} and {b.shape[1]} bytes cannot be compared")
    out = np.zeros((len(q), len(b)), dtype=np.int32)
    if out.size:
        # faiss' SWIG module is untyped past its stubs; hammings(a, b, na, nb, code_size, out).
        faiss.hammings(  # type: ignore[attr-defined]  # not in faiss' stubs
            faiss.swig_ptr(q), faiss.swig_ptr(b), len(q), len(b), q.shape[1], faiss.swig_ptr(out)
        )
    return out


def binary_distances(
    metric: Metric,
    queries: np.ndarray,
    base: np.ndarray,
    base_counts: np.ndarray | None = None,
) -> np.ndarray:
    """``(nq, n)`` float32 distances of ``metric`` between ``queries`` and ``base`` (uint8 codes).

    ``base_counts`` are ``popcounts(base)`` when the caller keeps them (computed here
    otherwise). A row that a structure metric does not match is at ``+inf``.

    Raises:
        ValueError: ``metric`` is not a binary metric, or the code sizes differ.
    """
    if not metric.is_binary:
        raise ValueError(f"{metric.value} is not a metric of binary vectors")
    h = hamming(queries, base)
    if metric is Metric.HAMMING:
        return h.astype(np.float32)
    q_counts = popcounts(queries)[:, None]
    x_counts = (popcounts(base) if base_counts is None else np.asarray(base_counts, dtype=np.int32))[None, :]
    if metric is Metric.JACCARD:
        union = (q_counts + x_counts + h) // 2
        out = np.ones(h.shape, dtype=np.float32)
        np.divide(h.astype(np.float32), union.astype(np.float32), out=out, where=union > 0)
        return out
    contains = (x_counts - h == q_counts) if metric is Metric.SUBSTRUCTURE else (q_counts - h == x_counts)
    return np.where(contains, np.float32(0.0), np.float32(np.inf)).astype(np.float32)


def _codes(matrix: np.ndarray) -> np.ndarray:
    codes = np.ascontiguousarray(matrix, dtype=np.uint8)
    if codes.ndim != 2:
        raise ValueError(f"binary vectors must be a (rows, bytes) uint8 matrix, got shape {codes.shape}")
    return codes
