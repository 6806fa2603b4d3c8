"""Names are checked first, and missing things are reported, as Milvus 2.6 does (issue #27).

Each RPC that takes a collection, partition or alias name refuses a bad one with Milvus's text and
code before it looks anything up; the ones Milvus does not check (Search, HybridSearch, the
statistics) report a bad name as a missing collection. Not-found messages carry
``[database=default]``. The expected texts are Milvus's (``internal/proxy/util.go``, ``pkg/util/merr``),
read back from a real Milvus 2.3.5 where it has them. Raw gRPC calls check the codes pymilvus does
not show (the old ``error_code``); pymilvus calls check what a user sees.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import grpc
import pytest
from pymilvus import DataType, MilvusClient, MilvusException
from pymilvus.grpc_gen import common_pb2, milvus_pb2, milvus_pb2_grpc

from tests.e2e.util import unique_name
from tests.harness import Standalone

BAD_FIRST = "Invalid collection name: 1abc. the first character of a collection name must be an underscore or letter: invalid parameter"
BAD_CHARS = "Invalid collection name: a-b. collection name can only contain numbers, letters and underscores: invalid parameter"


@pytest.fixture()
def stub(standalone: Standalone) -> Iterator[milvus_pb2_grpc.MilvusServiceStub]:
    with grpc.insecure_channel(standalone.uri.removeprefix("http://")) as channel:
        yield milvus_pb2_grpc.MilvusServiceStub(channel)


@pytest.fixture()
def collection(milvus: MilvusClient) -> Iterator[str]:
    name = unique_name("names")
    milvus.create_collection(name, dimension=2, consistency_level="Strong")
    try:
        yield name
    finally:
        milvus.drop_collection(name)


def _status(answer: Any) -> common_pb2.Status:
    return answer if isinstance(answer, common_pb2.Status) else answer.status


# (what, RPC, request for a collection name) for every RPC that checks the name before the lookup.
CHECKED: list[tuple[str, Callable[[str], Any]]] = [
    ("DescribeCollection", lambda n: milvus_pb2.DescribeCollectionRequest(collection_name=n)),
    ("HasCollection", lambda n: milvus_pb2.HasCollectionRequest(collection_name=n)),
    ("DropCollection", lambda n: milvus_pb2.DropCollectionRequest(collection_name=n)),
    ("LoadCollection", lambda n: milvus_pb2.LoadCollectionRequest(collection_name=n)),
    ("ReleaseCollection", lambda n: milvus_pb2.ReleaseCollectionRequest(collection_name=n)),
    ("GetLoadState", lambda n: milvus_pb2.GetLoadStateRequest(collection_name=n)),
    ("GetLoadingProgress", lambda n: milvus_pb2.GetLoadingProgressRequest(collection_name=n)),
    ("Insert", lambda n: milvus_pb2.InsertRequest(collection_name=n, num_rows=1)),
    ("Upsert", lambda n: milvus_pb2.UpsertRequest(collection_name=n, num_rows=1)),
    ("Delete", lambda n: milvus_pb2.DeleteRequest(collection_name=n, expr="id > 0")),
    ("Query", lambda n: milvus_pb2.QueryRequest(collection_name=n, expr="id > 0")),
    ("ShowPartitions", lambda n: milvus_pb2.ShowPartitionsRequest(collection_name=n)),
    ("CreatePartition", lambda n: milvus_pb2.CreatePartitionRequest(collection_name=n, partition_name="p")),
    ("DropPartition", lambda n: milvus_pb2.DropPartitionRequest(collection_name=n, partition_name="p")),
    ("HasPartition", lambda n: milvus_pb2.HasPartitionRequest(collection_name=n, partition_name="p")),
    ("LoadPartitions", lambda n: milvus_pb2.LoadPartitionsRequest(collection_name=n, partition_names=["p"])),
    ("ReleasePartitions", lambda n: milvus_pb2.ReleasePartitionsRequest(collection_name=n, partition_names=["p"])),
    ("CreateAlias", lambda n: milvus_pb2.CreateAliasRequest(collection_name=n, alias=unique_name("al"))),
    ("AlterAlias", lambda n: milvus_pb2.AlterAliasRequest(collection_name=n, alias=unique_name("al"))),
]


@pytest.mark.parametrize(("method", "request_for"), CHECKED, ids=[m for m, _ in CHECKED])
def test_a_bad_collection_name_is_refused_first_with_milvus_text(
    stub: milvus_pb2_grpc.MilvusServiceStub, method: str, request_for: Callable[[str], Any]
) -> None:
    for bad, reason in (("1abc", BAD_FIRST), ("a-b", BAD_CHARS)):
        status = _status(getattr(stub, method)(request_for(bad), timeout=30))
        assert (status.code, status.error_code, status.reason) == (1100, common_pb2.IllegalArgument, reason), method
    status = _status(getattr(stub, method)(request_for(" "), timeout=30))
    assert (status.code, status.reason) == (1100, "collection name should not be empty: invalid parameter"), method


def test_pymilvus_sees_the_name_refused(milvus: MilvusClient) -> None:
    with pytest.raises(MilvusException, match="the first character of a collection name") as err:
        milvus.has_collection("1abc")  # Milvus refuses it; it does not answer False
    assert err.value.code == 1100
    too_long = "a" * 256
    with pytest.raises(MilvusException, match="must be less than 255 characters: invalid parameter"):
        milvus.describe_collection(too_long)
    with pytest.raises(MilvusException, match=BAD_CHARS):
        milvus.drop_collection("a-b")


def test_search_and_statistics_report_a_bad_name_as_a_missing_collection(
    stub: milvus_pb2_grpc.MilvusServiceStub, milvus: MilvusClient
) -> None:
    missing = "collection not found[database=default][collection=1abc]"
    with pytest.raises(MilvusException) as err:
        milvus.search("1abc", data=[[0.0, 1.0]], limit=1)
    assert (err.value.code, err.value.message) == (100, missing)
    status = stub.GetCollectionStatistics(milvus_pb2.GetCollectionStatisticsRequest(collection_name="1abc"), timeout=30).status
    assert (status.code, status.error_code, status.reason) == (100, common_pb2.CollectionNotExists, missing)


def test_not_found_messages_carry_the_database(stub: milvus_pb2_grpc.MilvusServiceStub, milvus: MilvusClient) -> None:
    name = unique_name("missing")
    status = stub.DescribeCollection(milvus_pb2.DescribeCollectionRequest(collection_name=name), timeout=30).status
    assert (status.code, status.error_code, status.reason) == (
        100,
        common_pb2.CollectionNotExists,
        f"can't find collection[database=default][collection={name}]",
    )
    assert milvus.has_collection(name) is False
    milvus.drop_collection(name)  # dropping a missing collection is not an error
    missing = f"collection not found[database=default][collection={name}]"
    for call in (
        lambda: milvus.load_collection(name),
        lambda: milvus.release_collection(name),
        lambda: milvus.get_collection_stats(name),
        lambda: milvus.query(name, filter="id > 0"),
        lambda: milvus.list_partitions(name),
        lambda: milvus.has_partition(name, "p"),
        lambda: milvus.create_alias(name, unique_name("al")),
    ):
        with pytest.raises(MilvusException) as err:
            call()
        assert (err.value.code, err.value.message) == (100, missing)
    alias = unique_name("nope")
    with pytest.raises(MilvusException) as err:
        milvus.describe_alias(alias)
    assert (err.value.code, err.value.message) == (1600, f"alias not found[database=default][alias={alias}]")


def test_partition_names_follow_milvus(stub: milvus_pb2_grpc.MilvusServiceStub, milvus: MilvusClient, collection: str) -> None:
    first = "Invalid partition name: (mn). The first character of a partition name must be an underscore or letter."
    chars = "Invalid partition name: 12 s. Partition name can only contain numbers, letters and underscores."
    with pytest.raises(MilvusException) as err:
        milvus.has_partition(collection, "(mn)")  # refused, not answered False
    assert (err.value.code, err.value.message) == (65535, first)
    with pytest.raises(MilvusException) as err:
        milvus.create_partition(collection, "12 s")
    assert (err.value.code, err.value.message) == (65535, chars)
    with pytest.raises(MilvusException) as err:
        milvus.insert(collection, [{"id": 1, "vector": [0.0, 1.0]}], partition_name="12 s")
    assert (err.value.code, err.value.message) == (65535, chars)
    status = stub.HasPartition(milvus_pb2.HasPartitionRequest(collection_name=collection, partition_name=""), timeout=30).status
    assert (status.code, status.error_code, status.reason) == (
        65535,
        common_pb2.UnexpectedError,
        "Invalid partition name: . Partition name should not be empty.",
    )
    # Milvus 2.6 takes a leading digit and a dash in a partition name.
    assert milvus.has_partition(collection, "1p") is False
    milvus.create_partition(collection, "1p")
    milvus.create_partition(collection, "p-1")
    assert milvus.list_partitions(collection) == ["_default", "1p", "p-1"]
    with pytest.raises(MilvusException) as err:
        milvus.load_partitions(collection, ["nope"])
    assert (err.value.code, err.value.message) == (200, "partition not found[partition=nope]")
    milvus.release_collection(collection)
    milvus.drop_partition(collection, "p-1")
    milvus.drop_partition(collection, "1p")


def test_alias_and_rename_names(milvus: MilvusClient, collection: str) -> None:
    with pytest.raises(MilvusException) as err:
        milvus.create_alias(collection, "1al")
    assert (err.value.code, err.value.message) == (
        1100,
        "Invalid collection alias: 1al. the first character of a collection alias must be an underscore or letter: "
        "invalid parameter",
    )
    with pytest.raises(MilvusException, match="Invalid collection alias: a-b. collection alias can only contain"):
        milvus.drop_alias("a-b")
    with pytest.raises(MilvusException) as err:
        milvus.rename_collection(unique_name("missing"), "1new")  # the new name is checked before the lookup
    assert (err.value.code, err.value.message) == (
        1100,
        "Invalid collection name: 1new. the first character of a collection name must be an underscore or letter: "
        "invalid parameter",
    )
    with pytest.raises(MilvusException) as err:
        milvus.rename_collection(collection, unique_name("moved"), target_db="other")
    assert (err.value.code, err.value.message) == (800, "database not found[database=other]")


def test_bad_field_names_get_milvus_code(milvus: MilvusClient) -> None:
    schema = milvus.create_schema()
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("1v", DataType.FLOAT_VECTOR, dim=2)
    with pytest.raises(MilvusException) as err:
        milvus.create_collection(unique_name("fields"), schema=schema)
    assert (err.value.code, err.value.message) == (
        1701,
        "Invalid field name: 1v. The first character of a field name must be an underscore or letter.: "
        "field name invalid[field=1v]",
    )
