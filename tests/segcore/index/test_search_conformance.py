"""Every index kind answers the same contract: exact top-k on small data, filters, ranges, ties, edges.

Parametrised over the backends: FLAT, HNSW walking its graph (the exact
fallback switched off, a high ``ef``), and HNSW with the default options
(small sets then take the exact path). The faiss kinds run here in
configurations whose answer is exact: IVF_FLAT probing every list; SCANN,
IVF_RABITQ and HNSW_SQ/PQ/PRQ re-scoring so many candidates with the raw
vectors (``reorder_k``, ``refine_k``; FP32 refine) that every row is one,
with their exact fallbacks switched off. Their approximate answers are
tested in ``test_faiss_kinds.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np
import pytest

from segcore.index.base import NO_PARAMS, IndexHits, SearchParams, VectorIndex
from segcore.index.factory import IndexSpec, build_index
from segcore.index.options import IndexOptions
from segcore.index.spec import IndexKind
from segcore.segments.metric import Metric
from tests.segcore.index.reference import (
    METRICS,
    assert_matches_reference,
    assert_well_formed,
    gaussian,
    reference_distances,
    reference_topk,
)

GRAPH_ONLY = IndexOptions(exact_min_rows=0, exact_sqrt_factor=0.0)
HIGH_EF = 500

Builder = Callable[[Metric, np.ndarray], VectorIndex]


def _flat(metric: Metric, vectors: np.ndarray) -> VectorIndex:
    return build_index(IndexSpec(index_type="FLAT", metric=metric.value), vectors)


def _hnsw_graph(metric: Metric, vectors: np.ndarray) -> VectorIndex:
    return build_index(IndexSpec(index_type="HNSW", metric=metric.value), vectors, options=GRAPH_ONLY)


def _autoindex(metric: Metric, vectors: np.ndarray) -> VectorIndex:
    return build_index(IndexSpec(index_type="autoindex", metric=metric.value), vectors)


class Tuned:
    """An index whose searches always carry ``overrides`` (the parameters that make it exhaustive)."""

    def __init__(self, index: VectorIndex, **overrides: int | float) -> None:
        self._index = index
        self._overrides = overrides

    @property
    def kind(self) -> IndexKind:
        return self._index.kind

    @property
    def metric(self) -> Metric:
        return self._index.metric

    @property
    def dim(self) -> int:
        return self._index.dim

    @property
    def num_rows(self) -> int:
        return self._index.num_rows

    def serialize(self) -> bytes | None:
        return self._index.serialize()

    def search(
        self,
        queries: np.ndarray,
        topk: int,
        *,
        allowed: np.ndarray | None = None,
        params: SearchParams = NO_PARAMS,
        threads: int = 1,
    ) -> IndexHits:
        tuned = replace(params, **self._overrides)  # type: ignore[arg-type]
        return self._index.search(queries, topk, allowed=allowed, params=tuned, threads=threads)


def _faiss(index_type: str, **params: object) -> Builder:
    """A faiss kind over 8 lists (every one probed) or a graph; ``m="quarter"``: a subquantizer
    per 4 dimensions (or one, for fewer)."""

    def build(metric: Metric, vectors: np.ndarray) -> VectorIndex:
        given = {"nlist": 8, **params}
        if given.get("m") == "quarter":
            given["m"] = max(1, vectors.shape[1] // 4)
        spec = IndexSpec(index_type=index_type, metric=metric.value, params=given)  # type: ignore[arg-type]
        options = GRAPH_ONLY
        return Tuned(build_index(spec, vectors, options=options), nprobe=8, reorder_k=100_000, refine_k=1000.0)

    return build


BACKENDS: dict[str, Builder] = {
    "flat": _flat,
    "hnsw-graph": _hnsw_graph,
    "autoindex": _autoindex,
    "ivf_flat": _faiss("IVF_FLAT"),
    "scann-raw": _faiss("SCANN", sub_dim=1),
    "ivf_rabitq-fp32": _faiss("IVF_RABITQ", refine=True),
    "hnsw_sq-fp32": _faiss("HNSW_SQ", M=16, efConstruction=100, refine=True, refine_type="FP32"),
    "hnsw_pq-fp32": _faiss("HNSW_PQ", M=16, efConstruction=100, m="quarter", refine=True),
    "hnsw_prq-fp32": _faiss("HNSW_PRQ", M=16, efConstruction=100, m=1, nrq=1, nbits=8, refine=True),
}


@pytest.fixture(params=list(BACKENDS))
def build(request: pytest.FixtureRequest) -> Builder:
    return BACKENDS[request.param]


@pytest.mark.parametrize("metric", METRICS, ids=lambda m: m.value)
def test_small_sets_give_the_exact_top_k(build: Builder, metric: Metric) -> None:
    vectors, queries = gaussian(500, 16, seed=1), gaussian(20, 16, seed=2)
    index = build(metric, vectors)
    got = index.search(queries, 10, params=SearchParams(ef=HIGH_EF))
    assert_well_formed(got, metric, 10, 20)
    assert_matches_reference(got, *reference_topk(metric, queries, vectors, 10))


@pytest.mark.parametrize("metric", METRICS, ids=lambda m: m.value)
@pytest.mark.parametrize("fraction", [0.6, 0.2])
def test_only_allowed_rows_are_returned_and_the_filtered_top_k_is_exact(
    build: Builder, metric: Metric, fraction: float
) -> None:
    vectors, queries = gaussian(500, 16, seed=3), gaussian(20, 16, seed=4)
    allowed = np.random.default_rng(5).random(500) < fraction
    index = build(metric, vectors)
    got = index.search(queries, 10, allowed=allowed, params=SearchParams(ef=HIGH_EF))
    assert allowed[got.rows[got.rows >= 0]].all()
    assert_matches_reference(got, *reference_topk(metric, queries, vectors, 10, allowed=allowed))


@pytest.mark.parametrize("metric", METRICS, ids=lambda m: m.value)
def test_fewer_allowed_rows_than_topk_pad_with_minus_one(build: Builder, metric: Metric) -> None:
    vectors, queries = gaussian(300, 8, seed=6), gaussian(3, 8, seed=7)
    allowed = np.zeros(300, dtype=bool)
    allowed[[5, 77, 123]] = True
    got = build(metric, vectors).search(queries, 10, allowed=allowed)
    assert_well_formed(got, metric, 10, 3)
    assert (np.sort(got.rows[:, :3], axis=1) == [5, 77, 123]).all()
    assert (got.rows[:, 3:] == -1).all()
    assert_matches_reference(got, *reference_topk(metric, queries, vectors, 10, allowed=allowed))


def test_nothing_allowed_finds_nothing(build: Builder) -> None:
    vectors = gaussian(100, 8, seed=8)
    got = build(Metric.L2, vectors).search(vectors[:2], 5, allowed=np.zeros(100, dtype=bool))
    assert (got.rows == -1).all() and (got.distances == np.inf).all()


def test_topk_above_the_row_count_returns_every_row(build: Builder) -> None:
    vectors = gaussian(30, 8, seed=9)
    got = build(Metric.IP, vectors).search(vectors[:2], 50)
    assert_well_formed(got, Metric.IP, 50, 2)
    assert (got.rows[:, :30] >= 0).all() and (got.rows[:, 30:] == -1).all()
    assert (got.distances[:, 30:] == -np.inf).all()


def test_no_queries_give_empty_hits(build: Builder) -> None:
    got = build(Metric.L2, gaussian(50, 8, seed=10)).search(np.empty((0, 8), np.float32), 5)
    assert got.rows.shape == (0, 5) and got.distances.shape == (0, 5)


def test_equal_distances_rank_by_the_smaller_row(build: Builder) -> None:
    # 100 distinct vectors, each stored three times: every hit is a three-way tie.
    distinct = gaussian(100, 8, seed=11)
    vectors = np.concatenate([distinct, distinct, distinct])
    got = build(Metric.L2, vectors).search(distinct[:5], 9, params=SearchParams(ef=HIGH_EF))
    assert_well_formed(got, Metric.L2, 9, 5)
    for q in range(5):
        assert got.rows[q, :3].tolist() == [q, q + 100, q + 200]


def test_a_zero_vector_scores_zero_under_cosine(build: Builder) -> None:
    vectors = gaussian(60, 4, seed=12)
    vectors[7] = 0.0
    index = build(Metric.COSINE, vectors)
    got = index.search(np.zeros((1, 4), np.float32), 5)
    assert (got.distances[0] == 0.0).all()
    got = index.search(vectors[:1], 60)
    assert got.distances[0][got.rows[0] == 7][0] == pytest.approx(0.0, abs=1e-6)


# Range search: exact boundaries on hand-made data.


def test_l2_range_keeps_range_filter_inclusive_and_radius_exclusive(build: Builder) -> None:
    vectors = np.arange(10, dtype=np.float32)[:, None]  # squared distance to 0 is i * i
    got = build(Metric.L2, vectors).search(np.zeros((1, 1), np.float32), 10, params=SearchParams(radius=25.0))
    assert got.rows[0].tolist() == [0, 1, 2, 3, 4, -1, -1, -1, -1, -1]
    got = build(Metric.L2, vectors).search(
        np.zeros((1, 1), np.float32), 10, params=SearchParams(radius=25.0, range_filter=4.0)
    )
    assert got.rows[0].tolist()[:4] == [2, 3, 4, -1]
    assert got.distances[0, :3].tolist() == [4.0, 9.0, 16.0]


def test_ip_range_keeps_radius_exclusive_and_range_filter_inclusive(build: Builder) -> None:
    vectors = np.arange(10, dtype=np.float32)[:, None]  # inner product with 1 is i
    index = build(Metric.IP, vectors)
    got = index.search(np.ones((1, 1), np.float32), 10, params=SearchParams(radius=2.0, range_filter=5.0))
    assert got.rows[0].tolist()[:4] == [5, 4, 3, -1]
    got = index.search(np.ones((1, 1), np.float32), 2, params=SearchParams(radius=2.0))
    assert got.rows[0].tolist() == [9, 8]  # still at most topk, best first


def test_cosine_range(build: Builder) -> None:
    s = np.float32(np.sqrt(0.5))
    vectors = np.array([[1, 0], [0, 1], [-1, 0], [s, s], [2, 0], [0, -3]], dtype=np.float32)
    got = build(Metric.COSINE, vectors).search(
        np.array([[1, 0]], np.float32), 6, params=SearchParams(radius=0.0, range_filter=1.0)
    )
    # cos: 1, 0, -1, 0.707, 1, 0 -> (0, 1] keeps rows 0, 4 (ties by row) and 3.
    assert got.rows[0].tolist()[:4] == [0, 4, 3, -1]


@pytest.mark.parametrize("metric", METRICS, ids=lambda m: m.value)
def test_range_search_matches_the_reference(build: Builder, metric: Metric) -> None:
    vectors, queries = gaussian(2000, 16, seed=13), gaussian(10, 16, seed=14)
    # A band holding the 21st to the 150th best rows of the first query, its
    # edges halfway between two rows (so float32 rounding cannot move a row across).
    ordered = np.sort(reference_distances(metric, queries[:1], vectors)[0])
    if metric.larger_is_better:
        ordered = ordered[::-1]
    radius = float((ordered[149] + ordered[150]) / 2)
    range_filter = float((ordered[19] + ordered[20]) / 2)
    params = SearchParams(ef=HIGH_EF, radius=radius, range_filter=range_filter)
    got = build(metric, vectors).search(queries, 50, params=params)
    assert_well_formed(got, metric, 50, 10)
    want = reference_topk(metric, queries, vectors, 50, radius=radius, range_filter=range_filter)
    assert_matches_reference(got, *want)
    assert (got.rows[0] >= 0).all()  # the first query has 130 rows in the band


def test_range_search_with_a_filter_only_returns_allowed_rows(build: Builder) -> None:
    vectors, queries = gaussian(2000, 16, seed=15), gaussian(10, 16, seed=16)
    allowed = np.random.default_rng(17).random(2000) < 0.5
    params = SearchParams(ef=HIGH_EF, radius=30.0, range_filter=20.0)
    got = build(Metric.L2, vectors).search(queries, 20, allowed=allowed, params=params)
    present = got.rows >= 0
    assert present.any() and allowed[got.rows[present]].all()
    d = got.distances[present]
    assert ((d >= 20.0) & (d < 30.0)).all()
    want = reference_topk(Metric.L2, queries, vectors, 20, allowed=allowed, radius=30.0, range_filter=20.0)
    assert_matches_reference(got, *want)
