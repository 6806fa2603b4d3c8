"""SPARSE_INVERTED_INDEX / SPARSE_WAND: each algorithm equal to the exact search (and to a dict
reference) at drop ratio 0, recall with drop ratios, parameters checked as Milvus, persistence."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from common.errors import InvalidArgument
from common.storage.objectstore import ObjectStore
from segcore.index.base import SearchParams
from segcore.index.factory import IndexSpec, build_index
from segcore.index.sparse_exact import SparseExactIndex
from segcore.index.sparse_inverted import BLOCK_ROWS
from segcore.index.store import load_index, save_index
from segcore.segments.metric import Metric
from segcore.segments.sparse_rows import pad_queries
from tests.segcore.segments.sparse_reference import as_dicts, random_rows, reference_topk

ALGOS = ("TAAT_NAIVE", "DAAT_WAND", "DAAT_MAXSCORE")


def spec(algo: str = "DAAT_MAXSCORE", kind: str = "SPARSE_INVERTED_INDEX", **params: object) -> IndexSpec:
    return IndexSpec(index_type=kind, metric="IP", params={"inverted_index_algo": algo, **params}, sparse=True)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    # More rows than one block, so the DAAT walks skip blocks.
    return random_rows(rng, 3 * BLOCK_ROWS + 17, vocab=2000, max_nnz=24), random_rows(rng, 12, vocab=2000, max_nnz=12)


@pytest.mark.parametrize("kind", ["SPARSE_INVERTED_INDEX", "SPARSE_WAND"])
@pytest.mark.parametrize("algo", ALGOS)
def test_every_algorithm_equals_the_exact_search(data, kind: str, algo: str) -> None:
    base, queries = data
    padded = pad_queries(queries)
    allowed = np.random.default_rng(1).random(len(base)) < 0.7
    exact = SparseExactIndex(base, Metric.IP)
    index = build_index(spec(algo, kind), base)
    for topk in (1, 10, 100):
        for mask in (None, allowed):
            want, got = exact.search(padded, topk, allowed=mask), index.search(padded, topk, allowed=mask)
            assert got.rows.tolist() == want.rows.tolist()
            assert got.distances.tobytes() == want.distances.tobytes()


def test_exact_search_equals_the_dict_reference(data) -> None:
    base, queries = data
    allowed = np.random.default_rng(2).random(len(base)) < 0.5
    hits = SparseExactIndex(base, Metric.IP).search(pad_queries(queries), 10, allowed=allowed)
    for q, query in enumerate(as_dicts(queries)):
        want = reference_topk(base, query, 10, allowed)
        got = [(int(r), float(d)) for r, d in zip(hits.rows[q], hits.distances[q], strict=True) if r >= 0]
        assert got == want


@pytest.mark.parametrize("algo", ALGOS)
def test_drop_ratios_keep_recall(data, algo: str) -> None:
    base, queries = data
    padded = pad_queries(queries)
    exact = SparseExactIndex(base, Metric.IP).search(padded, 10)
    index = build_index(spec(algo, drop_ratio_build=0.2), base)
    got = index.search(padded, 10, params=SearchParams(drop_ratio_search=0.2))
    recall = np.mean([len(set(g[g >= 0]) & set(w[w >= 0])) / max(1, len(w[w >= 0])) for g, w in zip(got.rows, exact.rows, strict=True)])
    # The reference: the same drops applied by TAAT (which prunes nothing else).
    taat = build_index(spec("TAAT_NAIVE", drop_ratio_build=0.2), base)
    ref = taat.search(padded, 10, params=SearchParams(drop_ratio_search=0.2))
    ref_recall = np.mean([len(set(g[g >= 0]) & set(w[w >= 0])) / max(1, len(w[w >= 0])) for g, w in zip(ref.rows, exact.rows, strict=True)])
    assert recall >= ref_recall - 0.02
    assert recall > 0.5


def test_range_search_keeps_radius_to_range_filter(data) -> None:
    base, queries = data
    padded = pad_queries(queries)
    params = SearchParams(radius=0.3, range_filter=0.6)
    for algo in ALGOS:
        hits = build_index(spec(algo), base).search(padded, 50, params=params)
        want = SparseExactIndex(base, Metric.IP).search(padded, 50, params=params)
        assert hits.rows.tolist() == want.rows.tolist()
        d = hits.distances[hits.rows >= 0]
        assert len(d) and ((d > 0.3) & (d <= 0.6)).all()


@pytest.mark.parametrize(
    ("index_spec", "message"),
    [
        (dict(index_type="SPARSE_INVERTED_INDEX", metric="L2"), "metric type L2 not found or not supported, supported: [IP BM25]"),
        (dict(index_type="HNSW", metric="IP"), "data type SparseFloatVector can't build with this index HNSW"),
        (dict(index_type="SPARSE_WAND", metric="IP", params={"drop_ratio_build": 1.0}), "param 'drop_ratio_build' (1.0) should be in range [0.0, 1.0)"),
        (dict(index_type="SPARSE_WAND", metric="IP", params={"inverted_index_algo": "BMW"}), "sparse inverted index algo BMW not found"),
    ],
)
def test_bad_specs_are_refused_with_milvus_messages(index_spec: dict, message: str) -> None:
    with pytest.raises(InvalidArgument) as err:
        IndexSpec(sparse=True, **index_spec)
    assert message in str(err.value)


def test_a_sparse_kind_on_a_float_field_is_refused() -> None:
    with pytest.raises(InvalidArgument, match="data type FloatVector can't build with this index SPARSE_WAND"):
        IndexSpec(index_type="SPARSE_WAND", metric="IP")


def test_autoindex_builds_maxscore_inverted_index() -> None:
    s = IndexSpec(index_type="AUTOINDEX", metric="IP", params={"inverted_index_algo": "TAAT_NAIVE"}, sparse=True)
    assert s.canonical() == {
        "index_type": "SPARSE_INVERTED_INDEX",
        "metric": "IP",
        "params": {"inverted_index_algo": "DAAT_MAXSCORE", "drop_ratio_build": "0.0"},
    }
    assert IndexSpec(index_type="SPARSE_WAND", metric="ip", sparse=True).sparse_params.algo.value == "DAAT_WAND"


@pytest.mark.parametrize(("params", "message"), [
    (SearchParams(drop_ratio_search=1.0), "drop_ratio_search"),
    (SearchParams(drop_ratio_search=-0.1), "drop_ratio_search"),
    (SearchParams(dim_max_score_ratio=2.0), "dim_max_score_ratio"),
])
def test_bad_search_params_are_refused(data, params: SearchParams, message: str) -> None:
    base, queries = data
    with pytest.raises(InvalidArgument, match=message):
        build_index(spec(), base).search(pad_queries(queries), 3, params=params)


@pytest.mark.parametrize("algo", ALGOS)
def test_the_index_round_trips_through_the_store(tmp_path: Path, data, algo: str) -> None:
    base, queries = data
    (tmp_path / "bucket").mkdir()
    store = ObjectStore.from_uri((tmp_path / "bucket").as_uri())
    s = spec(algo, drop_ratio_build=0.1)
    built = build_index(s, base)
    save_index(store, 1, 2, 3, 4, s, built, base)
    loaded = load_index(store, 1, 2, 3, 4, s, base)
    assert loaded is not None and loaded.kind == built.kind
    padded = pad_queries(queries)
    a, b = built.search(padded, 20), loaded.search(padded, 20)
    assert a.rows.tolist() == b.rows.tolist() and a.distances.tobytes() == b.distances.tobytes()
    # Another segment's rows do not fit the stored index: rebuilt, not misused.
    assert load_index(store, 1, 2, 3, 4, s, base.slice_rows(0, 10)) is None
