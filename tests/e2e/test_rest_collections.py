"""The RESTful API v2's collections, indexes, partitions, aliases and databases over plain HTTP,
their JSON shaped as Milvus 2.6 documents it, and their effects seen through pymilvus."""

from __future__ import annotations

from pymilvus import DataType, MilvusClient

from tests.e2e.restutil import ok, post, wait_loaded
from tests.e2e.util import unique_name
from tests.harness import Standalone

CUSTOM_FIELDS = [
    {"fieldName": "my_id", "dataType": "Int64", "isPrimary": True},
    {"fieldName": "my_vector", "dataType": "FloatVector", "elementTypeParams": {"dim": 5}},
    {"fieldName": "my_varchar", "dataType": "VarChar", "isPartitionKey": False, "elementTypeParams": {"max_length": 64}},
    {"fieldName": "tags", "dataType": "Array", "elementDataType": "Int64", "elementTypeParams": {"max_capacity": 8}},
    {"fieldName": "score", "dataType": "Double", "nullable": True},
]


def test_quick_setup_create_describe_list_has_stats_drop(standalone: Standalone, milvus: MilvusClient) -> None:
    name = unique_name()
    assert post(standalone, "collections/create", {"collectionName": name, "dimension": 5}) == {"code": 0, "data": {}}
    wait_loaded(standalone, name)
    desc = ok(standalone, "collections/describe", {"collectionName": name})
    assert set(desc) >= {"aliases", "autoId", "collectionID", "collectionName", "consistencyLevel", "description",
                         "enableDynamicField", "fields", "functions", "indexes", "load", "partitionsNum",
                         "properties", "shardsNum"}
    assert desc["collectionName"] == name and desc["load"] == "LoadStateLoaded"
    assert desc["enableDynamicField"] is True and desc["autoId"] is False and desc["consistencyLevel"] == "Bounded"
    fields = {f["name"]: f for f in desc["fields"]}
    assert fields["id"]["type"] == "Int64" and fields["id"]["primaryKey"] is True
    assert fields["vector"]["type"] == "FloatVector" and fields["vector"]["params"] == [{"key": "dim", "value": "5"}]
    # Quick setup: an AUTOINDEX with COSINE (Milvus's default) on "vector", as pymilvus sees it.
    assert desc["indexes"] == [{"fieldName": "vector", "indexName": "vector", "metricType": "COSINE"}]
    assert milvus.describe_index(name, "vector")["metric_type"] == "COSINE"
    assert desc["partitionsNum"] == 1 and desc["collectionID"] == milvus.describe_collection(name)["collection_id"]
    assert name in ok(standalone, "collections/list", {})
    assert ok(standalone, "collections/has", {"collectionName": name}) == {"has": True}
    assert ok(standalone, "collections/get_stats", {"collectionName": name}) == {"rowCount": 0}
    assert ok(standalone, "collections/drop", {"collectionName": name}) == {}
    assert ok(standalone, "collections/has", {"collectionName": name}) == {"has": False}
    assert not milvus.has_collection(name)


def test_quick_setup_options(standalone: Standalone, milvus: MilvusClient) -> None:
    name = unique_name()
    ok(standalone, "collections/create", {
        "collectionName": name, "dimension": 4, "metricType": "L2", "idType": "VarChar", "autoID": False,
        "primaryFieldName": "pk", "vectorFieldName": "emb", "params": {"max_length": 32, "consistencyLevel": "Strong"},
    })
    desc = milvus.describe_collection(name)
    pk = next(f for f in desc["fields"] if f.get("is_primary"))
    assert pk["name"] == "pk" and pk["type"] == DataType.VARCHAR and pk["params"]["max_length"] == 32
    assert milvus.describe_index(name, "emb")["metric_type"] == "L2"
    assert ok(standalone, "collections/describe", {"collectionName": name})["consistencyLevel"] == "Strong"
    ok(standalone, "collections/drop", {"collectionName": name})


def test_custom_schema_without_indexes_is_not_loaded(standalone: Standalone, milvus: MilvusClient) -> None:
    name = unique_name()
    ok(standalone, "collections/create", {
        "collectionName": name, "schema": {"autoId": False, "enableDynamicField": False, "fields": CUSTOM_FIELDS}})
    desc = milvus.describe_collection(name)
    fields = {f["name"]: f for f in desc["fields"]}
    assert fields["my_id"]["is_primary"] and fields["my_vector"]["params"]["dim"] == 5
    assert fields["tags"]["type"] == DataType.ARRAY and fields["tags"]["element_type"] == DataType.INT64
    assert fields["score"].get("nullable") is True and desc["enable_dynamic_field"] is False
    assert ok(standalone, "collections/get_load_state", {"collectionName": name}) == {"loadState": "LoadStateNotLoad"}
    rest = ok(standalone, "collections/describe", {"collectionName": name})
    assert rest["indexes"] == [] and rest["load"] == "LoadStateNotLoad"
    assert {f["name"]: f.get("elementType") for f in rest["fields"]}["tags"] == "Int64"
    # Indexes, then load and release, each by its endpoint.
    ok(standalone, "indexes/create", {"collectionName": name, "indexParams": [
        {"fieldName": "my_vector", "indexName": "vidx", "metricType": "IP", "indexType": "HNSW",
         "params": {"M": 8, "efConstruction": 64}}]})
    assert ok(standalone, "indexes/list", {"collectionName": name}) == ["vidx"]
    [index] = ok(standalone, "indexes/describe", {"collectionName": name, "indexName": "vidx"})
    assert set(index) == {"failReason", "fieldName", "indexName", "indexState", "indexType", "indexedRows",
                          "metricType", "pendingRows", "totalRows"}
    assert (index["fieldName"], index["indexType"], index["metricType"]) == ("my_vector", "HNSW", "IP")
    assert milvus.describe_index(name, "vidx")["params"] == {"M": 8, "efConstruction": 64}
    ok(standalone, "collections/load", {"collectionName": name})
    wait_loaded(standalone, name)
    ok(standalone, "collections/release", {"collectionName": name})
    assert ok(standalone, "collections/get_load_state", {"collectionName": name})["loadState"] == "LoadStateNotLoad"
    ok(standalone, "indexes/drop", {"collectionName": name, "indexName": "vidx"})
    assert milvus.list_indexes(name) == []
    ok(standalone, "collections/drop", {"collectionName": name})


def test_custom_schema_with_index_params_is_loaded(standalone: Standalone) -> None:
    name = unique_name()
    ok(standalone, "collections/create", {
        "collectionName": name, "schema": {"fields": CUSTOM_FIELDS[:2]},
        "indexParams": [{"fieldName": "my_vector", "metricType": "L2", "indexType": "AUTOINDEX"}]})
    wait_loaded(standalone, name)
    assert ok(standalone, "collections/describe", {"collectionName": name})["indexes"] == [
        {"fieldName": "my_vector", "indexName": "my_vector", "metricType": "L2"}]
    ok(standalone, "collections/drop", {"collectionName": name})


def test_rename(standalone: Standalone, milvus: MilvusClient) -> None:
    old, new = unique_name(), unique_name()
    ok(standalone, "collections/create", {"collectionName": old, "dimension": 4})
    assert ok(standalone, "collections/rename", {"collectionName": old, "newCollectionName": new}) == {}
    assert milvus.has_collection(new) and not milvus.has_collection(old)
    ok(standalone, "collections/drop", {"collectionName": new})


def test_partitions(standalone: Standalone, milvus: MilvusClient) -> None:
    name = unique_name()
    ok(standalone, "collections/create", {"collectionName": name, "dimension": 4})
    body = {"collectionName": name, "partitionName": "p1"}
    assert ok(standalone, "partitions/create", body) == {}
    assert ok(standalone, "partitions/has", body) == {"has": True}
    assert ok(standalone, "partitions/list", {"collectionName": name}) == ["_default", "p1"]
    assert milvus.list_partitions(name) == ["_default", "p1"]
    ok(standalone, "entities/insert", {"collectionName": name, "partitionName": "p1",
                                       "data": [{"id": 1, "vector": [1, 2, 3, 4]}]})
    milvus.flush(name)
    assert ok(standalone, "partitions/get_stats", body) == {"rowCount": 1}
    ok(standalone, "collections/release", {"collectionName": name})
    assert ok(standalone, "partitions/load", {"collectionName": name, "partitionNames": ["p1"]}) == {}
    assert ok(standalone, "partitions/release", {"collectionName": name, "partitionNames": ["p1"]}) == {}
    assert ok(standalone, "partitions/drop", body) == {}
    assert ok(standalone, "partitions/has", body) == {"has": False}
    ok(standalone, "collections/drop", {"collectionName": name})


def test_aliases(standalone: Standalone, milvus: MilvusClient) -> None:
    a, b, alias = unique_name(), unique_name(), unique_name()
    for name in (a, b):
        ok(standalone, "collections/create", {"collectionName": name, "dimension": 4})
    assert ok(standalone, "aliases/create", {"collectionName": a, "aliasName": alias}) == {}
    assert ok(standalone, "aliases/describe", {"aliasName": alias}) == {
        "aliasName": alias, "collectionName": a, "dbName": "default"}
    assert ok(standalone, "aliases/list", {"collectionName": a}) == [alias]
    assert ok(standalone, "aliases/alter", {"collectionName": b, "aliasName": alias}) == {}
    assert milvus.describe_alias(alias)["collection_name"] == b
    assert ok(standalone, "collections/describe", {"collectionName": b})["aliases"] == [alias]
    assert ok(standalone, "aliases/drop", {"aliasName": alias}) == {}
    assert milvus.list_aliases(b)["aliases"] == []
    for name in (a, b):
        ok(standalone, "collections/drop", {"collectionName": name})


def test_databases_and_db_name(standalone: Standalone) -> None:
    db, name = unique_name(), unique_name()
    assert ok(standalone, "databases/create", {"dbName": db, "properties": {"database.max.collections": 5}}) == {}
    assert db in ok(standalone, "databases/list", {})
    described = ok(standalone, "databases/describe", {"dbName": db})
    assert described["dbName"] == db and isinstance(described["dbID"], int)
    assert {"key": "database.max.collections", "value": "5"} in described["properties"]
    # dbName in a body: the call works in that database, as pymilvus's db_name.
    ok(standalone, "collections/create", {"dbName": db, "collectionName": name, "dimension": 4})
    assert ok(standalone, "collections/list", {"dbName": db}) == [name]
    assert name not in ok(standalone, "collections/list", {})
    client = MilvusClient(standalone.uri, db_name=db)
    try:
        assert client.list_collections() == [name]
    finally:
        client.close()
    ok(standalone, "collections/drop", {"dbName": db, "collectionName": name})
    assert ok(standalone, "databases/drop", {"dbName": db}) == {}
    assert db not in ok(standalone, "databases/list", {})
