"""Indexes saved to and loaded from object storage; anything that does not fit loads as absent."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from structlog.testing import capture_logs

from common.errors import InvalidArgument
from common.storage.objectstore import ObjectStore
from segcore.index.base import SearchParams, VectorIndex
from segcore.index.factory import IndexSpec, build_index
from segcore.index.flat import FlatIndex
from segcore.index.hnsw import HnswIndex
from segcore.index.options import IndexOptions
from segcore.index.store import (
    collection_index_prefix,
    index_dir,
    index_prefix,
    load_index,
    save_index,
)
from segcore.segments.metric import Metric
from tests.segcore.index.reference import METRICS, gaussian

COLL, SEG, INDEX, FIELD = 7, 42, 3, 101
GRAPH_ONLY = IndexOptions(exact_min_rows=0, exact_sqrt_factor=0.0)
HNSW = IndexSpec(index_type="HNSW", metric="L2", params={"M": 8, "efConstruction": 64})


class RecordingStore(ObjectStore):
    """An ``ObjectStore`` on local disk that remembers the order of its writes."""

    def __init__(self, root: Path) -> None:
        inner = ObjectStore.from_uri(root.as_uri())
        super().__init__(filesystem=inner.filesystem, root=str(root), uri=inner.uri)
        self.writes: list[str] = []

    def write_bytes(self, rel: str, data: bytes) -> None:
        self.writes.append(rel)
        super().write_bytes(rel, data)


@pytest.fixture()
def store(tmp_path: Path) -> RecordingStore:
    return RecordingStore(tmp_path / "bucket")


def _meta_path() -> str:
    return f"{index_dir(COLL, SEG, INDEX)}/meta.json"


def _assert_same_results(a: VectorIndex, b: VectorIndex, queries: np.ndarray, allowed: np.ndarray | None) -> None:
    for params in (SearchParams(ef=32), SearchParams(radius=30.0)):
        x = a.search(queries, 10, allowed=allowed, params=params)
        y = b.search(queries, 10, allowed=allowed, params=params)
        np.testing.assert_array_equal(x.rows, y.rows)
        np.testing.assert_array_equal(x.distances, y.distances)


def test_the_layout() -> None:
    assert collection_index_prefix(7) == "index_files/7"
    assert index_prefix(7, 42) == "index_files/7/42"
    assert index_dir(7, 42, 3) == "index_files/7/42/3"
    with pytest.raises(InvalidArgument, match="segment id"):
        index_prefix(7, -1)


@pytest.mark.parametrize("metric", METRICS, ids=lambda m: m.value)
def test_an_hnsw_index_round_trips_with_identical_results(store: RecordingStore, metric: Metric) -> None:
    vectors, queries = gaussian(1000, 16, seed=1), gaussian(20, 16, seed=2)
    spec = IndexSpec(index_type="HNSW", metric=metric.value, params={"M": "8", "efConstruction": 64})
    assert load_index(store, COLL, SEG, INDEX, FIELD, spec, vectors) is None
    built = build_index(spec, vectors, options=GRAPH_ONLY)
    save_index(store, COLL, SEG, INDEX, FIELD, spec, built)
    loaded = load_index(store, COLL, SEG, INDEX, FIELD, spec, vectors, options=GRAPH_ONLY)
    assert isinstance(loaded, HnswIndex) and loaded.num_rows == 1000 and loaded.metric is metric
    allowed = np.random.default_rng(3).random(1000) < 0.4
    for mask in (None, allowed):
        _assert_same_results(built, loaded, queries, mask)


FAISS_SPECS = [
    IndexSpec(index_type="IVF_FLAT", metric="L2", params={"nlist": 16}),
    IndexSpec(index_type="IVF_PQ", metric="IP", params={"nlist": 16, "m": 4, "nbits": 6}),
    IndexSpec(index_type="IVF_RABITQ", metric="COSINE", params={"nlist": 16, "refine": True, "refine_type": "SQ6"}),
    IndexSpec(index_type="SCANN", metric="L2", params={"nlist": 16, "with_raw_data": False}),
    IndexSpec(index_type="HNSW_SQ", metric="COSINE", params={"M": 8, "sq_type": "BF16", "refine": True}),
    IndexSpec(index_type="HNSW_PRQ", metric="L2", params={"M": 8, "m": 4, "nrq": 1, "nbits": 4}),
]


@pytest.mark.parametrize("spec", FAISS_SPECS, ids=lambda s: f"{s.index_type}-{s.metric}")
def test_a_faiss_index_round_trips_with_identical_results(store: RecordingStore, spec: IndexSpec) -> None:
    vectors, queries = gaussian(1000, 16, seed=1), gaussian(20, 16, seed=2)
    built = build_index(spec, vectors, options=GRAPH_ONLY)
    save_index(store, COLL, SEG, INDEX, FIELD, spec, built, vectors)
    assert store.writes[0].startswith(f"{index_dir(COLL, SEG, INDEX)}/faiss-") and store.writes[1] == _meta_path()
    meta = json.loads(store.read_bytes(_meta_path()))
    assert meta["index_type"] == spec.kind.value and meta["params"] == spec.canonical()["params"]
    loaded = load_index(store, COLL, SEG, INDEX, FIELD, spec, vectors, options=GRAPH_ONLY)
    assert loaded is not None and loaded.kind is spec.kind and loaded.metric is spec.metric_type
    allowed = np.random.default_rng(3).random(1000) < 0.4
    for mask in (None, allowed):
        _assert_same_results(built, loaded, queries, mask)
    other = IndexSpec(index_type=spec.index_type, metric=spec.metric, params={**spec.params, "nlist": 8, "M": 9})
    assert load_index(store, COLL, SEG, INDEX, FIELD, other, vectors) is None  # built with other params


def test_the_data_is_written_before_the_meta(store: RecordingStore) -> None:
    vectors = gaussian(200, 8, seed=4)
    save_index(store, COLL, SEG, INDEX, FIELD, HNSW, build_index(HNSW, vectors))
    assert len(store.writes) == 2
    assert store.writes[0].startswith(f"{index_dir(COLL, SEG, INDEX)}/graph-") and store.writes[0].endswith(".bin")
    assert store.writes[1] == _meta_path()
    meta = json.loads(store.read_bytes(_meta_path()))
    assert meta["format_version"] == 1 and meta["index_type"] == "HNSW" and meta["metric"] == "L2"
    assert meta["params"] == {"M": 8, "efConstruction": 64}
    assert (meta["field_id"], meta["dim"], meta["rows"]) == (FIELD, 8, 200)
    assert meta["data"]["size"] == store.list(index_dir(COLL, SEG, INDEX))[0].size


def test_a_flat_index_stores_only_its_meta(store: RecordingStore) -> None:
    vectors, queries = gaussian(300, 8, seed=5), gaussian(5, 8, seed=6)
    spec = IndexSpec(index_type="FLAT", metric="IP")
    built = build_index(spec, vectors)
    save_index(store, COLL, SEG, INDEX, FIELD, spec, built)
    assert store.writes == [_meta_path()]
    loaded = load_index(store, COLL, SEG, INDEX, FIELD, spec, vectors)
    assert isinstance(loaded, FlatIndex)
    _assert_same_results(built, loaded, queries, None)


def test_autoindex_and_default_hnsw_share_a_stored_index(store: RecordingStore) -> None:
    vectors = gaussian(100, 8, seed=7)
    auto = IndexSpec(index_type="AUTOINDEX", metric="COSINE")
    save_index(store, COLL, SEG, INDEX, FIELD, auto, build_index(auto, vectors))
    same = IndexSpec(index_type="hnsw", metric="cosine", params={"M": 16, "efConstruction": "200"})
    assert load_index(store, COLL, SEG, INDEX, FIELD, same, vectors) is not None


def test_an_empty_segment_round_trips(store: RecordingStore) -> None:
    empty = np.empty((0, 8), np.float32)
    save_index(store, COLL, SEG, INDEX, FIELD, HNSW, build_index(HNSW, empty))
    assert store.writes == [_meta_path()]
    loaded = load_index(store, COLL, SEG, INDEX, FIELD, HNSW, empty)
    assert loaded is not None and loaded.num_rows == 0


@pytest.mark.parametrize(
    ("spec", "field_id", "rows", "dim", "fields"),
    [
        (IndexSpec(index_type="HNSW", metric="L2", params={"M": 16, "efConstruction": 64}), FIELD, 200, 8, ["params"]),
        (IndexSpec(index_type="HNSW", metric="IP", params={"M": 8, "efConstruction": 64}), FIELD, 200, 8, ["metric"]),
        (IndexSpec(index_type="FLAT", metric="L2"), FIELD, 200, 8, ["index_type", "params"]),
        (HNSW, FIELD + 1, 200, 8, ["field_id"]),
        (HNSW, FIELD, 199, 8, ["rows"]),
        (HNSW, FIELD, 200, 9, ["dim"]),
    ],
)
def test_a_meta_that_does_not_match_is_absent_and_logged(
    store: RecordingStore, spec: IndexSpec, field_id: int, rows: int, dim: int, fields: list[str]
) -> None:
    save_index(store, COLL, SEG, INDEX, FIELD, HNSW, build_index(HNSW, gaussian(200, 8, seed=8)))
    with capture_logs() as logs:
        assert load_index(store, COLL, SEG, INDEX, field_id, spec, gaussian(rows, dim, seed=8)) is None
    [warning] = [e for e in logs if e["log_level"] == "warning"]
    assert warning["event"] == "index meta does not match, treating the index as absent"
    assert warning["fields"] == fields


@pytest.mark.parametrize(
    "meta",
    [
        b"not json",
        b"[1, 2]",
        b'{"format_version": 1}',
        b"",
    ],
)
def test_an_unreadable_meta_is_absent(store: RecordingStore, meta: bytes) -> None:
    vectors = gaussian(200, 8, seed=9)
    save_index(store, COLL, SEG, INDEX, FIELD, HNSW, build_index(HNSW, vectors))
    store.write_bytes(_meta_path(), meta)
    with capture_logs() as logs:
        assert load_index(store, COLL, SEG, INDEX, FIELD, HNSW, vectors) is None
    assert [e["event"] for e in logs] == ["index meta unreadable, treating the index as absent"]


def _edit_meta(store: RecordingStore, **changes: object) -> None:
    meta = json.loads(store.read_bytes(_meta_path()))
    meta.update(changes)
    store.write_bytes(_meta_path(), json.dumps(meta).encode())


def test_another_format_version_is_absent(store: RecordingStore) -> None:
    vectors = gaussian(200, 8, seed=10)
    save_index(store, COLL, SEG, INDEX, FIELD, HNSW, build_index(HNSW, vectors))
    _edit_meta(store, format_version=2)
    assert load_index(store, COLL, SEG, INDEX, FIELD, HNSW, vectors) is None


def _data_path(store: RecordingStore) -> str:
    [entry] = [e for e in store.list(index_dir(COLL, SEG, INDEX)) if e.path.endswith(".bin")]
    return entry.path


def test_a_corrupt_truncated_or_missing_data_file_is_absent(store: RecordingStore) -> None:
    vectors = gaussian(200, 8, seed=11)
    save_index(store, COLL, SEG, INDEX, FIELD, HNSW, build_index(HNSW, vectors))
    path = _data_path(store)
    good = store.read_bytes(path)
    flipped = bytearray(good)
    flipped[len(good) // 2] ^= 0xFF
    for bad in (bytes(flipped), good[:-10]):
        store.write_bytes(path, bad)
        with capture_logs() as logs:
            assert load_index(store, COLL, SEG, INDEX, FIELD, HNSW, vectors) is None
        assert logs[0]["event"] == "index data corrupt, treating the index as absent"
    store.delete(path)
    with capture_logs() as logs:
        assert load_index(store, COLL, SEG, INDEX, FIELD, HNSW, vectors) is None
    assert logs[0]["event"] == "index data missing, treating the index as absent"


def test_a_meta_naming_a_file_outside_its_directory_is_absent(store: RecordingStore) -> None:
    vectors = gaussian(200, 8, seed=12)
    save_index(store, COLL, SEG, INDEX, FIELD, HNSW, build_index(HNSW, vectors))
    meta = json.loads(store.read_bytes(_meta_path()))
    _edit_meta(store, data={**meta["data"], "name": "../../other/graph.bin"})
    assert load_index(store, COLL, SEG, INDEX, FIELD, HNSW, vectors) is None


def test_an_hnsw_meta_without_data_is_absent(store: RecordingStore) -> None:
    vectors = gaussian(200, 8, seed=13)
    save_index(store, COLL, SEG, INDEX, FIELD, HNSW, build_index(HNSW, vectors))
    _edit_meta(store, data=None)
    with capture_logs() as logs:
        assert load_index(store, COLL, SEG, INDEX, FIELD, HNSW, vectors) is None
    assert logs[0]["event"] == "index data does not load, treating the index as absent"


def test_a_rebuilt_index_replaces_a_mismatched_one(store: RecordingStore) -> None:
    vectors = gaussian(200, 8, seed=14)
    save_index(store, COLL, SEG, INDEX, FIELD, HNSW, build_index(HNSW, vectors[:100]))
    assert load_index(store, COLL, SEG, INDEX, FIELD, HNSW, vectors) is None
    save_index(store, COLL, SEG, INDEX, FIELD, HNSW, build_index(HNSW, vectors))
    loaded = load_index(store, COLL, SEG, INDEX, FIELD, HNSW, vectors)
    assert loaded is not None and loaded.num_rows == 200


def test_deleting_the_segment_prefix_removes_every_index(store: RecordingStore) -> None:
    vectors = gaussian(100, 8, seed=15)
    for index_id in (1, 2):
        save_index(store, COLL, SEG, index_id, FIELD, HNSW, build_index(HNSW, vectors))
    save_index(store, COLL, SEG + 1, 1, FIELD, HNSW, build_index(HNSW, vectors))
    store.delete_prefix(index_prefix(COLL, SEG))
    assert store.list(index_prefix(COLL, SEG)) == []
    assert load_index(store, COLL, SEG, 1, FIELD, HNSW, vectors) is None
    assert load_index(store, COLL, SEG + 1, 1, FIELD, HNSW, vectors) is not None


def test_save_refuses_an_index_that_is_not_the_spec(store: RecordingStore) -> None:
    vectors = gaussian(50, 8, seed=16)
    flat = build_index(IndexSpec(index_type="FLAT", metric="L2"), vectors)
    with pytest.raises(ValueError, match="FLAT/L2 index cannot be saved as HNSW/L2"):
        save_index(store, COLL, SEG, INDEX, FIELD, HNSW, flat)
    with pytest.raises(ValueError, match="shape"):
        save_index(store, COLL, SEG, INDEX, FIELD, HNSW, build_index(HNSW, vectors), vectors[:10])
    assert store.writes == []
