"""truncate_collection empties a collection and keeps everything else about it."""

from __future__ import annotations

from pymilvus import DataType, MilvusClient

from tests.e2e.util import unique_name

STRONG = "Strong"


def _count(milvus: MilvusClient, name: str) -> int:
    return milvus.query(name, filter="", output_fields=["count(*)"], consistency_level=STRONG)[0]["count(*)"]


def test_truncate_keeps_schema_partitions_indexes_aliases_and_load_state(milvus: MilvusClient) -> None:
    name, alias = unique_name("trunc"), unique_name("trunc_alias")
    schema = MilvusClient.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("v", DataType.FLOAT_VECTOR, dim=4)
    params = milvus.prepare_index_params()
    params.add_index("v", index_type="HNSW", metric_type="L2", params={"M": 8, "efConstruction": 64})
    milvus.create_collection(name, schema=schema, index_params=params, num_shards=2)
    milvus.create_partition(name, "p1")
    milvus.create_alias(name, alias)
    rows = [{"id": i, "v": [float(i), 0.0, 0.0, 0.0]} for i in range(100)]
    milvus.insert(name, rows[:60])
    milvus.flush(name)
    milvus.insert(name, rows[60:], partition_name="p1")
    assert _count(milvus, name) == 100
    old_id = milvus.describe_collection(name)["collection_id"]

    milvus.truncate_collection(name)

    assert _count(milvus, name) == 0
    assert _count(milvus, alias) == 0
    assert milvus.describe_collection(name)["collection_id"] != old_id
    assert milvus.list_partitions(name) == ["_default", "p1"]
    assert milvus.list_indexes(name) == ["v"]
    assert milvus.describe_index(name, "v")["index_type"] == "HNSW"
    assert milvus.list_aliases(name)["aliases"] == [alias]
    assert str(milvus.get_load_state(name)["state"]) == "Loaded"
    milvus.insert(alias, rows[:5], partition_name="p1")
    got = milvus.query(name, filter="id >= 0", partition_names=["p1"], consistency_level=STRONG)
    assert sorted(r["id"] for r in got) == [0, 1, 2, 3, 4]
    hits = milvus.search(name, data=[[0.0, 0.0, 0.0, 0.0]], limit=3, consistency_level=STRONG)
    assert [h["id"] for h in hits[0]] == [0, 1, 2]
    milvus.drop_alias(alias)
    milvus.drop_collection(name)


def test_truncating_a_released_collection_leaves_it_released(milvus: MilvusClient) -> None:
    name = unique_name("trunc")
    milvus.create_collection(name, dimension=4)
    milvus.insert(name, [{"id": i, "vector": [1.0, 0.0, 0.0, 0.0]} for i in range(10)])
    milvus.release_collection(name)
    milvus.truncate_collection(name)
    assert str(milvus.get_load_state(name)["state"]) == "NotLoad"
    milvus.load_collection(name)
    assert _count(milvus, name) == 0
    milvus.drop_collection(name)


def test_truncate_keeps_a_released_partition_released(milvus: MilvusClient) -> None:
    name = unique_name("trunc")
    milvus.create_collection(name, dimension=4)
    milvus.create_partition(name, "p1")
    milvus.release_partitions(name, ["p1"])
    milvus.truncate_collection(name)
    assert _count(milvus, name) == 0  # waits for the load
    assert str(milvus.get_load_state(name, partition_name="p1")["state"]) == "NotLoad"
    assert str(milvus.get_load_state(name, partition_name="_default")["state"]) == "Loaded"
    milvus.create_partition(name, "p2")  # still a collection load: a new partition is loaded
    milvus.insert(name, [{"id": 1, "vector": [1.0, 0.0, 0.0, 0.0]}], partition_name="p2")
    assert _count(milvus, name) == 1
    milvus.drop_collection(name)
