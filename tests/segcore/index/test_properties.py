"""Property tests: FLAT equals the reference exactly; HNSW's graph walk keeps every invariant.

Data: small integer vectors for L2 and IP (exact arithmetic, many exact ties,
so tie-breaking is checked too) and Gaussian ones for COSINE (whose float32
rounding would break exact ties between parallel vectors). Range edges sit
halfway between two distinct distances.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from segcore.index.base import IndexHits, SearchParams
from segcore.index.factory import IndexSpec, build_index
from segcore.index.options import IndexOptions
from segcore.segments.metric import Metric
from tests.segcore.index.reference import (
    METRICS,
    assert_matches_reference,
    assert_well_formed,
    reference_distances,
    reference_topk,
)

GRAPH_ONLY = IndexOptions(exact_min_rows=0, exact_sqrt_factor=0.0)


@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    metric: Metric
    vectors: np.ndarray
    queries: np.ndarray
    topk: int
    allowed: np.ndarray | None
    params: SearchParams


@st.composite
def cases(draw: st.DrawFn) -> Case:
    metric = draw(st.sampled_from(METRICS))
    n = draw(st.integers(1, 300))
    # COSINE needs two dimensions at least: in one, every similarity is +-1 up to rounding.
    dim = draw(st.integers(2 if metric is Metric.COSINE else 1, 8))
    nq = draw(st.integers(1, 4))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if metric is Metric.COSINE:
        vectors = rng.standard_normal((n, dim)).astype(np.float32)
        queries = rng.standard_normal((nq, dim)).astype(np.float32)
    else:
        vectors = rng.integers(-3, 4, (n, dim)).astype(np.float32)
        queries = rng.integers(-3, 4, (nq, dim)).astype(np.float32)
    density = draw(st.sampled_from([None, 0.9, 0.5, 0.1]))
    allowed = None if density is None else rng.random(n) < density
    params = SearchParams(ef=draw(st.sampled_from([None, 16, 200])))
    if draw(st.booleans()):
        params = _range(metric, reference_distances(metric, queries, vectors), params.ef, draw)
    return Case(
        metric=metric, vectors=vectors, queries=queries, topk=draw(st.integers(1, 20)), allowed=allowed, params=params
    )


def _range(metric: Metric, dist: np.ndarray, ef: int | None, draw: st.DrawFn) -> SearchParams:
    """Radius (and maybe a range filter) halfway between distinct distances, worst edge first."""
    values = np.unique(dist)  # ascending
    edges = (values[:-1] + values[1:]) / 2 if len(values) > 1 else values - 0.5
    if metric.larger_is_better:
        edges = edges[::-1]  # worst (smallest similarity) last
    a, b = sorted(draw(st.lists(st.integers(0, len(edges) - 1), min_size=2, max_size=2)))
    radius = float(edges[b])
    if a == b or draw(st.booleans()):
        return SearchParams(ef=ef, radius=radius)
    return SearchParams(ef=ef, radius=radius, range_filter=float(edges[a]))


def _reference(case: Case) -> tuple[np.ndarray, np.ndarray]:
    return reference_topk(
        case.metric,
        case.queries,
        case.vectors,
        case.topk,
        allowed=case.allowed,
        radius=case.params.radius,
        range_filter=case.params.range_filter,
    )


@settings(max_examples=150, deadline=None)
@given(cases())
def test_flat_equals_the_reference(case: Case) -> None:
    index = build_index(IndexSpec(index_type="FLAT", metric=case.metric.value), case.vectors)
    got = index.search(case.queries, case.topk, allowed=case.allowed, params=case.params)
    assert_well_formed(got, case.metric, case.topk, len(case.queries))
    assert_matches_reference(got, *_reference(case))


@settings(max_examples=100, deadline=None)
@given(cases())
def test_the_hnsw_walk_keeps_every_invariant(case: Case) -> None:
    spec = IndexSpec(index_type="HNSW", metric=case.metric.value, params={"M": 4, "efConstruction": 32})
    index = build_index(spec, case.vectors, options=GRAPH_ONLY)
    got = index.search(case.queries, case.topk, allowed=case.allowed, params=case.params)
    assert_well_formed(got, case.metric, case.topk, len(case.queries))
    _assert_true_and_allowed(case, got)
    # Never more than the reference finds; the same count whenever the reference is short.
    want_rows, _ = _reference(case)
    want = (want_rows >= 0).sum(axis=1)
    found = (got.rows >= 0).sum(axis=1)
    assert (found <= want).all()


def _assert_true_and_allowed(case: Case, got: IndexHits) -> None:
    """Each hit is allowed, in range, and carries its row's true distance."""
    dist = reference_distances(case.metric, case.queries, case.vectors)
    for q in range(len(case.queries)):
        rows = got.rows[q][got.rows[q] >= 0]
        if case.allowed is not None:
            assert case.allowed[rows].all()
        np.testing.assert_allclose(got.distances[q, : len(rows)], dist[q, rows], rtol=1e-4, atol=1e-4)
        assert case.params.in_range(case.metric, dist[q, rows]).all()
