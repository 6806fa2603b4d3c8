"""The binary metrics against a bit-by-bit reference: HAMMING counts, JACCARD in [0, 1], the structure matches."""

from __future__ import annotations

import numpy as np
import pytest

from segcore.segments.binary_metric import binary_distances, hamming, popcounts
from segcore.segments.metric import Metric, larger_is_better, parse_metric
from tests.segcore.segments.binary_reference import random_codes, reference_distances

METRICS = ("HAMMING", "JACCARD", "SUBSTRUCTURE", "SUPERSTRUCTURE")


@pytest.mark.parametrize("code_size", [1, 2, 3, 8, 13, 16, 64])
@pytest.mark.parametrize("metric", METRICS)
def test_distances_match_the_reference(metric: str, code_size: int) -> None:
    # Sparse rows and queries make structure matches (containment) common enough to test.
    density = 0.5 if metric in ("HAMMING", "JACCARD") else 0.08
    base = random_codes(300, code_size, seed=code_size, density=density)
    queries = np.concatenate([random_codes(6, code_size, seed=99, density=density), base[:3]])
    got = binary_distances(parse_metric(metric), queries, base)
    expected = reference_distances(metric, queries, base)
    assert got.dtype == np.float32 and got.shape == (len(queries), len(base))
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)
    if metric in ("SUBSTRUCTURE", "SUPERSTRUCTURE"):
        assert 0 < np.isfinite(got).sum() < got.size  # both cases happen


def test_hamming_is_a_whole_count_and_jaccard_a_float32_ratio() -> None:
    a = np.packbits(np.array([[1, 1, 0, 0, 1, 0, 0, 0]], dtype=bool), axis=1)
    b = np.packbits(np.array([[1, 0, 1, 0, 0, 0, 0, 0], [0] * 8, [1, 1, 0, 0, 1, 0, 0, 0]], dtype=bool), axis=1)
    np.testing.assert_array_equal(binary_distances(Metric.HAMMING, a, b), [[3.0, 3.0, 0.0]])
    # a | b[0] has 4 bits, a & b[0] one: 1 - 1/4. Against all zeros: 1.0. Against itself: 0.
    np.testing.assert_array_equal(binary_distances(Metric.JACCARD, a, b), [[np.float32(0.75), 1.0, 0.0]])
    zero = np.zeros((1, 1), np.uint8)
    assert binary_distances(Metric.JACCARD, zero, zero)[0, 0] == 1.0  # faiss: an empty union is at 1


def test_counts_and_raw_hamming() -> None:
    codes = random_codes(50, 5, seed=3)
    np.testing.assert_array_equal(popcounts(codes), np.unpackbits(codes, axis=1).sum(1))
    np.testing.assert_array_equal(hamming(codes[:4], codes), reference_distances("HAMMING", codes[:4], codes))
    wide = random_codes(10, 24, seed=4)  # 24 bytes: counted as uint64 words
    np.testing.assert_array_equal(popcounts(wide), np.unpackbits(wide, axis=1).sum(1))
    assert hamming(codes[:0], codes).shape == (0, 50)


def test_binary_metrics_rank_smaller_first_and_are_not_float_metrics() -> None:
    for name in METRICS:
        metric = parse_metric(name.lower())
        assert metric.is_binary and not metric.larger_is_better and not larger_is_better(name)
    for float_metric in (Metric.L2, Metric.IP, Metric.COSINE):
        assert not float_metric.is_binary
        with pytest.raises(ValueError, match="not a metric of binary vectors"):
            binary_distances(float_metric, np.zeros((1, 1), np.uint8), np.zeros((1, 1), np.uint8))
    with pytest.raises(ValueError, match="cannot be compared"):
        hamming(np.zeros((1, 2), np.uint8), np.zeros((1, 3), np.uint8))
