"""Each faiss kind, searched approximately: filters, ranges, the serialized round trip, edges.

The exhaustive configurations of these kinds run the shared contract in
``test_search_conformance.py``; here they search as users tune them (a few
lists probed, a small ``ef``), with the exact fallback switched off so the
faiss structure answers.
"""

from __future__ import annotations

import numpy as np
import pytest

from segcore.index.base import SearchParams
from segcore.index.factory import IndexSpec, build_index, restore_index
from segcore.index.faiss_index import FaissIndex
from segcore.index.options import IndexOptions
from segcore.index.spec import IndexKind
from segcore.segments.metric import Metric
from tests.segcore.index.reference import (
    METRICS,
    around,
    assert_well_formed,
    centres,
    gaussian,
    recall,
    reference_topk,
)

STRUCTURE_ONLY = IndexOptions(exact_min_rows=0, exact_sqrt_factor=0.0)
ROWS, DIM = 3000, 16

#: Every kind with parameters that suit 3000 x 16 rows.
KINDS: dict[str, dict[str, object]] = {
    "IVF_FLAT": {"nlist": 32},
    "IVF_SQ8": {"nlist": 32},
    "IVF_PQ": {"nlist": 32, "m": 8},
    "IVF_RABITQ": {"nlist": 32, "refine": True, "refine_type": "SQ8"},
    "SCANN": {"nlist": 32},
    "HNSW_SQ": {"M": 16, "efConstruction": 100},
    "HNSW_PQ": {"M": 16, "efConstruction": 100, "m": 8, "refine": True, "refine_type": "FP16"},
    "HNSW_PRQ": {"M": 16, "efConstruction": 100, "m": 4, "nrq": 2, "nbits": 6},
}
#: Search parameters that reach a decent recall on the clustered rows.
TUNED = SearchParams(nprobe=8, ef=64, refine_k=2.0, reorder_k=40)

_built: dict[tuple[str, Metric], FaissIndex] = {}


def _data() -> tuple[np.ndarray, np.ndarray]:
    middle = centres(50, DIM, seed=21)
    return around(middle, ROWS, spread=0.3, seed=22), around(middle, 30, spread=0.3, seed=23)


def _index(index_type: str, metric: Metric) -> FaissIndex:
    """Built once per module (PQ training takes seconds)."""
    key = (index_type, metric)
    if key not in _built:
        spec = IndexSpec(index_type=index_type, metric=metric.value, params=KINDS[index_type])  # type: ignore[arg-type]
        index = build_index(spec, _data()[0], options=STRUCTURE_ONLY)
        assert isinstance(index, FaissIndex) and index.structure is not None
        _built[key] = index
    return _built[key]


@pytest.fixture(params=list(KINDS))
def index_type(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.mark.parametrize("metric", METRICS, ids=lambda m: m.value)
def test_an_approximate_search_is_well_formed_and_finds_most_neighbours(index_type: str, metric: Metric) -> None:
    vectors, queries = _data()
    index = _index(index_type, metric)
    got = index.search(queries, 10, params=TUNED)
    assert_well_formed(got, metric, 10, len(queries))
    truth, _ = reference_topk(metric, queries, vectors, 10)
    # Far above chance (10 of 3000 rows); how close each kind comes to faiss itself is test_faiss_recall.py's.
    assert recall(got.rows, truth) >= 0.3
    assert index.kind is IndexKind(index_type)


@pytest.mark.parametrize("metric", METRICS, ids=lambda m: m.value)
def test_rows_not_allowed_are_never_returned(index_type: str, metric: Metric) -> None:
    vectors, queries = _data()
    index = _index(index_type, metric)
    allowed = np.random.default_rng(24).random(ROWS) < 0.3
    assert not index.searches_exactly(int(allowed.sum()), 10, len(queries))
    got = index.search(queries, 10, allowed=allowed, params=TUNED)
    assert_well_formed(got, metric, 10, len(queries))
    found = got.rows[got.rows >= 0]
    assert len(found) > 0.9 * got.rows.size and allowed[found].all()
    truth, _ = reference_topk(metric, queries, vectors, 10, allowed=allowed)
    assert recall(got.rows, truth) >= 0.5


def test_a_range_search_keeps_only_rows_in_range_and_finds_the_nearest_of_them(index_type: str) -> None:
    vectors, queries = _data()
    index = _index(index_type, Metric.L2)
    dist = np.sort(((queries[:, None, :] - vectors[None, :, :]) ** 2).sum(-1), axis=1)
    radius, range_filter = float(np.median(dist[:, 60])), float(np.median(dist[:, 5]))
    params = SearchParams(nprobe=8, ef=64, refine_k=2.0, reorder_k=40, radius=radius, range_filter=range_filter)
    got = index.search(queries, 20, params=params)
    assert_well_formed(got, Metric.L2, 20, len(queries))
    present = got.rows >= 0
    assert present.sum() > 0.5 * got.rows.size
    d = got.distances[present]
    assert ((d >= range_filter) & (d < radius)).all()
    want, _ = reference_topk(Metric.L2, queries, vectors, 20, radius=radius, range_filter=range_filter)
    assert recall(got.rows, want[:, :5]) >= 0.5


@pytest.mark.parametrize("metric", METRICS, ids=lambda m: m.value)
def test_a_restored_index_answers_as_the_built_one(index_type: str, metric: Metric) -> None:
    vectors, queries = _data()
    index = _index(index_type, metric)
    spec = IndexSpec(index_type=index_type, metric=metric.value, params=KINDS[index_type])  # type: ignore[arg-type]
    data = index.serialize()
    assert data is not None
    restored = restore_index(spec, vectors, data, options=STRUCTURE_ONLY)
    allowed = np.random.default_rng(25).random(ROWS) < 0.5
    for mask in (None, allowed):
        want = index.search(queries, 10, allowed=mask, params=TUNED)
        got = restored.search(queries, 10, allowed=mask, params=TUNED)
        np.testing.assert_array_equal(got.rows, want.rows)
        np.testing.assert_allclose(got.distances, want.distances, rtol=1e-6)


def test_restore_refuses_data_that_does_not_fit() -> None:
    vectors, _ = _data()
    data = _index("IVF_FLAT", Metric.L2).serialize()
    assert data is not None

    def restore(index_type: str, metric: str, params: dict[str, object], rows: np.ndarray, raw: bytes) -> None:
        spec = IndexSpec(index_type=index_type, metric=metric, params=params)  # type: ignore[arg-type]
        restore_index(spec, rows, raw)

    with pytest.raises(ValueError, match="holds a IndexIVFFlat"):
        restore("IVF_SQ8", "L2", {"nlist": 32}, vectors, data)
    with pytest.raises(ValueError, match="rows"):
        restore("IVF_FLAT", "L2", {"nlist": 32}, vectors[:-1], data)
    with pytest.raises(ValueError, match="faiss metric"):
        restore("IVF_FLAT", "IP", {"nlist": 32}, vectors, data)
    with pytest.raises(ValueError, match="lists"):
        restore("IVF_FLAT", "L2", {"nlist": 16}, vectors, data)
    with pytest.raises(ValueError, match="truncated"):
        restore("IVF_FLAT", "L2", {"nlist": 32}, vectors, data[:-10])
    with pytest.raises(ValueError, match="format"):
        restore("IVF_FLAT", "L2", {"nlist": 32}, vectors, b"x" * 64)
    with pytest.raises(ValueError, match="needs its data"):
        restore("IVF_FLAT", "L2", {"nlist": 32}, vectors, None)  # type: ignore[arg-type]


def test_nlist_and_nbits_shrink_to_the_segment_as_knowhere_does() -> None:
    vectors = gaussian(400, 8, seed=26)  # 400 // 39 = 10 lists; 256 > 400 / ... keeps 8 bits
    index = build_index(IndexSpec(index_type="IVF_PQ", metric="L2", params={"nlist": 128, "m": 2}), vectors)
    assert isinstance(index, FaissIndex)
    import faiss

    ivf = faiss.extract_index_ivf(index.structure)
    assert ivf.nlist == 10 and faiss.downcast_index(ivf).pq.nbits == 8
    small = build_index(IndexSpec(index_type="IVF_PQ", metric="L2", params={"nlist": 4, "m": 2}), vectors[:100])
    assert isinstance(small, FaissIndex)
    assert faiss.downcast_index(faiss.extract_index_ivf(small.structure)).pq.nbits == 4  # 100 < 256 rows


@pytest.mark.parametrize(("index_type", "rows"), [("IVF_FLAT", 0), ("SCANN", 15), ("IVF_PQ", 0), ("HNSW_SQ", 0)])
def test_a_segment_too_small_to_train_is_searched_exactly(index_type: str, rows: int) -> None:
    vectors = gaussian(rows, 8, seed=27)
    spec = IndexSpec(index_type=index_type, metric="L2", params={"m": 2} if index_type == "IVF_PQ" else {})
    index = build_index(spec, vectors, options=STRUCTURE_ONLY)
    assert isinstance(index, FaissIndex) and index.structure is None and index.serialize() is None
    restored = restore_index(spec, vectors, None, options=STRUCTURE_ONLY)
    queries = gaussian(3, 8, seed=28)
    got = restored.search(queries, 5)
    want_rows, _ = reference_topk(Metric.L2, queries, vectors, 5)
    np.testing.assert_array_equal(got.rows, want_rows)


def test_scann_without_raw_data_returns_its_quantized_distances() -> None:
    vectors, queries = _data()
    raw = build_index(IndexSpec(index_type="SCANN", metric="L2", params={"nlist": 32}), vectors, options=STRUCTURE_ONLY)
    codes_only = build_index(
        IndexSpec(index_type="SCANN", metric="L2", params={"nlist": 32, "with_raw_data": False}),
        vectors,
        options=STRUCTURE_ONLY,
    )
    params = SearchParams(nprobe=32, reorder_k=200)
    exact = raw.search(queries, 5, params=params)
    _, want = reference_topk(Metric.L2, queries, vectors, 5)
    np.testing.assert_allclose(exact.distances, want, rtol=1e-4, atol=1e-4)  # re-ranked: exact
    approx = codes_only.search(queries, 5, params=params)
    assert not np.allclose(approx.distances, want, rtol=1e-3)  # 4-bit PQ distances


def test_threads_are_restored_after_a_search() -> None:
    import faiss

    index = _index("IVF_FLAT", Metric.L2)
    before = faiss.omp_get_max_threads()
    index.search(_data()[1], 5, threads=1)
    index.search(_data()[1], 5, threads=2)
    assert faiss.omp_get_max_threads() == before
