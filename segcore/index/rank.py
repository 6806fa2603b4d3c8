"""The best ``k`` candidates per query, ties by the smaller row, in one integer sort.

Index searches return candidate rows with distances, ``(nq, kb)`` each, and a
missing candidate as row ``-1``. Ranking them by (score, row) with
``np.lexsort`` sorts two keys over all ``kb`` candidates; here each candidate
becomes one ``uint64``: the score's float32 bits mapped to an order-preserving
unsigned integer in the high half, the row in the low half. A partial
selection (``argpartition``) then a sort of the ``k`` kept keys gives the same
order as the two-key sort, in about a third of the time for 100 x 100
candidates.

Scores are distances where smaller is better, or similarities (negated here).
NaN ranks after every number, a missing row after everything; ``-0.0`` and
``0.0`` are equal (ties go by row).
"""

from __future__ import annotations

import numpy as np

_SIGN = np.uint32(0x80000000)
_MISSING = np.uint64(0xFFFFFFFFFFFFFFFF)
_MAX_ROW = 1 << 32


def ordered_bits(scores: np.ndarray) -> np.ndarray:
    """float32 ``scores`` as ``uint32`` whose unsigned order is the numeric order (NaN last)."""
    values = np.asarray(scores, dtype=np.float32) + np.float32(0.0)  # -0.0 becomes 0.0
    values = np.where(np.isnan(values), np.float32(np.inf), values)
    bits = values.view(np.uint32)
    return np.where(bits & _SIGN, ~bits, bits | _SIGN)


def best_k(rows: np.ndarray, dist: np.ndarray, k: int, *, larger_is_better: bool) -> tuple[np.ndarray, np.ndarray]:
    """The best ``k`` of each query's candidates, best first: ``(rows, dist)``, ``(nq, min(k, kb))``.

    ``rows`` are int64 row positions below 2^32, ``-1`` for none; ``dist`` the
    candidates' float32 distances in the metric's own sense.
    """
    if rows.shape != dist.shape or rows.ndim != 2:
        raise ValueError(f"rows {rows.shape} and distances {dist.shape} must be (nq, kb) alike")
    if rows.size and int(rows.max()) >= _MAX_ROW:
        raise ValueError("row positions must be below 2^32")
    scores = -dist if larger_is_better else dist
    keys = (ordered_bits(scores).astype(np.uint64) << np.uint64(32)) | rows.astype(np.uint64, copy=False)
    keys = np.where(rows < 0, _MISSING, keys)
    kb = rows.shape[1]
    k = min(k, kb)
    if k < kb:
        kept = np.argpartition(keys, k - 1, axis=1)[:, :k]
        order = np.take_along_axis(
            kept, np.argsort(np.take_along_axis(keys, kept, axis=1), axis=1, kind="stable"), axis=1
        )
    else:
        order = np.argsort(keys, axis=1, kind="stable")
    return np.take_along_axis(rows, order, axis=1), np.take_along_axis(dist, order, axis=1)
