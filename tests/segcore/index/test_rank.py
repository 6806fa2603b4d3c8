"""``rank.best_k`` against the two-key sort it replaces, and the C re-scoring against numpy's."""

from __future__ import annotations

import numpy as np
import pytest

from segcore.index.rank import best_k, ordered_bits
from segcore.index.refine import Refiner
from segcore.segments.metric import Metric


def _lexsort_best(rows: np.ndarray, dist: np.ndarray, k: int, larger: bool) -> tuple[np.ndarray, np.ndarray]:
    scores = -dist if larger else dist
    missing = rows < 0
    key_rows = np.where(missing, np.iinfo(np.int64).max, rows)
    key_scores = np.where(missing | np.isnan(scores), np.inf, scores)
    order = np.lexsort((key_rows, key_scores), axis=-1)[:, :k]
    return np.take_along_axis(rows, order, axis=1), np.take_along_axis(dist, order, axis=1)


def test_ordered_bits_keep_the_numeric_order() -> None:
    values = np.array([-np.inf, -3.5, -1e-30, 0.0, 1e-30, 2.0, np.inf], dtype=np.float32)
    bits = ordered_bits(values)
    assert (np.diff(bits.astype(np.int64)) > 0).all()
    assert ordered_bits(np.array([np.nan], dtype=np.float32))[0] == bits[-1]  # NaN ranks as +inf
    assert ordered_bits(np.array([-0.0], dtype=np.float32))[0] == ordered_bits(np.array([0.0], dtype=np.float32))[0]


@pytest.mark.parametrize("larger", [False, True])
@pytest.mark.parametrize("k", [1, 7, 40])
def test_best_k_matches_the_two_key_sort_with_ties_nan_and_missing(larger: bool, k: int) -> None:
    rng = np.random.default_rng(k + 100 * larger)
    nq, kb = 50, 40
    dist = rng.integers(-5, 5, (nq, kb)).astype(np.float32)  # many ties
    dist[rng.random((nq, kb)) < 0.05] = np.nan
    dist[rng.random((nq, kb)) < 0.05] = -0.0
    rows = np.stack([rng.permutation(10_000)[:kb] for _ in range(nq)]).astype(np.int64)
    rows[rng.random((nq, kb)) < 0.1] = -1
    dist[rows < 0] = -np.inf if larger else np.inf  # a missing candidate has the worst distance
    got_rows, got_dist = best_k(rows, dist, k, larger_is_better=larger)
    want_rows, want_dist = _lexsort_best(rows, dist, k, larger)
    np.testing.assert_array_equal(got_rows, want_rows)
    np.testing.assert_array_equal(got_dist, want_dist)


def test_best_k_refuses_mismatched_shapes() -> None:
    with pytest.raises(ValueError, match="must be"):
        best_k(np.zeros((2, 3), dtype=np.int64), np.zeros((2, 4), dtype=np.float32), 1, larger_is_better=False)


@pytest.mark.parametrize("metric", [Metric.L2, Metric.IP, Metric.COSINE])
def test_refine_in_c_matches_numpy(metric: Metric) -> None:
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((500, 16), dtype=np.float32)
    vectors[7] = 0.0  # a zero row scores 0 under COSINE
    sqnorms = np.einsum("ij,ij->i", vectors, vectors)
    queries = rng.standard_normal((9, 16), dtype=np.float32)
    rows = rng.integers(0, 500, (9, 12)).astype(np.int64)
    rows[:, 0] = 7
    rows[2, 5:] = -1
    in_c = Refiner(metric, vectors=vectors, sqnorms=sqnorms)
    in_numpy = Refiner(metric, vectors=vectors.astype(np.float16), sqnorms=sqnorms)  # narrow rows: numpy
    assert in_c._in_c and not in_numpy._in_c
    exact = Refiner(metric, vectors=vectors, sqnorms=sqnorms)._block(queries, rows)  # the numpy kernel itself
    np.testing.assert_allclose(in_c.distances(queries, rows), exact, rtol=1e-5, atol=1e-4)
    assert np.isclose(in_numpy.distances(queries, rows), exact, rtol=1e-2, atol=1e-1).all()
