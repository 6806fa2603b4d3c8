"""DescribeCollection, DescribeDatabase and ListDatabases answer as Milvus 2.6 does (issue #27).

A new collection has Milvus' default property ``timezone: UTC`` (rootcoord's createCollectionTask),
in the response and in its schema, and the database fields; the "default" database is described
with id 1 and its creation time (nanoseconds, as Milvus keeps it), which is what pymilvus'
``use_database("default")`` asks for; another database is Milvus' "database not found".
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import grpc
import pytest
from pymilvus import MilvusClient, MilvusException
from pymilvus.grpc_gen import milvus_pb2, milvus_pb2_grpc

from common.tsoutil import physical_ms
from tests.e2e.util import unique_name
from tests.harness import Standalone


@pytest.fixture()
def stub(standalone: Standalone) -> Iterator[milvus_pb2_grpc.MilvusServiceStub]:
    with grpc.insecure_channel(standalone.uri.removeprefix("http://")) as channel:
        yield milvus_pb2_grpc.MilvusServiceStub(channel)


def test_a_new_collection_is_described_with_milvus_defaults(
    stub: milvus_pb2_grpc.MilvusServiceStub, milvus: MilvusClient
) -> None:
    name = unique_name("described")
    milvus.create_collection(name, dimension=2)
    desc = milvus.describe_collection(name)
    assert desc["properties"] == {"timezone": "UTC"}
    assert (desc["num_shards"], desc["num_partitions"], desc["enable_dynamic_field"]) == (1, 1, True)
    raw = stub.DescribeCollection(milvus_pb2.DescribeCollectionRequest(collection_name=name), timeout=30)
    assert (raw.db_name, raw.db_id) == ("default", 1)
    assert {p.key: p.value for p in raw.schema.properties} == {"timezone": "UTC"}
    assert raw.created_utc_timestamp == physical_ms(raw.created_timestamp) > 0
    assert len(raw.virtual_channel_names) == len(raw.physical_channel_names) == raw.shards_num == 1

    milvus.alter_collection_properties(name, properties={"timezone": "Asia/Shanghai"})
    assert milvus.describe_collection(name)["properties"]["timezone"] == "Asia/Shanghai"
    with pytest.raises(MilvusException) as err:
        milvus.alter_collection_properties(name, properties={"timezone": "Mars/Olympus"})
    assert (err.value.code, err.value.message) == (1100, "unknown or invalid IANA Time Zone ID: Mars/Olympus: invalid parameter")
    assert milvus.describe_collection(name)["properties"]["timezone"] == "Asia/Shanghai"
    milvus.drop_collection(name)

    other = unique_name("described")
    milvus.create_collection(other, dimension=2, properties={"collection.ttl.seconds": "60", "timezone": "Europe/Paris"})
    assert milvus.describe_collection(other)["properties"] == {"collection.ttl.seconds": "60", "timezone": "Europe/Paris"}
    milvus.drop_collection(other)


def test_the_default_database_is_described_as_milvus(stub: milvus_pb2_grpc.MilvusServiceStub, milvus: MilvusClient) -> None:
    assert milvus.describe_database("default") == {"name": "default"}
    raw = stub.DescribeDatabase(milvus_pb2.DescribeDatabaseRequest(db_name="default"), timeout=30)
    assert (raw.status.code, raw.db_name, raw.dbID, list(raw.properties)) == (0, "default", 1, [])
    # Created with the cluster, in nanoseconds since the epoch, and the same on every call.
    assert 0 < raw.created_timestamp <= time.time_ns()
    again = stub.DescribeDatabase(milvus_pb2.DescribeDatabaseRequest(), timeout=30)  # "" is the default one
    assert (again.db_name, again.created_timestamp) == ("default", raw.created_timestamp)

    assert milvus.list_databases() == ["default"]
    listed = stub.ListDatabases(milvus_pb2.ListDatabasesRequest(), timeout=30)
    assert (list(listed.db_names), list(listed.db_ids), list(listed.created_timestamp)) == (
        ["default"],
        [1],
        [raw.created_timestamp],
    )

    milvus.use_database("default")  # pymilvus describes the database first
    assert isinstance(milvus.list_collections(), list)


def test_a_missing_database_is_not_found(milvus: MilvusClient) -> None:
    with pytest.raises(MilvusException) as err:
        milvus.describe_database("nodb")
    assert (err.value.code, err.value.message) == (800, "database not found[database=nodb]")
    with pytest.raises(MilvusException) as err:
        milvus.use_database("nodb")
    assert err.value.code == 800
