"""Partitions through pymilvus: DDL, writes and reads scoped to partitions, load/release, partition key.

Against the session's standalone. Rows are in growing segments, then in
flushed (sealed) ones, and each read is checked against what was written
where.
"""

from __future__ import annotations

import pytest
from pymilvus import DataType, MilvusClient, MilvusException

from tests.e2e.util import unique_name

STRONG = "Strong"


def _collection(milvus: MilvusClient, **extra: object) -> str:
    name = unique_name("part")
    schema = MilvusClient.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("v", DataType.FLOAT_VECTOR, dim=4)
    params = milvus.prepare_index_params()
    params.add_index("v", index_type="FLAT", metric_type="L2")
    milvus.create_collection(name, schema=schema, index_params=params, num_shards=2, **extra)
    return name


def _ids(milvus: MilvusClient, name: str, partitions: list[str] | None = None) -> list[int]:
    rows = milvus.query(name, filter="id >= 0", partition_names=partitions, consistency_level=STRONG)
    return sorted(r["id"] for r in rows)


def _rows(ids: range, y: float) -> list[dict[str, object]]:
    return [{"id": i, "v": [float(i), y, 0.0, 0.0]} for i in ids]


def test_partition_ddl(milvus: MilvusClient) -> None:
    name = _collection(milvus)
    assert milvus.list_partitions(name) == ["_default"]
    milvus.create_partition(name, "p1")
    milvus.create_partition(name, "p1")  # again: a no-op, as in Milvus
    assert milvus.list_partitions(name) == ["_default", "p1"]
    assert milvus.has_partition(name, "p1") and not milvus.has_partition(name, "p2")
    for bad, message in (("(mn)", "Invalid partition name"), ("a b", "Invalid partition name"), ("x" * 300, "length")):
        with pytest.raises(MilvusException, match=message):
            milvus.create_partition(name, bad)
    with pytest.raises(MilvusException, match="default partition cannot be deleted"):
        milvus.drop_partition(name, "_default")
    with pytest.raises(MilvusException, match="partition is loaded"):
        milvus.drop_partition(name, "p1")
    assert milvus.list_partitions(name) == ["_default", "p1"]
    milvus.drop_collection(name)


def test_writes_and_reads_stay_in_their_partitions_before_and_after_flush(milvus: MilvusClient) -> None:
    name = _collection(milvus)
    milvus.create_partition(name, "p1")
    milvus.insert(name, _rows(range(0, 20), 0.0))
    milvus.insert(name, _rows(range(100, 110), 1.0), partition_name="p1")
    with pytest.raises(MilvusException, match=r"partition not found\[partition=nope\]"):
        milvus.insert(name, _rows(range(500, 501), 0.0), partition_name="nope")
    for step in ("growing", "flushed"):
        if step == "flushed":
            milvus.flush(name)
            milvus.release_collection(name)
            milvus.load_collection(name)
        assert _ids(milvus, name, ["p1"]) == list(range(100, 110)), step
        assert _ids(milvus, name, ["_default"]) == list(range(20)), step
        assert _ids(milvus, name) == [*range(20), *range(100, 110)], step
        assert _ids(milvus, name, ["_default", "p1"]) == [*range(20), *range(100, 110)], step
        hits = milvus.search(
            name, data=[[0.0, 0.0, 0.0, 0.0]], limit=5, partition_names=["p1"], consistency_level=STRONG
        )
        assert [h["id"] for h in hits[0]] == [100, 101, 102, 103, 104], step
        count = milvus.query(
            name, filter="", output_fields=["count(*)"], partition_names=["p1"], consistency_level=STRONG
        )
        assert count[0]["count(*)"] == 10, step
    assert milvus.get_partition_stats(name, "p1")["row_count"] == 10  # flushed rows, as Milvus counts
    # A delete scoped to a partition removes the matching rows found there.
    milvus.delete(name, filter="id >= 105", partition_name="p1")
    assert _ids(milvus, name, ["p1"]) == list(range(100, 105))
    assert _ids(milvus, name, ["_default"]) == list(range(20))
    # An upsert into a partition replaces the key's row there; as in Milvus, its row in another
    # partition stays (the upsert's delete names its own partition).
    milvus.upsert(name, _rows(range(0, 1), 5.0), partition_name="p1")
    assert _ids(milvus, name, ["p1"]) == [0, *range(100, 105)]
    assert _ids(milvus, name, ["_default"]) == list(range(20))
    milvus.drop_collection(name)


def test_load_and_release_partitions_and_drop_one(milvus: MilvusClient) -> None:
    name = _collection(milvus)
    milvus.create_partition(name, "p1")
    milvus.create_partition(name, "p2")
    milvus.insert(name, _rows(range(0, 5), 0.0))
    milvus.insert(name, _rows(range(10, 15), 0.0), partition_name="p1")
    milvus.insert(name, _rows(range(20, 25), 0.0), partition_name="p2")
    milvus.flush(name)
    milvus.insert(name, _rows(range(30, 33), 0.0), partition_name="p2")  # growing

    milvus.release_partitions(name, ["p1"])
    assert str(milvus.get_load_state(name, partition_name="p1")["state"]) == "NotLoad"
    with pytest.raises(MilvusException, match=r"partition not loaded\[partition=p1\]"):
        milvus.query(name, filter="id >= 0", partition_names=["p1"], consistency_level=STRONG)
    assert _ids(milvus, name) == [*range(0, 5), *range(20, 25), *range(30, 33)]

    milvus.release_partitions(name, ["p2"])
    milvus.drop_partition(name, "p2")
    assert milvus.list_partitions(name) == ["_default", "p1"]
    assert _ids(milvus, name) == list(range(0, 5))
    with pytest.raises(MilvusException, match=r"partition not found\[partition=p2\]"):
        milvus.insert(name, _rows(range(40, 41), 0.0), partition_name="p2")

    milvus.release_collection(name)
    milvus.load_partitions(name, ["p1"])
    assert str(milvus.get_load_state(name)["state"]) == "Loaded"
    assert _ids(milvus, name) == list(range(10, 15))
    milvus.load_partitions(name, ["_default"])
    assert _ids(milvus, name) == [*range(0, 5), *range(10, 15)]
    # A partition created while the whole collection is loaded is read too.
    milvus.release_collection(name)
    milvus.load_collection(name)
    milvus.create_partition(name, "p3")
    milvus.insert(name, _rows(range(50, 52), 0.0), partition_name="p3")
    assert _ids(milvus, name, ["p3"]) == [50, 51]
    assert _ids(milvus, name) == [*range(0, 5), *range(10, 15), 50, 51]
    milvus.drop_collection(name)


def test_a_new_partition_is_loaded_as_milvus_load_types_say(milvus: MilvusClient) -> None:
    """A collection loaded whole (load_collection) loads partitions created later, also after one of its
    partitions was released; one loaded by load_partitions does not."""
    name = _collection(milvus)
    milvus.create_partition(name, "p1")
    milvus.insert(name, _rows(range(0, 3), 0.0))
    milvus.insert(name, _rows(range(10, 13), 0.0), partition_name="p1")
    milvus.release_partitions(name, ["p1"])
    milvus.create_partition(name, "p2")
    milvus.insert(name, _rows(range(20, 23), 0.0), partition_name="p2")
    assert _ids(milvus, name) == [0, 1, 2, 20, 21, 22]
    assert _ids(milvus, name, ["p2"]) == [20, 21, 22]
    milvus.load_partitions(name, ["p1"])
    assert _ids(milvus, name) == [0, 1, 2, 10, 11, 12, 20, 21, 22]

    milvus.release_collection(name)
    milvus.load_partitions(name, ["_default"])
    milvus.create_partition(name, "p3")
    milvus.insert(name, _rows(range(30, 33), 0.0), partition_name="p3")
    assert _ids(milvus, name) == [0, 1, 2]
    with pytest.raises(MilvusException, match=r"partition not loaded\[partition=p3\]"):
        milvus.query(name, filter="id >= 0", partition_names=["p3"], consistency_level=STRONG)
    milvus.load_collection(name)  # now a collection load: every partition
    assert _ids(milvus, name) == [0, 1, 2, 10, 11, 12, 20, 21, 22, 30, 31, 32]
    milvus.drop_collection(name)


def test_partition_key_routes_rows_and_refuses_manual_partitions(milvus: MilvusClient) -> None:
    name = unique_name("pkey")
    schema = MilvusClient.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("tenant", DataType.VARCHAR, max_length=16, is_partition_key=True)
    schema.add_field("v", DataType.FLOAT_VECTOR, dim=4)
    params = milvus.prepare_index_params()
    params.add_index("v", index_type="FLAT", metric_type="L2")
    milvus.create_collection(name, schema=schema, index_params=params, num_partitions=4)
    assert milvus.list_partitions(name) == [f"_default_{i}" for i in range(4)]
    assert milvus.describe_collection(name)["num_partitions"] == 4
    rows = [{"id": i, "tenant": f"t{i % 5}", "v": [float(i), 0.0, 0.0, 0.0]} for i in range(50)]
    milvus.insert(name, rows)
    got = milvus.query(name, filter='tenant == "t3"', output_fields=["tenant"], consistency_level=STRONG)
    assert sorted(r["id"] for r in got) == [i for i in range(50) if i % 5 == 3]
    # The rows are spread over more than one partition (partition stats count flushed rows, as Milvus).
    milvus.flush(name)
    per = [milvus.get_partition_stats(name, p)["row_count"] for p in milvus.list_partitions(name)]
    assert sum(per) == 50 and sum(1 for n in per if n) > 1
    for call in (
        lambda: milvus.insert(name, rows[:1], partition_name="_default_0"),
        lambda: milvus.query(name, filter="id >= 0", partition_names=["_default_0"]),
        lambda: milvus.create_partition(name, "p9"),
    ):
        with pytest.raises(MilvusException, match="partition key"):
            call()
    milvus.drop_collection(name)


def test_partition_stats_need_no_load_and_count_flushed_rows_as_milvus(milvus: MilvusClient) -> None:
    name = _collection(milvus)
    milvus.create_partition(name, "p1")
    milvus.insert(name, _rows(range(0, 10), 0.0), partition_name="p1")
    milvus.insert(name, _rows(range(100, 105), 0.0))
    milvus.flush(name)
    milvus.release_collection(name)  # Milvus answers partition statistics without a load
    assert milvus.get_partition_stats(name, "p1")["row_count"] == 10
    assert milvus.get_partition_stats(name, "_default")["row_count"] == 5
    milvus.load_collection(name)
    milvus.delete(name, ids=[1, 2])
    milvus.flush(name)
    # Deleted rows stay counted until compaction removes them (Milvus 2.3.5 answers the same).
    assert milvus.get_partition_stats(name, "p1")["row_count"] == 10
    with pytest.raises(MilvusException, match=r"partition not found\[partition=nope\]"):
        milvus.get_partition_stats(name, "nope")
    milvus.drop_collection(name)
