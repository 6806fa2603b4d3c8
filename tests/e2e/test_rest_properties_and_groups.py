"""The RESTful API v2's property endpoints and resource groups over plain HTTP, against the real
standalone: Milvus 2.6's paths and bodies, the effects seen through pymilvus, the refusals the
same code and message as pymilvus gets from the gRPC port."""

from __future__ import annotations

import pytest
from pymilvus import DataType, MilvusClient, MilvusException

from tests.e2e.restutil import ok, post
from tests.e2e.util import unique_name
from tests.harness import Standalone

DEFAULT_GROUP = "__default_resource_group"


def _collection(milvus: MilvusClient) -> str:
    name = unique_name("props")
    schema = MilvusClient.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("s", DataType.VARCHAR, max_length=4)
    schema.add_field("v", DataType.FLOAT_VECTOR, dim=2)
    index = milvus.prepare_index_params()
    index.add_index("v", index_name="v_idx", index_type="FLAT", metric_type="L2")
    milvus.create_collection(name, schema=schema, index_params=index)
    return name


def _refusal(milvus_call: object) -> tuple[int, str]:
    with pytest.raises(MilvusException) as err:
        milvus_call()  # type: ignore[operator]
    return err.value.code, err.value.message


def test_collection_properties_are_altered_and_dropped(standalone: Standalone, milvus: MilvusClient) -> None:
    name = _collection(milvus)
    body = {"collectionName": name, "properties": {"collection.ttl.seconds": 3600, "custom.key": "x"}}
    assert post(standalone, "collections/alter_properties", body) == {"code": 0, "data": {}}
    props = milvus.describe_collection(name)["properties"]
    assert props["collection.ttl.seconds"] == "3600" and props["custom.key"] == "x"
    ok(standalone, "collections/drop_properties", {"collectionName": name, "propertyKeys": ["custom.key"]})
    props = milvus.describe_collection(name)["properties"]
    assert "custom.key" not in props and props["collection.ttl.seconds"] == "3600"
    # A bad value: the gRPC port's code and message, and nothing changes.
    expected = _refusal(lambda: milvus.alter_collection_properties(name, properties={"collection.ttl.seconds": "soon"}))
    answer = post(standalone, "collections/alter_properties",
                  {"collectionName": name, "properties": {"collection.ttl.seconds": "soon"}})
    assert (answer["code"], answer["message"]) == expected
    assert milvus.describe_collection(name)["properties"]["collection.ttl.seconds"] == "3600"
    milvus.drop_collection(name)


def test_field_properties_are_altered(standalone: Standalone, milvus: MilvusClient) -> None:
    name = _collection(milvus)
    with pytest.raises(MilvusException, match="length"):
        milvus.insert(name, [{"id": 1, "s": "abcdef", "v": [0.0, 1.0]}])
    ok(standalone, "collections/fields/alter_properties",
       {"collectionName": name, "fieldName": "s", "fieldParams": {"max_length": 8}})
    field = next(f for f in milvus.describe_collection(name)["fields"] if f["name"] == "s")
    assert field["params"]["max_length"] == 8
    milvus.insert(name, [{"id": 1, "s": "abcdef", "v": [0.0, 1.0]}])
    expected = _refusal(lambda: milvus.alter_collection_field(name, "nope", field_params={"max_length": 8}))
    answer = post(standalone, "collections/fields/alter_properties",
                  {"collectionName": name, "fieldName": "nope", "fieldParams": {"max_length": 8}})
    assert (answer["code"], answer["message"]) == expected
    assert post(standalone, "collections/fields/alter_properties", {"collectionName": name})["code"] == 1802
    milvus.drop_collection(name)


def test_index_properties_are_altered_and_dropped(standalone: Standalone, milvus: MilvusClient) -> None:
    name = _collection(milvus)
    milvus.release_collection(name)
    before = milvus.describe_index(name, "v_idx")
    ok(standalone, "indexes/alter_properties",
       {"collectionName": name, "indexName": "v_idx", "properties": {"mmap.enabled": True}})
    assert milvus.describe_index(name, "v_idx") == {**before, "mmap.enabled": "true"}  # Milvus's REST sends "true"
    ok(standalone, "indexes/drop_properties",
       {"collectionName": name, "indexName": "v_idx", "propertyKeys": ["mmap.enabled"]})
    assert milvus.describe_index(name, "v_idx") == before
    expected = _refusal(lambda: milvus.alter_index_properties(name, "v_idx", properties={"index_type": "HNSW"}))
    answer = post(standalone, "indexes/alter_properties",
                  {"collectionName": name, "indexName": "v_idx", "properties": {"index_type": "HNSW"}})
    assert (answer["code"], answer["message"]) == expected
    assert milvus.describe_index(name, "v_idx") == before
    milvus.drop_collection(name)


def test_database_properties_are_altered_and_dropped(standalone: Standalone, milvus: MilvusClient) -> None:
    db = unique_name("propdb")
    ok(standalone, "databases/create", {"dbName": db, "properties": {"key_1": "a"}})
    ok(standalone, "databases/alter_properties", {"dbName": db, "properties": {"database.max.collections": 7}})
    props = milvus.describe_database(db)
    assert props["key_1"] == "a" and props["database.max.collections"] == "7"
    ok(standalone, "databases/drop_properties", {"dbName": db, "propertyKeys": ["key_1", "absent"]})
    props = milvus.describe_database(db)
    assert "key_1" not in props and props["database.max.collections"] == "7"
    assert post(standalone, "databases/drop_properties", {"propertyKeys": ["x"]})["code"] == 1802
    milvus.drop_database(db)


def test_resource_groups_answer_as_the_grpc_port(standalone: Standalone, milvus: MilvusClient) -> None:
    assert ok(standalone, "resource_groups/list", {}) == [DEFAULT_GROUP] == milvus.list_resource_groups()
    group = ok(standalone, "resource_groups/describe", {"name": DEFAULT_GROUP})["resource_group"]
    seen = milvus.describe_resource_group(DEFAULT_GROUP)
    assert group["name"] == DEFAULT_GROUP and group["capacity"] == seen.capacity == 1_000_000
    assert group["num_available_node"] == seen.num_available_node >= 1
    assert group["config"] == {"requests": {}, "limits": {"node_num": 1_000_000}}
    assert [n["node_id"] for n in group["nodes"]] == [n.node_id for n in seen.nodes]
    # Creating the default group again with its own config changes nothing; with another, and a
    # second group, are refused as over gRPC.
    own = {"requests": {"node_num": 0}, "limits": {"node_num": 1_000_000}}
    ok(standalone, "resource_groups/create", {"name": DEFAULT_GROUP, "config": own})
    ok(standalone, "resource_groups/alter", {"resource_groups": {DEFAULT_GROUP: own}})
    ok(standalone, "resource_groups/drop", {"name": "never_made"})  # Milvus: dropping a missing group succeeds
    name = _collection(milvus)
    cases = [
        ("resource_groups/create", {"name": "rg_2"}, lambda: milvus.create_resource_group("rg_2")),
        ("resource_groups/drop", {"name": DEFAULT_GROUP}, lambda: milvus.drop_resource_group(DEFAULT_GROUP)),
        ("resource_groups/alter", {"resource_groups": {"rg_2": own}},
         lambda: milvus.update_resource_groups({"rg_2": own})),
        ("resource_groups/transfer_replica",
         {"sourceRgName": DEFAULT_GROUP, "targetRgName": "rg_2", "collectionName": name, "replicaNum": 1},
         lambda: milvus.transfer_replica(DEFAULT_GROUP, "rg_2", name, 1)),
    ]
    for path, body, grpc_call in cases:
        answer = post(standalone, path, body)
        assert (answer["code"], answer["message"]) == _refusal(grpc_call), path
    assert ok(standalone, "resource_groups/list", {}) == [DEFAULT_GROUP]
    assert post(standalone, "resource_groups/transfer_replica",
                {"sourceRgName": DEFAULT_GROUP, "targetRgName": "x", "collectionName": name})["code"] == 1802
    answer = post(standalone, "resource_groups/create", {"name": "rg_3", "config": {"limits": {"node_num": "many"}}})
    assert answer["code"] == 1100 and "config.limits" in answer["message"]
    milvus.drop_collection(name)
