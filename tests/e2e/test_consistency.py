"""Consistency levels (ARCHITECTURE §5.3) through pymilvus against the standalone.

* Strong: a write acknowledged to one client is seen by any other client's next read.
* Session: a client sees its own writes (pymilvus sends its last write timestamp).
* Bounded: a read sees every write acknowledged more than the bound (5 s) before it.

A read that cannot reach its guarantee timestamp (the streaming node frozen)
is tested on separate roles, ``tests/cluster/test_read_guarantee.py``: in
standalone the streaming node shares the proxy's process.
"""

from __future__ import annotations

import time

import numpy as np
from pymilvus import DataType, MilvusClient

from proxy.consistency import BOUNDED_STALENESS_MS
from tests.e2e.util import unique_name
from tests.harness import Standalone

DIM = 4


def _collection(milvus: MilvusClient) -> str:
    name = unique_name("cons")
    schema = MilvusClient.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("v", DataType.FLOAT_VECTOR, dim=DIM)
    index = milvus.prepare_index_params()
    index.add_index("v", metric_type="L2")
    milvus.create_collection(name, schema=schema, index_params=index, num_shards=2, consistency_level="Bounded")
    return name


def _row(i: int) -> dict[str, object]:
    return {"id": i, "v": np.full(DIM, float(i), dtype=np.float32).tolist()}


def _has(client: MilvusClient, name: str, i: int, level: str) -> bool:
    return bool(client.query(name, filter=f"id == {i}", output_fields=["id"], consistency_level=level))


def test_strong_reads_of_another_client_see_every_acknowledged_write(milvus: MilvusClient, standalone: Standalone) -> None:
    name = _collection(milvus)
    reader = MilvusClient(standalone.uri)
    try:
        for i in range(15):
            milvus.insert(name, [_row(i)])
            assert _has(reader, name, i, "Strong"), i
            milvus.delete(name, ids=[i])
            assert not _has(reader, name, i, "Strong"), i
    finally:
        reader.close()
        milvus.drop_collection(name)


def test_session_reads_see_the_clients_own_writes(milvus: MilvusClient) -> None:
    name = _collection(milvus)
    for i in range(15):
        milvus.insert(name, [_row(i)])
        assert _has(milvus, name, i, "Session"), i
    milvus.drop_collection(name)


def test_bounded_reads_see_writes_older_than_the_bound_and_eventually_answers(milvus: MilvusClient) -> None:
    name = _collection(milvus)
    milvus.insert(name, [_row(i) for i in range(10)])
    time.sleep(BOUNDED_STALENESS_MS / 1000 + 0.5)
    assert all(_has(milvus, name, i, "Bounded") for i in range(10))
    milvus.query(name, filter="id >= 0", output_fields=["id"], consistency_level="Eventually")  # never waits
    milvus.drop_collection(name)
