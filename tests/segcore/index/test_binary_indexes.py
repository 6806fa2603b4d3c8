"""BIN_FLAT and BIN_IVF_FLAT: exact answers against a bit-by-bit reference, recall against faiss in-process,
filters, ranges, the stored form, and index definitions checked per vector type with Milvus' messages."""

from __future__ import annotations

from pathlib import Path

import faiss
import numpy as np
import pytest

from common.errors import InvalidArgument
from common.storage.objectstore import ObjectStore
from segcore.index.base import SearchParams
from segcore.index.bin_ivf import BinIvfIndex, match_nlist
from segcore.index.factory import IndexSpec, build_index, restore_index
from segcore.index.options import IndexOptions
from segcore.index.spec import BinIvfParams, IndexKind
from segcore.index.store import load_index, save_index
from segcore.segments.metric import Metric
from tests.segcore.segments.binary_reference import random_codes, reference_topk

BYTES = 16  # dim 128
IVF_ONLY = IndexOptions(exact_min_rows=0, exact_sqrt_factor=0.0)  # never trade the lists for an exact search


def _clustered(n: int, *, seed: int, centers: int = 40, flips: float = 0.12) -> np.ndarray:
    """Codes around ``centers`` random ones, each bit flipped with probability ``flips``: neighbours exist."""
    rng = np.random.default_rng(seed)
    base = rng.random((centers, BYTES * 8)) < 0.5
    noise = rng.random((n, BYTES * 8)) < flips
    return np.packbits(base[rng.integers(0, centers, n)] ^ noise, axis=1)


def _as_pairs(hits, q: int) -> list[tuple[int, float]]:  # type: ignore[no-untyped-def]
    keep = hits.rows[q] >= 0
    return [(int(r), float(d)) for r, d in zip(hits.rows[q][keep], hits.distances[q][keep], strict=True)]


@pytest.mark.parametrize("metric", ["HAMMING", "JACCARD", "SUBSTRUCTURE", "SUPERSTRUCTURE"])
def test_bin_flat_is_exact_with_filters(metric: str) -> None:
    density = 0.5 if metric in ("HAMMING", "JACCARD") else 0.1
    codes = random_codes(500, 4, seed=1, density=density)
    queries = np.concatenate([random_codes(4, 4, seed=2, density=density), codes[:2]])
    index = build_index(IndexSpec(index_type="BIN_FLAT", metric=metric, binary=True), codes)
    assert index.kind is IndexKind.BIN_FLAT and index.dim == 4 and index.serialize() is None
    allowed = np.arange(500) % 2 == 0
    for mask in (None, allowed):
        hits = index.search(queries, 7, allowed=mask)
        for q, want in enumerate(reference_topk(metric, queries, codes, 7, mask)):
            got = _as_pairs(hits, q)
            assert [r for r, _ in got] == [r for r, _ in want]
            np.testing.assert_allclose([d for _, d in got], [d for _, d in want], rtol=1e-6)
        assert (hits.rows[hits.rows < 0].size == 0) or np.all(np.isinf(hits.distances[hits.rows < 0]))


@pytest.mark.parametrize(("metric", "radius", "range_filter"), [("HAMMING", 12.0, 3.0), ("JACCARD", 0.45, 0.1)])
@pytest.mark.parametrize("kind", ["BIN_FLAT", "BIN_IVF_FLAT"])
def test_range_search_keeps_range_filter_to_radius(kind: str, metric: str, radius: float, range_filter: float) -> None:
    codes = _clustered(3000, seed=3, flips=0.05)
    index = build_index(IndexSpec(index_type=kind, metric=metric, params={"nlist": 16}, binary=True), codes,
                        options=IVF_ONLY)
    params = SearchParams(radius=radius, range_filter=range_filter, nprobe=16)
    hits = index.search(codes[:20], 50, params=params)
    found = hits.distances[hits.rows >= 0]
    assert found.size and np.all((found >= range_filter) & (found < radius))
    if kind == "BIN_FLAT":  # exact: every row in range, up to topk
        for q, want in enumerate(reference_topk(metric, codes[:20], codes, 50, radius=radius,
                                                range_filter=range_filter)):
            assert [r for r, _ in _as_pairs(hits, q)] == [r for r, _ in want]


def _distance_recall(found: np.ndarray, truth_kth: np.ndarray) -> float:
    """Share of returned distances within the true k-th distance (ties make row ids ambiguous)."""
    return float(np.mean(found <= truth_kth[:, None]))


@pytest.mark.parametrize("nprobe", [1, 4, 16])
def test_bin_ivf_flat_recall_is_faiss_recall_with_the_same_lists(nprobe: int) -> None:
    codes = _clustered(20_000, seed=7)
    queries = _clustered(200, seed=8)
    k, nlist = 10, 128
    truth = build_index(IndexSpec(index_type="BIN_FLAT", metric="HAMMING", binary=True), codes).search(queries, k)
    kth = truth.distances[:, -1]
    ours = build_index(IndexSpec(index_type="BIN_IVF_FLAT", metric="HAMMING", params={"nlist": nlist}, binary=True),
                       codes, options=IVF_ONLY)
    got = ours.search(queries, k, params=SearchParams(nprobe=nprobe))  # faiss' scan of our lists
    allowed = np.ones(len(codes), dtype=bool)
    allowed[-1] = False  # a row filter: the lists are scanned here, not by faiss
    scanned = ours.search(queries, k, allowed=allowed, params=SearchParams(nprobe=nprobe))
    reference = faiss.IndexBinaryIVF(faiss.IndexBinaryFlat(BYTES * 8), BYTES * 8, nlist)
    reference.train(codes)
    reference.add(codes)
    reference.nprobe = nprobe
    distances, _ = reference.search(queries, k)
    faiss_recall = _distance_recall(distances, kth)
    for hits in (got, scanned):
        ours_recall = _distance_recall(hits.distances, kth)
        assert abs(ours_recall - faiss_recall) <= 0.02, (ours_recall, faiss_recall)
    if nprobe == 16:
        assert faiss_recall > 0.9


def test_bin_ivf_flat_jaccard_probes_by_jaccard_and_filters() -> None:
    codes = _clustered(5000, seed=9)
    spec = IndexSpec(index_type="BIN_IVF_FLAT", metric="JACCARD", params={"nlist": 32}, binary=True)
    index = build_index(spec, codes, options=IVF_ONLY)
    assert isinstance(index, BinIvfIndex) and index.nlist == 32
    every = index.search(codes[:30], 5, params=SearchParams(nprobe=32))  # every list: exact
    for q, want in enumerate(reference_topk("JACCARD", codes[:30], codes, 5)):
        np.testing.assert_allclose(every.distances[q], [d for _, d in want], rtol=1e-6)
    allowed = np.arange(5000) % 5 == 0
    hits = index.search(codes[:30], 5, allowed=allowed, params=SearchParams(nprobe=4))
    assert np.all(allowed[hits.rows[hits.rows >= 0]])
    few = np.zeros(5000, dtype=bool)
    few[[3, 400, 4999]] = True  # fewer allowed rows than topk: searched exactly
    hits = index.search(codes[:2], 5, allowed=few)
    assert sorted(hits.rows[0][hits.rows[0] >= 0].tolist()) == [3, 400, 4999]


def test_a_small_segment_gets_fewer_lists_and_an_empty_one_none() -> None:
    assert match_nlist(100_000, 128) == 128 and match_nlist(1000, 128) == 25 and match_nlist(10, 128) == 1
    codes = random_codes(1000, 2, seed=4)
    index = build_index(IndexSpec(index_type="BIN_IVF_FLAT", metric="HAMMING", binary=True), codes)
    assert isinstance(index, BinIvfIndex) and index.nlist == 25
    empty = build_index(IndexSpec(index_type="BIN_IVF_FLAT", metric="HAMMING", binary=True), codes[:0])
    assert empty.search(codes[:1], 3).rows.tolist() == [[-1, -1, -1]]


def test_lists_round_trip_through_the_index_store(tmp_path: Path) -> None:
    store = ObjectStore.from_uri((tmp_path / "bucket").as_uri())
    codes = _clustered(4000, seed=12)
    spec = IndexSpec(index_type="BIN_IVF_FLAT", metric="HAMMING", params={"nlist": 64}, binary=True)
    built = build_index(spec, codes, options=IVF_ONLY)
    save_index(store, 1, 2, 3, 101, spec, built, codes)
    loaded = load_index(store, 1, 2, 3, 101, spec, codes, options=IVF_ONLY)
    assert loaded is not None and loaded.kind is IndexKind.BIN_IVF_FLAT
    params = SearchParams(nprobe=3)
    np.testing.assert_array_equal(loaded.search(codes[:40], 10, params=params).rows,
                                  built.search(codes[:40], 10, params=params).rows)
    other = IndexSpec(index_type="BIN_IVF_FLAT", metric="JACCARD", params={"nlist": 64}, binary=True)
    assert load_index(store, 1, 2, 3, 101, other, codes) is None  # another metric: rebuilt
    assert load_index(store, 1, 2, 3, 101, spec, codes[:-1]) is None  # other rows: rebuilt
    data = built.serialize()
    assert data is not None
    with pytest.raises(ValueError):
        restore_index(spec, codes, data[:-4])
    with pytest.raises(ValueError):
        BinIvfIndex.restore(b"X" * len(data), codes, Metric.HAMMING, BinIvfParams(nlist=64))
    flat = IndexSpec(index_type="BIN_FLAT", metric="JACCARD", binary=True)
    save_index(store, 1, 2, 4, 101, flat, build_index(flat, codes), codes)
    assert load_index(store, 1, 2, 4, 101, flat, codes) is not None


def test_autoindex_on_a_binary_field_is_bin_ivf_flat_with_1024_lists() -> None:
    spec = IndexSpec(index_type="AUTOINDEX", metric="JACCARD", params={"nlist": 7}, binary=True)
    assert spec.kind is IndexKind.BIN_IVF_FLAT and spec.bin_ivf.nlist == 1024
    assert spec.canonical() == {"index_type": "BIN_IVF_FLAT", "metric": "JACCARD", "params": {"nlist": 1024}}
    assert IndexSpec(index_type="BIN_IVF_FLAT", metric="hamming", binary=True).bin_ivf.nlist == 128
    assert IndexSpec(index_type="AUTOINDEX", metric="L2").kind is IndexKind.HNSW  # float fields unchanged


SUFFIX = r": invalid parameter\[expected=valid index params\]\[actual=invalid index params\]"


@pytest.mark.parametrize(
    ("index_type", "metric", "binary", "params", "message"),
    [
        ("BIN_FLAT", "L2", True, {}, "binary vector index does not support metric type: L2" + SUFFIX),
        ("AUTOINDEX", "COSINE", True, {}, "binary vector index does not support metric type: COSINE"),
        ("HNSW", "IP", True, {}, "binary vector index does not support metric type: IP"),
        ("FLAT", "HAMMING", False, {}, "float vector index does not support metric type: HAMMING" + SUFFIX),
        ("HNSW", "JACCARD", False, {}, "float vector index does not support metric type: JACCARD"),
        ("HNSW", "HAMMING", True, {}, "data type BinaryVector can't build with this index HNSW"),
        ("FLAT", "HAMMING", True, {}, "data type BinaryVector can't build with this index FLAT"),
        ("BIN_FLAT", "L2", False, {}, "data type FloatVector can't build with this index BIN_FLAT"),
        ("BIN_IVF_FLAT", "SUBSTRUCTURE", True, {},
         r"metric type SUBSTRUCTURE not found or not supported, supported: \[HAMMING JACCARD\]"),
        ("AUTOINDEX", "SUPERSTRUCTURE", True, {}, "binary vector index does not support metric type: SUPERSTRUCTURE"),
        ("BIN_IVF_FLAT", "HAMMING", True, {"nlist": 0}, r"invalid index params: nlist must be in \[1, 65536\], got 0"),
        ("BIN_IVF_FLAT", "HAMMING", True, {"nlist": 65537}, r"nlist must be in \[1, 65536\]"),
        ("BIN_IVF_FLAT", "HAMMING", True, {"nlist": "x"}, "nlist must be an integer, got 'x'"),
    ],
)
def test_bad_binary_index_definitions_are_refused(
    index_type: str, metric: str, binary: bool, params: dict[str, object], message: str
) -> None:
    with pytest.raises(InvalidArgument, match=message):
        IndexSpec(index_type=index_type, metric=metric, params=params, binary=binary)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("metric", "params", "message"),
    [
        ("HAMMING", SearchParams(nprobe=0), r"nprobe must be in \[1, 65536\], got 0"),
        ("HAMMING", SearchParams(nprobe=70_000), r"nprobe must be in \[1, 65536\]"),
        ("HAMMING", SearchParams(radius=3.0, range_filter=3.0), "range_filter must be less than radius for HAMMING"),
        ("JACCARD", SearchParams(radius=0.2, range_filter=0.5), "range_filter must be less than radius for JACCARD"),
        ("SUBSTRUCTURE", SearchParams(radius=1.0), "range search does not support metric SUBSTRUCTURE"),
    ],
)
def test_bad_binary_search_params_are_refused(metric: str, params: SearchParams, message: str) -> None:
    codes = random_codes(50, 2, seed=6)
    index = build_index(IndexSpec(index_type="BIN_FLAT", metric=metric, binary=True), codes)
    with pytest.raises(InvalidArgument, match=f"invalid search params: {message}"):
        index.search(codes[:1], 3, params=params)
    with pytest.raises(InvalidArgument, match=r"binary query vectors must be \(nq, 2\) uint8"):
        index.search(np.zeros((1, 16), np.float32), 3)
