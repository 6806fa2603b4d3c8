"""``_is_page`` over short inputs (a Python loop) answers as its numpy form does, NaN and ties included."""

from __future__ import annotations

import numpy as np
import pytest

from segcore.segments import reduce


def _numpy_form(queries: np.ndarray, distances: np.ndarray, topk: int, descending: bool) -> bool:
    small = reduce._SMALL_PAGE
    try:
        reduce._SMALL_PAGE = -1  # every input takes the numpy path
        return reduce._is_page(queries, distances, topk, descending)
    finally:
        reduce._SMALL_PAGE = small


@pytest.mark.parametrize("seed", range(6))
def test_small_inputs_agree_with_the_numpy_form(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(400):
        n = int(rng.integers(1, 20))
        queries = np.sort(rng.integers(0, 3, n)) if rng.random() < 0.8 else rng.integers(0, 3, n)
        distances = rng.choice([0.0, 0.5, 1.0, 2.0, np.nan], n).astype(np.float32)
        if rng.random() < 0.5:  # mostly well-ordered pages, so both answers occur
            distances = np.sort(distances)
        descending = bool(rng.random() < 0.5)
        if descending:
            distances = distances[::-1].copy()
        topk = int(rng.integers(1, 8))
        q = queries.astype(np.int32)
        assert reduce._is_page(q, distances, topk, descending) == _numpy_form(q, distances, topk, descending), (
            q.tolist(), distances.tolist(), topk, descending)


def test_a_page_and_three_ways_not_to_be_one() -> None:
    q = np.array([0, 0, 1, 1], dtype=np.int32)
    assert reduce._is_page(q, np.array([0.1, 0.2, 0.3, 0.4], np.float32), 2, False)
    assert not reduce._is_page(q, np.array([0.2, 0.1, 0.3, 0.4], np.float32), 2, False)  # a worse hit first
    assert not reduce._is_page(q, np.array([0.1, 0.2, 0.3, 0.4], np.float32), 1, False)  # more than topk
    assert not reduce._is_page(q[::-1].copy(), np.array([0.1, 0.2, 0.3, 0.4], np.float32), 2, False)  # unsorted
