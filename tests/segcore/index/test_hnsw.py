"""HNSW specifics: when it walks the graph and when it searches exactly, ef, conversions, empty segments."""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from segcore.index.base import SearchParams
from segcore.index.hnsw import HnswIndex, hnsw_space, to_milvus_distance
from segcore.index.options import IndexOptions
from segcore.index.spec import HnswParams
from segcore.segments.metric import Metric
from tests.segcore.index.reference import (
    METRICS,
    assert_matches_reference,
    assert_well_formed,
    gaussian,
    recall,
    reference_topk,
)

PARAMS = HnswParams(m=16, ef_construction=100)


@pytest.fixture(scope="module")
def index_5k() -> HnswIndex:
    return HnswIndex.build(gaussian(5000, 16, seed=21), Metric.L2, PARAMS)


def test_the_exact_threshold_grows_with_the_square_root_of_the_rows() -> None:
    options = IndexOptions()
    assert options.exact_threshold(0) == 2000
    assert options.exact_threshold(2500) == 2000
    assert options.exact_threshold(10_000) == 4000
    assert options.exact_threshold(1_000_000) == 40_000
    assert IndexOptions(exact_min_rows=0, exact_sqrt_factor=0.0).exact_threshold(10**6) == 0
    assert math.isclose(options.exact_threshold(400_000) / 400_000, 0.0633, abs_tol=1e-3)


def test_a_batch_of_queries_raises_the_exact_threshold_up_to_a_bound() -> None:
    options = IndexOptions()
    one, ten, hundred, huge = (options.exact_threshold(1_000_000, nq) for nq in (1, 10, 100, 10**9))
    assert one == 40_000 == options.exact_threshold(1_000_000, 0)
    assert one < ten < hundred < huge
    assert math.isclose(ten / one, math.sqrt(10 * 26 / 35), rel_tol=1e-4)
    assert math.isclose(hundred / one, math.sqrt(100 * 26 / 125), rel_tol=1e-4)
    assert huge <= math.ceil(one * math.sqrt(26))
    assert IndexOptions(exact_setup_queries=0.0).exact_threshold(1_000_000, 100) == 40_000  # no batch gain
    with pytest.raises(ValueError, match="negative"):
        IndexOptions(exact_setup_queries=-1.0)


def test_a_filtered_batch_is_searched_exactly_where_one_query_walks(index_5k: HnswIndex) -> None:
    # 5000 rows: one query walks from 2829 allowed rows; 100 queries only from 2829 * 4.56 (all of them).
    assert not index_5k.searches_exactly(3000, 10, nq=1)
    assert index_5k.searches_exactly(3000, 10, nq=100)
    vectors, queries = gaussian(5000, 16, seed=21), gaussian(100, 16, seed=27)
    allowed = np.random.default_rng(28).random(5000) < 0.6
    got = index_5k.search(queries, 10, allowed=allowed, params=SearchParams(ef=16))
    # Exact despite a small ef: the true filtered top-k for every query.
    assert_matches_reference(got, *reference_topk(Metric.L2, queries, vectors, 10, allowed=allowed))


def test_an_unfiltered_batch_still_walks_the_graph(index_5k: HnswIndex) -> None:
    queries = gaussian(100, 16, seed=29)
    calls = []
    real = index_5k._flat.search

    def spy(*args: object, **kwargs: object) -> object:
        calls.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    index_5k._flat.search = spy  # type: ignore[method-assign]
    try:
        index_5k.search(queries, 10, params=SearchParams(ef=64))
    finally:
        del index_5k._flat.search
    assert calls == []


def test_few_allowed_rows_are_searched_exactly(index_5k: HnswIndex) -> None:
    # 5000 rows: exact below max(2000, 40 * sqrt(5000) = 2829) allowed rows.
    assert index_5k.searches_exactly(2828, 10)
    assert not index_5k.searches_exactly(2829, 10)
    assert index_5k.searches_exactly(5000, 5000)  # topk covers every allowed row
    vectors, queries = gaussian(5000, 16, seed=21), gaussian(20, 16, seed=22)
    allowed = np.random.default_rng(23).random(5000) < 0.01
    got = index_5k.search(queries, 10, allowed=allowed)
    assert allowed[got.rows[got.rows >= 0]].all()
    # Exact, whatever ef: the true filtered top-k.
    assert_matches_reference(got, *reference_topk(Metric.L2, queries, vectors, 10, allowed=allowed))


@pytest.mark.parametrize("metric", METRICS, ids=lambda m: m.value)
def test_the_filtered_walk_returns_only_allowed_rows(metric: Metric) -> None:
    vectors, queries = gaussian(5000, 16, seed=24), gaussian(50, 16, seed=25)
    options = IndexOptions(exact_min_rows=100, exact_sqrt_factor=0.0)
    index = HnswIndex.build(vectors, metric, PARAMS, options)
    for fraction in (0.5, 0.1, 0.03):
        allowed = np.random.default_rng(26).random(5000) < fraction
        assert not index.searches_exactly(int(allowed.sum()), 10)
        got = index.search(queries, 10, allowed=allowed, params=SearchParams(ef=64))
        assert_well_formed(got, metric, 10, 50)
        assert (got.rows >= 0).all() and allowed[got.rows].all()
        truth, _ = reference_topk(metric, queries, vectors, 10, allowed=allowed)
        assert recall(got.rows, truth) >= 0.95


def test_ef_below_topk_is_raised_to_topk(index_5k: HnswIndex) -> None:
    queries = gaussian(5, 16, seed=27)
    got = index_5k.search(queries, 100, params=SearchParams(ef=1))
    assert_well_formed(got, Metric.L2, 100, 5)
    assert (got.rows >= 0).all()


def test_a_higher_ef_does_not_lower_recall(index_5k: HnswIndex) -> None:
    vectors, queries = gaussian(5000, 16, seed=21), gaussian(100, 16, seed=28)
    truth, _ = reference_topk(Metric.L2, queries, vectors, 10)
    low = recall(index_5k.search(queries, 10, params=SearchParams(ef=10)).rows, truth)
    high = recall(index_5k.search(queries, 10, params=SearchParams(ef=400)).rows, truth)
    assert high >= low and high >= 0.99


def test_concurrent_searches_with_different_ef_agree_with_sequential_ones(index_5k: HnswIndex) -> None:
    queries = gaussian(40, 16, seed=29)
    efs = [16, 400] * 8
    sequential = [index_5k.search(queries, 10, params=SearchParams(ef=ef)).rows for ef in efs]
    with ThreadPoolExecutor(max_workers=4) as pool:
        parallel = list(pool.map(lambda ef: index_5k.search(queries, 10, params=SearchParams(ef=ef)).rows, efs))
    for a, b in zip(sequential, parallel, strict=True):
        np.testing.assert_array_equal(a, b)


def test_an_empty_segment_has_no_graph_and_finds_nothing() -> None:
    empty = np.empty((0, 8), np.float32)
    index = HnswIndex.build(empty, Metric.IP, PARAMS)
    assert index.num_rows == 0 and index.dim == 8
    assert index.serialize() is None
    got = index.search(gaussian(3, 8, seed=30), 5)
    assert (got.rows == -1).all() and (got.distances == -np.inf).all()
    restored = HnswIndex.restore(None, empty, Metric.IP, PARAMS)
    assert (restored.search(gaussian(1, 8, seed=31), 2).rows == -1).all()
    with pytest.raises(ValueError, match="needs its graph"):
        HnswIndex.restore(None, gaussian(5, 8, seed=32), Metric.IP, PARAMS)


def test_a_one_row_segment_works() -> None:
    vectors = gaussian(1, 8, seed=33)
    index = HnswIndex.build(vectors, Metric.L2, PARAMS, IndexOptions(exact_min_rows=0, exact_sqrt_factor=0.0))
    got = index.search(vectors, 3)
    assert got.rows[0].tolist() == [0, -1, -1]
    assert got.distances[0, 0] == pytest.approx(0.0, abs=1e-5)


def test_restore_refuses_a_graph_of_other_build_params() -> None:
    vectors = gaussian(300, 8, seed=34)
    data = HnswIndex.build(vectors, Metric.L2, PARAMS).serialize()
    with pytest.raises(ValueError, match="M=16"):
        HnswIndex.restore(data, vectors, Metric.L2, HnswParams(m=8, ef_construction=100))
    with pytest.raises(ValueError, match="rows"):
        HnswIndex.restore(data, vectors[:200], Metric.L2, PARAMS)


def test_hnswlib_spaces_and_distance_conversion() -> None:
    assert [hnsw_space(m) for m in METRICS] == ["l2", "ip", "cosine"]
    raw = np.array([0.0, 0.25, 1.0, 2.0], np.float32)
    np.testing.assert_array_equal(to_milvus_distance(Metric.L2, raw), raw)
    np.testing.assert_array_equal(to_milvus_distance(Metric.IP, raw), [1.0, 0.75, 0.0, -1.0])
    np.testing.assert_array_equal(to_milvus_distance(Metric.COSINE, raw), [1.0, 0.75, 0.0, -1.0])
    assert to_milvus_distance(Metric.IP, raw).dtype == np.float32


def test_a_multi_threaded_build_is_searchable() -> None:
    vectors, queries = gaussian(2000, 16, seed=35), gaussian(20, 16, seed=36)
    index = HnswIndex.build(vectors, Metric.COSINE, PARAMS, IndexOptions(threads=2))
    truth, _ = reference_topk(Metric.COSINE, queries, vectors, 10)
    assert recall(index.search(queries, 10, params=SearchParams(ef=200)).rows, truth) >= 0.99


class _RecordingGraph:
    """hnswlib's index, recording the ``num_threads`` of each ``knn_query``."""

    def __init__(self, graph: object) -> None:
        self._graph = graph
        self.threads: list[int] = []

    def knn_query(self, *args: object, num_threads: int, **kwargs: object) -> object:
        self.threads.append(num_threads)
        return self._graph.knn_query(*args, num_threads=num_threads, **kwargs)  # type: ignore[attr-defined]

    def __getattr__(self, name: str) -> object:
        return getattr(self._graph, name)


def test_an_unfiltered_walk_splits_its_queries_among_the_threads_it_is_given(index_5k: HnswIndex) -> None:
    queries = gaussian(64, 16, seed=31)
    one = index_5k.search(queries, 10, params=SearchParams(ef=64))
    recording = _RecordingGraph(index_5k._graph)
    index_5k._graph = recording  # type: ignore[assignment]
    try:
        two = index_5k.search(queries, 10, params=SearchParams(ef=64), threads=2)
    finally:
        index_5k._graph = recording._graph  # type: ignore[assignment]
    assert recording.threads == [2]
    # Each query's walk is the same whichever thread runs it.
    np.testing.assert_array_equal(two.rows, one.rows)
    np.testing.assert_array_equal(two.distances, one.distances)


def test_a_filtered_walk_keeps_to_one_thread() -> None:
    # Every thread would take the GIL to call the filter for each row it visits.
    options = IndexOptions(exact_min_rows=0, exact_sqrt_factor=0.0)  # always walk
    index = HnswIndex.build(gaussian(2000, 16, seed=32), Metric.L2, PARAMS, options)
    recording = _RecordingGraph(index._graph)
    index._graph = recording  # type: ignore[assignment]
    allowed = np.random.default_rng(33).random(2000) < 0.5
    got = index.search(gaussian(64, 16, seed=34), 10, allowed=allowed, threads=2)
    assert recording.threads == [1]
    assert allowed[got.rows[got.rows >= 0]].all()
