"""Brute-force references for the binary metrics: bits unpacked one by one, nothing shared with the code under test."""

from __future__ import annotations

import numpy as np


def bits(codes: np.ndarray) -> np.ndarray:
    return np.unpackbits(np.asarray(codes, dtype=np.uint8), axis=-1).astype(bool)


def reference_distances(metric: str, queries: np.ndarray, base: np.ndarray) -> np.ndarray:
    """``(nq, n)`` float64 distances; ``inf`` where a structure metric does not match."""
    q, x = bits(queries)[:, None, :], bits(base)[None, :, :]
    inter = (q & x).sum(-1)
    union = (q | x).sum(-1)
    if metric == "HAMMING":
        return (q != x).sum(-1).astype(np.float64)
    if metric == "JACCARD":
        # Milvus' distances are float32: round there, so range bounds compare as they do in Milvus.
        exact = np.where(union == 0, 1.0, 1.0 - inter / np.maximum(union, 1))
        return exact.astype(np.float32).astype(np.float64)
    if metric == "SUBSTRUCTURE":  # the row contains the query
        return np.where((q & x == q).all(-1), 0.0, np.inf)
    if metric == "SUPERSTRUCTURE":  # the query contains the row
        return np.where((q & x == x).all(-1), 0.0, np.inf)
    raise ValueError(metric)


def reference_topk(metric: str, queries: np.ndarray, base: np.ndarray, k: int, allowed: np.ndarray | None = None,
                   radius: float | None = None, range_filter: float | None = None) -> list[list[tuple[int, float]]]:
    """Per query the best ``k`` (row, distance), ties by the smaller row, only allowed, matching and in range rows."""
    dist = reference_distances(metric, queries, base)
    out = []
    for row in dist:
        keep = np.isfinite(row)
        if allowed is not None:
            keep &= allowed
        if radius is not None:
            keep &= row < radius
            if range_filter is not None:
                keep &= row >= range_filter
        rows = np.flatnonzero(keep)
        order = rows[np.lexsort((rows, row[rows]))][:k]
        out.append([(int(r), float(row[r])) for r in order])
    return out


def random_codes(n: int, code_size: int, *, seed: int, density: float = 0.5) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.packbits(rng.random((n, code_size * 8)) < density, axis=1)
