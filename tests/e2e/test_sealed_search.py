"""Search over sealed segments on the worker: HNSW built once and saved, range search, group-by, offset.

Through pymilvus against the session's standalone. Data is flushed, so the
rows are served by sealed segments with their index (not by growing data).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from pymilvus import DataType, MilvusClient, MilvusException

from tests.e2e.util import brute_force, unique_name
from tests.harness import Standalone

DIM = 16
N = 3000


def _collection(milvus: MilvusClient, *, index: dict[str, object], metric: str) -> tuple[str, np.ndarray]:
    name = unique_name("sealed")
    schema = MilvusClient.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("colour", DataType.INT64)
    schema.add_field("v", DataType.FLOAT_VECTOR, dim=DIM)
    params = milvus.prepare_index_params()
    params.add_index("v", metric_type=metric, **index)
    milvus.create_collection(name, schema=schema, index_params=params, num_shards=2)
    data = np.random.default_rng(5).standard_normal((N, DIM)).astype(np.float32)
    rows = [{"id": i, "colour": i % 7, "v": data[i].tolist()} for i in range(N)]
    for first in range(0, N, 1000):
        milvus.insert(name, rows[first : first + 1000])
    milvus.flush(name)
    return name, data


def _sealed_everywhere(milvus: MilvusClient, name: str) -> None:
    """Release and load again: every row now comes from sealed segments loaded on the worker."""
    milvus.release_collection(name)
    milvus.load_collection(name)


def test_hnsw_over_sealed_segments_finds_the_exact_neighbours_and_the_index_is_saved(
    milvus: MilvusClient, standalone: Standalone
) -> None:
    name, data = _collection(milvus, index={"index_type": "HNSW", "params": {"M": 16, "efConstruction": 200}},
                             metric="L2")
    _sealed_everywhere(milvus, name)
    queries = data[:5] + 0.001
    hits = milvus.search(name, data=queries.tolist(), limit=10, search_params={"params": {"ef": 256}},
                         consistency_level="Strong")
    want, want_d = brute_force(data, queries, "L2", 10)
    for q, row in enumerate(hits):
        assert [h["id"] for h in row] == want[q].tolist()
        assert np.allclose([h["distance"] for h in row], want_d[q], atol=1e-3)
    desc = milvus.describe_collection(name)
    built = list(Path(standalone.data_dir, "storage", "index_files", str(desc["collection_id"])).rglob("meta.json"))
    assert built, "no index saved in object storage"
    stamps = {p: p.stat().st_mtime_ns for p in built}
    _sealed_everywhere(milvus, name)  # a second load reads the saved index instead of building it
    milvus.search(name, data=queries[:1].tolist(), limit=3, consistency_level="Strong")
    assert {p: p.stat().st_mtime_ns for p in built} == stamps
    milvus.drop_collection(name)


def test_range_search_group_by_and_offset(milvus: MilvusClient) -> None:
    name, data = _collection(milvus, index={"index_type": "AUTOINDEX"}, metric="L2")
    q = data[:1] + 0.01
    ranged = milvus.search(name, data=q.tolist(), limit=50,
                           search_params={"params": {"radius": 20.0, "range_filter": 8.0}}, consistency_level="Strong")
    d = [h["distance"] for h in ranged[0]]
    assert d and all(8.0 <= x < 20.0 for x in d)

    grouped = milvus.search(name, data=q.tolist(), limit=4, group_by_field="colour", output_fields=["colour"],
                            consistency_level="Strong")
    colours = [h["entity"]["colour"] for h in grouped[0]]
    assert len(colours) == 4 and len(set(colours)) == 4  # one hit per group, four groups

    full = milvus.search(name, data=q.tolist(), limit=10, consistency_level="Strong")[0]
    paged = milvus.search(name, data=q.tolist(), limit=5, offset=5, consistency_level="Strong")[0]
    assert [h["id"] for h in paged] == [h["id"] for h in full][5:]
    milvus.drop_collection(name)


def test_deleted_rows_stay_deleted_across_flush_and_reload(milvus: MilvusClient) -> None:
    name, data = _collection(milvus, index={"index_type": "HNSW", "params": {"M": 8, "efConstruction": 64}},
                             metric="L2")
    gone = list(range(0, N, 3))
    milvus.delete(name, ids=gone)
    for step in ("now", "flushed", "reloaded"):
        if step == "flushed":
            milvus.flush(name)
        elif step == "reloaded":
            _sealed_everywhere(milvus, name)
        hits = milvus.search(name, data=data[gone[:20]].tolist(), limit=5, consistency_level="Strong")
        assert not {h["id"] for row in hits for h in row} & set(gone), step
        count = milvus.query(name, filter="", output_fields=["count(*)"], consistency_level="Strong")[0]["count(*)"]
        assert count == N - len(gone), step
    milvus.drop_collection(name)


def test_bad_index_params_are_refused(milvus: MilvusClient) -> None:
    name = unique_name("badidx")
    schema = MilvusClient.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("v", DataType.FLOAT_VECTOR, dim=4)
    milvus.create_collection(name, schema=schema)
    for kwargs, message in (({"index_type": "HNSW", "params": {"M": 0}}, "M must be in"),
                            ({"index_type": "IVF_XYZ"}, "index_type must be one of")):
        params = milvus.prepare_index_params()
        params.add_index("v", metric_type="L2", **kwargs)
        with pytest.raises(MilvusException, match=message):
            milvus.create_index(name, params)
    assert milvus.list_indexes(name) == []
    milvus.drop_collection(name)


def test_scalar_and_json_indexes_do_not_break_loads(milvus: MilvusClient) -> None:
    """A scalar or JSON-path index was once accepted, then failed every segment load (reads counted 0);
    now each is built and the collection loads and counts every row."""
    name = unique_name("scalaridx")
    schema = MilvusClient.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("tag", DataType.INT64)
    schema.add_field("j", DataType.JSON)
    schema.add_field("v", DataType.FLOAT_VECTOR, dim=4)
    milvus.create_collection(name, schema=schema)
    params = milvus.prepare_index_params()
    params.add_index("j", index_type="INVERTED", params={"json_path": "j['a']", "json_cast_type": "double"})
    params.add_index("tag", index_type="STL_SORT")
    params.add_index("v", metric_type="L2")
    milvus.create_index(name, params)
    assert len(milvus.list_indexes(name)) == 3
    milvus.insert(name, [{"id": i, "tag": i, "j": {"a": i}, "v": [float(i), 0, 0, 1]} for i in range(150)])
    milvus.flush(name)
    milvus.load_collection(name)
    count = milvus.query(name, filter="", output_fields=["count(*)"], consistency_level="Strong")[0]["count(*)"]
    assert count == 150
    hits = milvus.query(name, filter="tag < 5 and j['a'] >= 2", output_fields=["id"], consistency_level="Strong")
    assert sorted(h["id"] for h in hits) == [2, 3, 4]
    milvus.drop_collection(name)
