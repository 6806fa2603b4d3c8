"""upsert = delete + insert at one timetick: the new version replaces the old, never a gap."""

from __future__ import annotations

import threading

import numpy as np
from pymilvus import DataType, MilvusClient

from tests.e2e.util import unique_name
from tests.harness import Standalone


def _collection(milvus: MilvusClient) -> str:
    name = unique_name()
    schema = MilvusClient.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("version", DataType.INT64)
    schema.add_field("v", DataType.FLOAT_VECTOR, dim=4)
    index = milvus.prepare_index_params()
    index.add_index("v", metric_type="L2")
    milvus.create_collection(name, schema=schema, index_params=index, num_shards=2)
    return name


def test_upsert_replaces_rows(milvus: MilvusClient) -> None:
    name = _collection(milvus)
    vec = np.ones(4, dtype=np.float32).tolist()
    milvus.insert(name, [{"id": i, "version": 0, "v": vec} for i in range(10)])
    res = milvus.upsert(name, [{"id": i, "version": 1, "v": vec} for i in range(5, 15)])
    assert res["upsert_count"] == 10
    got = milvus.query(name, filter="id >= 0", output_fields=["version"], consistency_level="Strong")
    assert {r["id"]: r["version"] for r in got} == {i: (1 if i >= 5 else 0) for i in range(15)}
    assert milvus.query(name, filter="", output_fields=["count(*)"], consistency_level="Strong")[0]["count(*)"] == 15
    milvus.drop_collection(name)


def test_readers_never_see_a_gap_during_upserts(milvus: MilvusClient, standalone: Standalone) -> None:
    name = _collection(milvus)
    vec = np.ones(4, dtype=np.float32).tolist()
    milvus.insert(name, [{"id": i, "version": 0, "v": vec} for i in range(20)])
    stop = threading.Event()
    counts: list[int] = []

    def reader() -> None:
        client = MilvusClient(standalone.uri)
        try:
            while not stop.is_set():
                got = client.query(name, filter="id >= 0", output_fields=["id"], consistency_level="Strong")
                counts.append(len(got))
        finally:
            client.close()

    t = threading.Thread(target=reader)
    t.start()
    try:
        for version in range(1, 8):
            milvus.upsert(name, [{"id": i, "version": version, "v": vec} for i in range(20)])
    finally:
        stop.set()
        t.join(60)
    assert counts and set(counts) == {20}
    final = milvus.query(name, filter="id >= 0", output_fields=["version"], consistency_level="Strong")
    assert {r["version"] for r in final} == {7}
    milvus.drop_collection(name)

