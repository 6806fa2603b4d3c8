"""An independent brute-force reference (float64, written from the metric definitions) and test data."""

from __future__ import annotations

import numpy as np

from segcore.index.base import IndexHits
from segcore.segments.metric import Metric

METRICS = [Metric.L2, Metric.IP, Metric.COSINE]


def gaussian(n: int, dim: int, *, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)


def centres(count: int, dim: int, *, seed: int) -> np.ndarray:
    """Cluster centres: standard Gaussian points."""
    return gaussian(count, dim, seed=seed)


def around(middle: np.ndarray, n: int, *, spread: float, seed: int) -> np.ndarray:
    """``n`` rows, each a random centre of ``middle`` plus Gaussian noise of ``spread``."""
    rng = np.random.default_rng(seed)
    rows = middle[rng.integers(0, len(middle), n)] + spread * rng.standard_normal((n, middle.shape[1]))
    return rows.astype(np.float32)


def reference_distances(metric: Metric, queries: np.ndarray, base: np.ndarray) -> np.ndarray:
    """``(nq, n)`` float64 distances straight from the definitions."""
    q = queries.astype(np.float64)
    x = base.astype(np.float64)
    match metric:
        case Metric.L2:
            # Expanded in float64: exact enough, and no (nq, n, dim) temporary.
            d = (q * q).sum(axis=1)[:, None] + (x * x).sum(axis=1)[None, :] - 2.0 * (q @ x.T)
            return np.maximum(d, 0.0)
        case Metric.IP:
            return q @ x.T
        case Metric.COSINE:
            qn = np.linalg.norm(q, axis=1)
            xn = np.linalg.norm(x, axis=1)
            qn[qn == 0] = np.inf  # a zero vector scores 0
            xn[xn == 0] = np.inf
            return np.asarray((q @ x.T) / qn[:, None] / xn[None, :])
    raise AssertionError(metric)


def reference_topk(
    metric: Metric,
    queries: np.ndarray,
    base: np.ndarray,
    topk: int,
    *,
    allowed: np.ndarray | None = None,
    radius: float | None = None,
    range_filter: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Rows and distances per query (lists padded with -1 / NaN), best first, ties by the smaller row."""
    dist = reference_distances(metric, queries, base)
    keep = np.ones(dist.shape, dtype=bool) if allowed is None else np.broadcast_to(allowed, dist.shape).copy()
    if radius is not None:
        if metric is Metric.L2:
            keep &= dist < radius
            if range_filter is not None:
                keep &= dist >= range_filter
        else:
            keep &= dist > radius
            if range_filter is not None:
                keep &= dist <= range_filter
    rows = np.full((len(queries), topk), -1, dtype=np.int64)
    out = np.full((len(queries), topk), np.nan)
    positions = np.arange(base.shape[0])
    for i in range(len(queries)):
        candidates = positions[keep[i]]
        scores = dist[i, candidates]
        order = np.lexsort((candidates, -scores if metric.larger_is_better else scores))[:topk]
        rows[i, : len(order)] = candidates[order]
        out[i, : len(order)] = scores[order]
    return rows, out


def assert_matches_reference(got: IndexHits, rows: np.ndarray, dist: np.ndarray) -> None:
    """Same rows in the same order, distances equal to float32 rounding, worst-value padding."""
    np.testing.assert_array_equal(got.rows, rows)
    present = rows >= 0
    np.testing.assert_allclose(got.distances[present], dist[present], rtol=1e-4, atol=1e-4)
    assert np.isinf(got.distances[~present]).all()


def recall(found: np.ndarray, truth: np.ndarray) -> float:
    """Mean fraction of each query's true neighbours (``truth`` rows, no -1) that ``found`` holds."""
    hits = [len(np.intersect1d(f[f >= 0], t)) for f, t in zip(found, truth, strict=True)]
    return float(np.sum(hits) / truth.size)


def assert_well_formed(got: IndexHits, metric: Metric, topk: int, nq: int) -> None:
    """Shapes, dtypes, best first, ties by row, no duplicate row, -1 only after the last hit."""
    assert got.rows.shape == got.distances.shape == (nq, topk)
    assert got.rows.dtype == np.int64 and got.distances.dtype == np.float32
    for rows, dist in zip(got.rows, got.distances, strict=True):
        present = rows >= 0
        count = int(present.sum())
        assert present[:count].all() and not present[count:].any()
        r, d = rows[:count], dist[:count].astype(np.float64)
        assert len(np.unique(r)) == count
        score = -d if metric.larger_is_better else d
        assert (np.diff(score) >= 0).all()
        tied = np.diff(score) == 0
        assert (np.diff(r)[tied] > 0).all()
