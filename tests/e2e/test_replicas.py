"""GetReplicas as Milvus answers it, through pymilvus (MilvusClient.describe_replica, Collection.get_replicas)
and its stub, against the session's standalone.

A loaded collection has one replica (``load_collection`` loads one) on the
standalone's query node, with a shard per vchannel whose leader is that node.
``with_shard_nodes`` (what pymilvus sends) lists the nodes serving each shard,
the leader included; without it a shard lists its leader only. The partitions
listed are the loaded ones. A collection that is not loaded, or an unknown
collection id, has no replicas: an empty success, as in Milvus 2.6 (2.3 answered
an error); an unknown collection name, even a malformed one, is "collection not
found" (looked up unchecked, as Milvus does).
"""

from __future__ import annotations

import pytest
from pymilvus import Collection, MilvusClient, MilvusException, connections
from pymilvus.grpc_gen import common_pb2, milvus_pb2

from tests.e2e.util import unique_name
from tests.harness import Standalone

ROWS = 200


def _loaded(milvus: MilvusClient) -> str:
    """Two shards, sealed rows (flushed) and growing ones, loaded."""
    name = unique_name("rep")
    milvus.create_collection(name, dimension=4, num_shards=2, consistency_level="Strong")
    milvus.insert(name, [{"id": i, "vector": [float(i), 0.0, 1.0, 0.0]} for i in range(ROWS)])
    milvus.flush(name)
    milvus.insert(name, [{"id": i, "vector": [float(i), 1.0, 0.0, 0.0]} for i in range(ROWS, ROWS + 20)])
    return name


def _describe(milvus: MilvusClient, name: str) -> milvus_pb2.DescribeCollectionResponse:
    stub = milvus._get_connection()._stub
    return stub.DescribeCollection(milvus_pb2.DescribeCollectionRequest(collection_name=name), timeout=10)


def _partition_ids(milvus: MilvusClient, name: str) -> dict[str, int]:
    stub = milvus._get_connection()._stub
    resp = stub.ShowPartitions(milvus_pb2.ShowPartitionsRequest(collection_name=name), timeout=10)
    return dict(zip(resp.partition_names, resp.partitionIDs, strict=True))


def test_a_loaded_collection_has_one_replica_with_a_shard_per_vchannel(
    milvus: MilvusClient, standalone: Standalone
) -> None:
    name = _loaded(milvus)
    desc = _describe(milvus, name)
    [replica] = milvus.describe_replica(name)
    assert replica.resource_group == "__default_resource_group"
    assert replica.num_outbound_node == {}
    [node] = replica.group_nodes
    assert sorted(s.channel_name for s in replica.shards) == sorted(desc.virtual_channel_names)
    for shard in replica.shards:
        assert shard.shard_leader == node
        assert set(shard.shard_nodes) == {node}  # the leader, and the worker of its sealed segments

    stub = milvus._get_connection()._stub
    resp = stub.GetReplicas(milvus_pb2.GetReplicasRequest(collectionID=desc.collectionID), timeout=10)
    assert resp.status.error_code == common_pb2.Success, resp.status.reason
    [info] = resp.replicas
    assert info.replicaID == replica.id and info.collectionID == desc.collectionID
    assert list(info.partition_ids) == [_partition_ids(milvus, name)["_default"]]
    assert list(info.node_ids) == [node]
    for shard in info.shard_replicas:
        assert list(shard.node_ids) == [shard.leaderID]  # no with_shard_nodes: the leader alone
        host, _, port = shard.leader_addr.rpartition(":")
        assert host == "127.0.0.1" and int(port) > 0
    by_name = stub.GetReplicas(milvus_pb2.GetReplicasRequest(collection_name=name, with_shard_nodes=True), timeout=10)
    assert [r.replicaID for r in by_name.replicas] == [replica.id]

    alias = "orm-" + unique_name("rep")
    connections.connect(alias, uri=standalone.uri)
    try:
        groups = Collection(name, using=alias).get_replicas().groups
        assert [(g.id, g.group_nodes) for g in groups] == [(replica.id, (node,))]
        assert sorted(s.channel_name for s in groups[0].shards) == sorted(desc.virtual_channel_names)
    finally:
        connections.disconnect(alias)


def test_the_replica_lists_the_loaded_partitions_only(milvus: MilvusClient) -> None:
    name = _loaded(milvus)
    milvus.create_partition(name, "p1")
    milvus.release_collection(name)
    milvus.load_partitions(name, ["p1"])
    [info] = _stub_replicas(milvus, _describe(milvus, name).collectionID)
    assert list(info.partition_ids) == [_partition_ids(milvus, name)["p1"]]


def test_a_collection_that_is_not_loaded_has_no_replicas(milvus: MilvusClient) -> None:
    name = _loaded(milvus)
    milvus.release_collection(name)
    assert milvus.describe_replica(name) == []
    assert _stub_replicas(milvus, _describe(milvus, name).collectionID) == []
    assert _stub_replicas(milvus, 123456789) == []  # no such collection id: nothing loaded under it


def test_replicas_of_a_missing_collection_name_say_it_is_not_found(milvus: MilvusClient) -> None:
    stub = milvus._get_connection()._stub
    for name in (unique_name("missing"), "1 not a name"):  # Milvus looks the name up unchecked
        resp = stub.GetReplicas(milvus_pb2.GetReplicasRequest(collection_name=name), timeout=10)
        assert resp.status.error_code == common_pb2.CollectionNotExists
        assert resp.status.reason == f"collection not found[database=default][collection={name}]"
    with pytest.raises(MilvusException, match=r"can't find collection\[database=default\]"):
        milvus.describe_replica(unique_name("missing"))  # pymilvus describes the collection first


def _stub_replicas(milvus: MilvusClient, collection_id: int) -> list[milvus_pb2.ReplicaInfo]:
    stub = milvus._get_connection()._stub
    resp = stub.GetReplicas(
        milvus_pb2.GetReplicasRequest(collectionID=collection_id, with_shard_nodes=True), timeout=10
    )
    assert resp.status.error_code == common_pb2.Success, resp.status.reason
    return list(resp.replicas)
