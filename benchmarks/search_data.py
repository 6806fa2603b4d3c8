"""The search benchmark's data: seeded vectors and queries, exact top-k, recall, latency summaries."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

T = TypeVar("T")

#: Elements of one float32 distance block (queries x rows): 2^24 x 4 B = 64 MiB.
BLOCK = 1 << 24


@dataclass(frozen=True, slots=True, kw_only=True)
class Dataset:
    vectors: np.ndarray  # (rows, dim) float32; row i has primary key i
    queries: np.ndarray  # (queries, dim) float32, not among the vectors


def make_dataset(
    kind: str, rows: int, dim: int, queries: int, seed: int, *, clusters: int = 100, spread: float = 0.1
) -> Dataset:
    """``gaussian``: every coordinate N(0, 1). ``clustered``: ``clusters`` centres N(0, 1), each point
    a random centre plus N(0, spread^2) per coordinate. Queries are drawn the same way, apart."""
    rng = np.random.default_rng(seed)
    if kind == "gaussian":
        return Dataset(
            vectors=rng.standard_normal((rows, dim), dtype=np.float32),
            queries=rng.standard_normal((queries, dim), dtype=np.float32),
        )
    if kind == "clustered":
        centres = rng.standard_normal((clusters, dim), dtype=np.float32)

        def draw(n: int) -> np.ndarray:
            noise = rng.standard_normal((n, dim), dtype=np.float32) * np.float32(spread)
            return centres[rng.integers(0, clusters, n)] + noise

        return Dataset(vectors=draw(rows), queries=draw(queries))
    raise ValueError(f"unknown data kind {kind!r}")


def sqnorms(matrix: np.ndarray) -> np.ndarray:
    return np.einsum("ij,ij->i", matrix, matrix)


def topk_l2(vectors: np.ndarray, norms: np.ndarray, queries: np.ndarray, k: int) -> np.ndarray:
    """Rows of the ``k`` smallest squared L2 distances per query, best first (float32 expansion)."""
    d = norms[None, :] - 2.0 * (queries @ vectors.T)  # ||q||^2 is the same for every row of a query
    part = np.argpartition(d, k - 1, axis=1)[:, :k]
    order = np.argsort(np.take_along_axis(d, part, axis=1), axis=1)
    return np.take_along_axis(part, order, axis=1)


def batches(n: int, size: int) -> Iterator[slice]:
    for first in range(0, n, size):
        yield slice(first, min(first + size, n))


def ground_truth(data: Dataset, k: int) -> np.ndarray:
    """Exact top ``k`` rows per query, ``(queries, k)`` int64.

    Candidates come from the float32 expansion (``k + 32`` per query, in blocks
    of about 64 MiB), then are ranked by their float64 distances, so rounding in
    ``||x||^2 - 2 q.x`` (large with clustered data) cannot reorder near ties.
    """
    vectors, queries = data.vectors, data.queries
    norms = sqnorms(vectors)
    extra = min(k + 32, len(vectors))
    out = np.empty((len(queries), k), dtype=np.int64)
    for part in batches(len(queries), max(1, BLOCK // max(1, len(vectors)))):
        cand = topk_l2(vectors, norms, queries[part], extra)
        diff = vectors[cand].astype(np.float64) - queries[part, None, :].astype(np.float64)
        exact = np.einsum("qcd,qcd->qc", diff, diff)
        order = np.lexsort((cand, exact), axis=-1)[:, :k]
        out[part] = np.take_along_axis(cand, order, axis=1)
    return out


def recall(found: list[list[int]] | np.ndarray, truth: np.ndarray) -> float:
    """Mean over queries of |found ∩ truth| / k, ``k = truth.shape[1]``."""
    k = truth.shape[1]
    hits = sum(len(set(map(int, f[:k])) & set(t.tolist())) for f, t in zip(found, truth, strict=True))
    return hits / (k * len(truth))


@dataclass(slots=True)
class Timed:
    """Wall time of each request of a run, the queries they carried, and the untimed warm-up requests."""

    seconds: list[float]
    queries: int
    warmup: int

    def summary(self) -> dict[str, float]:
        total = sum(self.seconds)
        ms = np.asarray(self.seconds) * 1e3
        return {
            "qps": round(self.queries / total, 1) if total else 0.0,
            "p50_ms": round(float(np.percentile(ms, 50)), 3),
            "p99_ms": round(float(np.percentile(ms, 99)), 3),
            "requests": len(self.seconds),
        }


def time_requests(
    queries: np.ndarray, nq: int, call: Callable[[np.ndarray], T], warmup: int = 5
) -> tuple[Timed, list[T]]:
    """``call`` on consecutive batches of ``nq`` queries, one after the other, each timed.

    The first ``warmup`` batches run once untimed before (connections, caches, lazy imports).
    """
    parts = list(batches(len(queries), nq))
    for part in parts[:warmup]:
        call(queries[part])
    seconds: list[float] = []
    results: list[T] = []
    for part in parts:
        t0 = time.perf_counter()
        out = call(queries[part])
        seconds.append(time.perf_counter() - t0)
        results.append(out)
    return Timed(seconds, len(queries), len(parts[:warmup])), results
