"""DISKANN: diskannpy's static disk index built, searched, filtered, range-searched and stored as Strata's index."""

from __future__ import annotations

import gc
import os
from pathlib import Path
from typing import Any

import diskannpy as diskannpy_module
import numpy as np
import pytest

from common.errors import InvalidArgument
from common.storage.objectstore import ObjectStore
from segcore.index.base import SearchParams
from segcore.index.diskann_index import DiskannIndex
from segcore.index.factory import IndexSpec, build_index, restore_index
from segcore.index.options import IndexOptions
from segcore.index.spec import IndexKind
from segcore.index.store import load_index, save_index

# diskannpy's stubs type the arrays' dtype as a type of a type: used untyped.
diskannpy: Any = diskannpy_module

ROWS, DIM, K = 4000, 32, 10
#: The graph is always walked (no exact fallback for few allowed rows).
WALK = IndexOptions(threads=2, exact_min_rows=0, exact_sqrt_factor=0.0)


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    centres = rng.standard_normal((40, DIM)).astype(np.float32)
    rows = centres[rng.integers(0, 40, ROWS)] + 0.3 * rng.standard_normal((ROWS, DIM)).astype(np.float32)
    queries = centres[rng.integers(0, 40, 300)] + 0.3 * rng.standard_normal((300, DIM)).astype(np.float32)
    return rows.astype(np.float32), queries.astype(np.float32)


def _spec(metric: str = "L2", **params: str | int | float) -> IndexSpec:
    return IndexSpec(index_type="DISKANN", metric=metric, params={"max_degree": 24, "search_list_size": 60, **params})


def _flat(metric: str) -> IndexSpec:
    return IndexSpec(index_type="FLAT", metric=metric)


def _recall(found: np.ndarray, truth: np.ndarray) -> float:
    return float(np.mean([len(set(f[f >= 0].tolist()) & set(t.tolist())) / K for f, t in zip(found, truth, strict=True)]))


@pytest.mark.parametrize("metric", ["L2", "IP", "COSINE"])
def test_recall_is_diskannpys_with_the_same_parameters(
    data: tuple[np.ndarray, np.ndarray], metric: str, tmp_path: Path
) -> None:
    rows, queries = data
    index = build_index(_spec(metric), rows, options=WALK)
    assert isinstance(index, DiskannIndex) and index.kind is IndexKind.DISKANN and index.directory
    truth = build_index(_flat(metric), rows).search(queries, K).rows
    # diskannpy used directly, the same graph parameters and PQ budget (COSINE as unit vectors under L2).
    unit = metric == "COSINE"
    base = rows / np.linalg.norm(rows, axis=1, keepdims=True) if unit else rows
    probe = queries / np.linalg.norm(queries, axis=1, keepdims=True) if unit else queries
    native_metric = "mips" if metric == "IP" else "l2"
    diskannpy.build_disk_index(
        data=np.ascontiguousarray(base, dtype=np.float32), distance_metric=native_metric,
        index_directory=str(tmp_path), complexity=60, graph_degree=24,
        search_memory_maximum=0.125 * rows.nbytes / 2**30, build_memory_maximum=1.0, num_threads=2,
    )
    direct = diskannpy.StaticDiskIndex(index_directory=str(tmp_path), num_threads=2, num_nodes_to_cache=0)
    # Two builds link different graphs (DiskANN's parallel build and PQ training differ run to run): at a
    # search_list near topk their recalls differ by chance; 300 queries keep that well inside 0.02.
    for search_list in (16, 32, 64):
        ours = _recall(index.search(queries, K, params=SearchParams(search_list=search_list), threads=2).rows, truth)
        ids, _ = direct.batch_search(np.ascontiguousarray(probe, dtype=np.float32), K, search_list, 2, 8)
        theirs = _recall(ids.astype(np.int64), truth)
        assert abs(ours - theirs) <= 0.02, (search_list, ours, theirs)
    assert ours >= 0.9


@pytest.mark.parametrize("metric", ["L2", "IP", "COSINE"])
def test_distances_are_milvus_and_exact(data: tuple[np.ndarray, np.ndarray], metric: str) -> None:
    rows, queries = data
    hits = build_index(_spec(metric), rows, options=WALK).search(queries, K, params=SearchParams(search_list=80))
    exact = build_index(_flat(metric), rows).search(queries, K)
    np.testing.assert_allclose(hits.distances[:, 0], exact.distances[:, 0], rtol=1e-4, atol=1e-4)
    order = -hits.distances if metric != "L2" else hits.distances
    assert (np.diff(order, axis=1) >= 0).all()  # best first


def test_a_filtered_search_returns_only_allowed_rows_with_good_recall(data: tuple[np.ndarray, np.ndarray]) -> None:
    rows, queries = data
    index = build_index(_spec(), rows, options=WALK)
    for share in (0.5, 0.1, 0.01):
        allowed = np.random.default_rng(3).random(ROWS) < share
        hits = index.search(queries, K, allowed=allowed, params=SearchParams(search_list=40))
        found = hits.rows[hits.rows >= 0]
        assert allowed[found].all()
        truth = build_index(_flat("L2"), rows).search(queries, K, allowed=allowed).rows
        assert _recall(hits.rows, truth) >= 0.9, share


def test_a_range_search_keeps_the_range(data: tuple[np.ndarray, np.ndarray]) -> None:
    rows, queries = data
    exact = build_index(_flat("L2"), rows).search(queries, 50).distances
    radius = float(np.median(exact[:, 20]))
    params = SearchParams(radius=radius, range_filter=float(np.median(exact[:, 2])), search_list=40)
    hits = build_index(_spec(), rows, options=WALK).search(queries, 30, params=params)
    truth = build_index(_flat("L2"), rows).search(queries, 30, params=params)
    kept = hits.distances[hits.rows >= 0]
    assert ((kept < params.radius) & (kept >= params.range_filter)).all()
    assert (hits.rows >= 0).sum() >= 0.9 * (truth.rows >= 0).sum() > 0


def test_search_list_below_topk_is_refused_with_knowheres_words(data: tuple[np.ndarray, np.ndarray]) -> None:
    rows, queries = data
    index = build_index(_spec(), rows, options=WALK)
    with pytest.raises(InvalidArgument, match=r"search_list_size\(5\) should be larger than k\(10\)"):
        index.search(queries, K, params=SearchParams(search_list=5))


def test_the_stored_index_round_trips_and_its_files_stay_on_disk(
    data: tuple[np.ndarray, np.ndarray], tmp_path: Path
) -> None:
    rows, queries = data
    store = ObjectStore.from_uri((tmp_path / "store").as_uri())
    spec = _spec("COSINE")
    options = IndexOptions(threads=2, disk_dir=str(tmp_path / "local"))
    built = build_index(spec, rows, options=options)
    assert isinstance(built, DiskannIndex)
    save_index(store, 1, 2, 3, 101, spec, built, rows)
    assert [f.path.rsplit("/", 1)[-1].split("-")[0] for f in store.list("index_files/1/2/3")] == ["diskann", "meta.json"]
    loaded = load_index(store, 1, 2, 3, 101, spec, rows, options=options)
    assert isinstance(loaded, DiskannIndex) and loaded.directory != built.directory
    assert os.path.getsize(os.path.join(loaded.directory, "ann_disk.index")) > rows.nbytes  # vectors + graph
    params = SearchParams(search_list=30)
    np.testing.assert_array_equal(loaded.search(queries, K, params=params).rows,
                                  built.search(queries, K, params=params).rows)
    # Another spec's parameters do not load: rebuilt, never served as the other index.
    assert load_index(store, 1, 2, 3, 101, _spec("COSINE", max_degree=30), rows, options=options) is None
    directory = loaded.directory
    del loaded
    gc.collect()
    assert not os.path.exists(directory)


def test_corrupt_or_foreign_data_does_not_load(data: tuple[np.ndarray, np.ndarray]) -> None:
    rows, _ = data
    blob = build_index(_spec(), rows).serialize()
    assert blob is not None
    with pytest.raises(ValueError, match="truncated"):
        restore_index(_spec(), rows, blob[:-10])
    with pytest.raises(ValueError, match="expected"):
        restore_index(_spec("IP"), rows, blob)
    with pytest.raises(ValueError, match="expected"):
        restore_index(_spec(), rows[:100], blob)


def test_a_tiny_segment_has_no_disk_index_and_is_searched_exactly() -> None:
    rows = np.random.default_rng(1).standard_normal((5, DIM)).astype(np.float32)
    index = build_index(_spec(), rows)
    assert index.serialize() is None
    hits = index.search(rows[:2], 3)
    assert hits.rows[:, 0].tolist() == [0, 1]
    assert restore_index(_spec(), rows, None).search(rows[:2], 3).rows[:, 0].tolist() == [0, 1]


@pytest.mark.parametrize(
    ("params", "words"),
    [
        ({"max_degree": 0}, "max_degree must be in [1, 512], got 0"),
        ({"max_degree": 513}, "max_degree must be in [1, 512], got 513"),
        ({"search_list_size": 0}, "search_list_size must be in [1, 2147483647], got 0"),
        ({"pq_code_budget_gb_ratio": 0}, "pq_code_budget_gb_ratio must be in (0, 0.25], got 0.0"),
        ({"pq_code_budget_gb_ratio": "0.5"}, "pq_code_budget_gb_ratio must be in (0, 0.25], got 0.5"),
        ({"pq_code_budget_gb_ratio": "x"}, "pq_code_budget_gb_ratio must be a number in (0, 0.25], got 'x'"),
        ({"search_cache_budget_gb_ratio": 0.3}, "search_cache_budget_gb_ratio must be in [0, 0.3), got 0.3"),
        ({"num_build_thread_ratio": 0}, "num_build_thread_ratio must be in (0, 1.0], got 0.0"),
    ],
)
def test_bad_build_params_are_refused_naming_them(params: dict[str, object], words: str) -> None:
    with pytest.raises(InvalidArgument) as err:
        IndexSpec(index_type="DISKANN", metric="L2", params=params)  # type: ignore[arg-type]
    assert words in str(err.value)


def test_defaults_are_milvus_and_binary_vectors_are_refused() -> None:
    spec = IndexSpec(index_type="diskann", metric="IP", params={"search_list_size": "80"})
    assert spec.canonical() == {
        "index_type": "DISKANN",
        "metric": "IP",
        "params": {"max_degree": 56, "search_list_size": 80, "pq_code_budget_gb_ratio": "0.125",
                   "search_cache_budget_gb_ratio": "0.1"},
    }
    with pytest.raises(InvalidArgument, match="data type BinaryVector can't build with this index DISKANN"):
        IndexSpec(index_type="DISKANN", metric="HAMMING", binary=True)


@pytest.mark.parametrize("element", [np.float16, np.uint16])
def test_narrow_rows_are_indexed_by_their_values(data: tuple[np.ndarray, np.ndarray], element: type) -> None:
    # FLOAT16 rows, and BFLOAT16 rows held as their uint16 bits: the index is the one over their float32 values.
    from common.narrow_vectors import to_float32

    rows, queries = data
    if element is np.uint16:
        narrow = (rows.view(np.uint32) >> np.uint32(16)).astype(np.uint16)  # truncated to bfloat16
    else:
        narrow = rows.astype(np.float16)
    wide = to_float32(narrow)
    got = build_index(_spec("L2"), narrow, options=WALK).search(queries, K, params=SearchParams(search_list=40))
    want = build_index(_spec("L2"), wide, options=WALK).search(queries, K, params=SearchParams(search_list=40))
    truth = build_index(_flat("L2"), wide).search(queries, K).rows
    assert _recall(got.rows, truth) >= _recall(want.rows, truth) - 0.02
    assert _recall(got.rows, truth) > 0.8
