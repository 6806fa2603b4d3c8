"""The sparse indexes' batched matrix-product search: ties at the k-th place, empty queries and segments,
filters that leave nothing, the BM25 cache per setting, and MaxScore's lossy walk below ratio 1."""

from __future__ import annotations

import numpy as np
import pytest

from segcore.index import sparse_product
from segcore.index.base import SearchParams
from segcore.index.factory import IndexSpec, build_index
from segcore.index.sparse_exact import SparseExactIndex
from segcore.segments.metric import Metric
from segcore.segments.sparse_rows import SparseRows, pad_queries, rows_from_pairs
from tests.segcore.segments.sparse_reference import random_rows

ALGOS = ("TAAT_NAIVE", "DAAT_WAND", "DAAT_MAXSCORE")


def _spec(algo: str, metric: str = "IP") -> IndexSpec:
    return IndexSpec(index_type="SPARSE_INVERTED_INDEX", metric=metric, params={"inverted_index_algo": algo},
                     sparse=True)


def _row(idx: list[int], val: list[float]) -> tuple[np.ndarray, np.ndarray]:
    return np.array(idx, dtype=np.uint32), np.array(val, dtype=np.float32)


def _same(a, b) -> None:
    assert a.rows.tolist() == b.rows.tolist()
    assert a.distances.tobytes() == b.distances.tobytes()


@pytest.mark.parametrize("algo", ALGOS)
def test_ties_at_the_kth_place_go_to_the_smaller_rows(algo: str) -> None:
    # 40 identical rows scattered among others: 3 of them fit in the top 5 after two better rows.
    rng = np.random.default_rng(3)
    rows = []
    for r in range(200):
        if r % 5 == 2:
            rows.append(_row([1, 7], [0.5, 0.25]))
        elif r in (150, 151):
            rows.append(_row([1, 7], [0.9, 0.9]))
        else:
            rows.append(_row([int(rng.integers(10, 40))], [1.0]))
    base = rows_from_pairs(rows)
    queries = pad_queries(rows_from_pairs([_row([1, 7], [1.0, 2.0])]))
    got = build_index(_spec(algo), base).search(queries, 5)
    _same(got, SparseExactIndex(base, Metric.IP).search(queries, 5))
    assert got.rows[0].tolist() == [150, 151, 2, 7, 12]


@pytest.mark.parametrize("algo", ALGOS)
def test_a_batch_with_empty_and_unknown_queries_and_a_filter_leaving_nothing(algo: str) -> None:
    rng = np.random.default_rng(11)
    base = random_rows(rng, 500, vocab=100, max_nnz=8)
    batch = rows_from_pairs([
        _row([3, 50, 99], [1.0, 0.5, 2.0]),
        _row([], []),  # no terms
        _row([1000, 2000], [1.0, 1.0]),  # no term any row holds
        _row([5], [0.0]),  # a zero weight: scores 0, no hits
        _row([4, 8, 15, 16, 23, 42], [0.3, 0.1, 0.4, 0.1, 0.5, 0.9]),
    ])
    queries = pad_queries(batch)
    index, exact = build_index(_spec(algo), base), SparseExactIndex(base, Metric.IP)
    for mask in (None, np.zeros(len(base), dtype=bool), rng.random(len(base)) < 0.1):
        for topk in (1, 7, 600):
            _same(index.search(queries, topk, allowed=mask), exact.search(queries, topk, allowed=mask))
    assert (index.search(queries, 3, allowed=np.zeros(len(base), dtype=bool)).rows == -1).all()
    found = index.search(queries, 3)
    assert found.rows[0, 0] >= 0 and (found.rows[1:4] == -1).all() and found.rows[4, 0] >= 0


@pytest.mark.parametrize("algo", ALGOS)
def test_an_empty_segment_finds_nothing(algo: str) -> None:
    base = SparseRows.empty()
    hits = build_index(_spec(algo), base).search(pad_queries(rows_from_pairs([_row([1], [1.0])])), 4)
    assert (hits.rows == -1).all()


def test_bm25_scores_follow_each_setting() -> None:
    rng = np.random.default_rng(5)
    base = rows_from_pairs([
        _row(sorted(rng.choice(60, 6, replace=False).tolist()), rng.integers(1, 4, 6).astype(float).tolist())
        for _ in range(300)
    ])
    queries = pad_queries(rows_from_pairs([_row([1, 2, 3, 30], [0.7, 1.5, 0.2, 2.2]), _row([10, 59], [1.0, 3.0])]))
    index, exact = build_index(_spec("TAAT_NAIVE", "BM25"), base), SparseExactIndex(base, Metric.BM25)
    settings = [SearchParams(bm25_k1=k1, bm25_b=b, bm25_avgdl=avgdl)
                for k1, b, avgdl in ((1.2, 0.75, 12.0), (0.5, 0.0, 12.0), (1.2, 0.75, 12.0), (2.0, 1.0, 4.0))]
    for params in settings:  # the cached scores are rebuilt when the setting changes, and back again
        want, got = exact.search(queries, 10, params=params), index.search(queries, 10, params=params)
        assert got.rows.tolist() == want.rows.tolist()
        np.testing.assert_allclose(got.distances, want.distances, rtol=1e-6)


def test_maxscore_below_ratio_one_still_prunes_with_exact_scores() -> None:
    rng = np.random.default_rng(9)
    base = random_rows(rng, 6000, vocab=400, max_nnz=20)
    queries = pad_queries(random_rows(rng, 20, vocab=400, max_nnz=12))
    exact = SparseExactIndex(base, Metric.IP)
    index = build_index(_spec("DAAT_MAXSCORE"), base)
    _same(index.search(queries, 10, params=SearchParams(dim_max_score_ratio=1.0)), exact.search(queries, 10))
    pruned = index.search(queries, 10, params=SearchParams(dim_max_score_ratio=0.5))
    full = exact.search(queries, 6000)
    for q in range(len(queries)):
        score = dict(zip(full.rows[q].tolist(), full.distances[q].tolist(), strict=True))
        for r, d in zip(pruned.rows[q], pruned.distances[q], strict=True):
            if r >= 0:
                assert score[int(r)] == d  # a row it returns has its exact score


@pytest.mark.parametrize("budget", [1, 40, 1 << 20])
def test_a_batch_scored_in_blocks_equals_the_exact_search(monkeypatch: pytest.MonkeyPatch, budget: int) -> None:
    # A small budget: blocks of one or a few queries (a query above the budget is a block alone).
    monkeypatch.setattr(sparse_product, "BLOCK_POSTINGS", budget)
    rng = np.random.default_rng(13)
    base = random_rows(rng, 800, vocab=120, max_nnz=10)
    queries = pad_queries(random_rows(rng, 37, vocab=120, max_nnz=6))
    mask = rng.random(len(base)) < 0.6
    _same(build_index(_spec("TAAT_NAIVE"), base).search(queries, 9, allowed=mask),
          SparseExactIndex(base, Metric.IP).search(queries, 9, allowed=mask))
