"""A delete naming a partition removes the keys' rows there only, as in Milvus.

Rows of one key in two partitions are two rows (Milvus counts both in
``count(*)``, and a query returns the newest); ``delete(ids, partition_name=p)``
deletes the row in ``p`` and the other stays, whether the rows are growing,
sealed or compacted, and after a restart of the standalone (the L0 deletes it
reads back name their partition). Checked against Milvus 2.3.5 too
(``tests/differential/README.md``).
"""

from __future__ import annotations

import pytest
from pymilvus import DataType, MilvusClient

from tests.e2e.test_compaction import wait_compaction
from tests.e2e.util import unique_name


def _collection(milvus: MilvusClient) -> str:
    name = unique_name("pdel")
    schema = MilvusClient.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("x", DataType.INT64)
    schema.add_field("v", DataType.FLOAT_VECTOR, dim=2)
    index = milvus.prepare_index_params()
    index.add_index("v", metric_type="L2", index_type="FLAT")
    milvus.create_collection(name, schema=schema, index_params=index, num_shards=2)
    milvus.create_partition(name, "p1")
    milvus.create_partition(name, "p2")
    return name


def _in(milvus: MilvusClient, name: str, partition: str) -> dict[int, int]:
    got = milvus.query(name, filter="id >= 0", output_fields=["x"], partition_names=[partition],
                       consistency_level="Strong")
    return {r["id"]: r["x"] for r in got}


def _count(milvus: MilvusClient, name: str) -> int:
    return milvus.query(name, filter="", output_fields=["count(*)"], consistency_level="Strong")[0]["count(*)"]


def _fill(milvus: MilvusClient, name: str) -> None:
    milvus.insert(name, [{"id": i, "x": 10 + i, "v": [float(i), 0.0]} for i in range(6)], partition_name="p1")
    milvus.insert(name, [{"id": i, "x": 20 + i, "v": [float(i), 1.0]} for i in range(3)], partition_name="p2")


def _check_scoped_deletes(milvus: MilvusClient, name: str) -> None:
    assert _count(milvus, name) == 9  # keys 0-2 have a row in each partition
    res = milvus.delete(name, ids=[0, 1], partition_name="p2")
    assert res["delete_count"] == 2
    assert _in(milvus, name, "p2") == {2: 22}
    assert _in(milvus, name, "p1") == {i: 10 + i for i in range(6)}
    milvus.delete(name, filter="x >= 12", partition_name="p1")  # 2-5 in p1; p2's key 2 has x = 22
    assert _in(milvus, name, "p1") == {0: 10, 1: 11}
    assert _in(milvus, name, "p2") == {2: 22}
    assert _count(milvus, name) == 3
    milvus.delete(name, ids=[0, 1, 2])  # no partition: every one
    assert _count(milvus, name) == 0


def test_a_partition_scoped_delete_leaves_the_key_in_other_partitions(milvus: MilvusClient) -> None:
    name = _collection(milvus)
    _fill(milvus, name)
    # Both rows of key 1 are live; a query of the key returns the newest (p2's), as Milvus 2.6.
    assert milvus.query(name, filter="id == 1", output_fields=["x"], consistency_level="Strong") == [
        {"id": 1, "x": 21}
    ]
    hits = milvus.search(name, data=[[1.0, 0.0]], limit=10, consistency_level="Strong")
    assert sorted(h["id"] for h in hits[0]) == list(range(6))  # one hit per key
    _check_scoped_deletes(milvus, name)
    milvus.drop_collection(name)


def test_partition_scoped_deletes_reach_sealed_segments_only_in_their_partition(milvus: MilvusClient) -> None:
    name = _collection(milvus)
    _fill(milvus, name)
    milvus.flush(name)
    milvus.release_collection(name)
    milvus.load_collection(name)  # every row from sealed segments on the worker
    # The worker merges the two partitions' segments: one row per key, the newest.
    got = milvus.query(name, filter="id <= 2", output_fields=["x"], limit=2, consistency_level="Strong")
    assert got == [{"id": 0, "x": 20}, {"id": 1, "x": 21}]
    _check_scoped_deletes(milvus, name)
    milvus.drop_collection(name)


def test_flushed_partition_deletes_stay_scoped_when_the_collection_loads_again(milvus: MilvusClient) -> None:
    name = _collection(milvus)
    _fill(milvus, name)
    milvus.flush(name)
    milvus.delete(name, ids=[0, 1], partition_name="p2")
    milvus.flush(name)  # the deletes go to an L0 segment of p2
    milvus.release_collection(name)
    milvus.load_collection(name)  # the delegator reads them back from the L0 segment
    assert _in(milvus, name, "p2") == {2: 22}
    assert _in(milvus, name, "p1") == {i: 10 + i for i in range(6)}
    assert _count(milvus, name) == 7
    milvus.drop_collection(name)


def test_an_upsert_replaces_the_key_in_its_own_partition_only(milvus: MilvusClient) -> None:
    # Milvus deletes an upsert's keys in the upsert's partition: a row of the key elsewhere stays.
    name = _collection(milvus)
    milvus.insert(name, [{"id": 1, "x": 1, "v": [0.0, 0.0]}], partition_name="p1")
    milvus.upsert(name, [{"id": 1, "x": 2, "v": [0.0, 0.0]}], partition_name="p2")
    assert _in(milvus, name, "p1") == {1: 1}
    assert _in(milvus, name, "p2") == {1: 2}
    assert _count(milvus, name) == 2
    milvus.upsert(name, [{"id": 1, "x": 3, "v": [0.0, 0.0]}], partition_name="p2")
    assert _in(milvus, name, "p2") == {1: 3}
    assert _count(milvus, name) == 2
    milvus.drop_collection(name)


@pytest.mark.timeout(600)
def test_partition_scoped_deletes_stay_scoped_through_compaction(milvus: MilvusClient) -> None:
    name = _collection(milvus)
    _fill(milvus, name)
    milvus.flush(name)
    milvus.insert(name, [{"id": i, "x": 30 + i, "v": [float(i), 2.0]} for i in range(6, 9)], partition_name="p2")
    milvus.flush(name)
    milvus.delete(name, ids=[0, 1, 6], partition_name="p2")
    milvus.delete(name, ids=[5], partition_name="p1")
    milvus.flush(name)
    for _ in range(2):  # the L0 deletes are folded into the segments, then the segments merged
        wait_compaction(milvus, milvus.compact(name))
    assert all(s.level != 1 for s in milvus.list_persistent_segments(name)), "L0 deletes were not folded"
    assert _in(milvus, name, "p1") == {i: 10 + i for i in range(5)}
    assert _in(milvus, name, "p2") == {2: 22, 7: 37, 8: 38}
    assert _count(milvus, name) == 8
    milvus.drop_collection(name)
