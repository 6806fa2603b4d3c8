"""GetReplicas and CheckHealth of a cluster of real processes, through pymilvus.

etcd, a coordinator, a streaming node, two query nodes and a proxy, each its
own process group on 127.0.0.1. A collection with 2 shards holds sealed and
growing rows, loaded with ``replica_number=2``:

* ``describe_replica`` lists two replicas, each on its own query node (the
  ids of the nodes' sessions in etcd), with a shard per vchannel whose leader
  is that node at its session's address, serving the shard alone;
* ``CheckHealth`` is healthy; a query node frozen with SIGSTOP (alive, its
  session kept, but answering nothing) makes it unhealthy with a reason naming
  that node, and healthy again once it runs again (SIGCONT).
"""

from __future__ import annotations

import re
import signal
from pathlib import Path

import pytest
from pymilvus import MilvusClient
from pymilvus.grpc_gen import common_pb2, milvus_pb2

from tests.cluster.harness import Role, cluster, create_collection, read_sessions, retry, vectors, wait_until

DIM = 8
ROOT = "replicas-health"
SEALED, GROWING = 600, 100


def _check_health(client: MilvusClient) -> milvus_pb2.CheckHealthResponse:
    resp = client._get_connection()._stub.CheckHealth(milvus_pb2.CheckHealthRequest(), timeout=30)
    assert resp.status.error_code == common_pb2.Success, resp.status.reason
    return resp


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_two_replicas_on_their_own_nodes_and_a_frozen_node_is_unhealthy(tmp_path: Path) -> None:
    with cluster(tmp_path, ROOT, query_nodes=2) as (c, client):
        retry("create", lambda: create_collection(client, "c", dim=DIM, num_shards=2), timeout=60)
        client.insert("c", vectors(range(SEALED), DIM), timeout=30)
        client.flush("c", timeout=60)
        client.insert("c", vectors(range(SEALED, SEALED + GROWING), DIM), timeout=30)
        client.release_collection("c")
        client.load_collection("c", replica_number=2, timeout=120)

        sessions = read_sessions(c.etcd.endpoint, ROOT, "querynode")
        assert len(sessions) == 2
        replicas = client.describe_replica("c")
        assert len(replicas) == 2
        assert sorted(n for r in replicas for n in r.group_nodes) == sorted(sessions)
        vchannels = (
            client._get_connection()
            ._stub.DescribeCollection(milvus_pb2.DescribeCollectionRequest(collection_name="c"), timeout=10)
            .virtual_channel_names
        )
        for r in replicas:
            [node] = r.group_nodes
            assert sorted(s.channel_name for s in r.shards) == sorted(vchannels)
            assert all(s.shard_leader == node and set(s.shard_nodes) == {node} for s in r.shards)
        cid = client.describe_collection("c")["collection_id"]
        raw = client._get_connection()._stub.GetReplicas(milvus_pb2.GetReplicasRequest(collectionID=cid), timeout=10)
        for info in raw.replicas:
            assert {s.leader_addr for s in info.shard_replicas} == {sessions[info.node_ids[0]]}
        assert (
            client.query("c", filter="", output_fields=["count(*)"], consistency_level="Strong")[0]["count(*)"]
            == SEALED + GROWING
        )

        assert _check_health(client).isHealthy

        frozen = c.role("qn-0")
        frozen_id = _server_id(frozen)
        assert frozen_id in sessions
        frozen.send_signal(signal.SIGSTOP)
        try:
            resp = _check_health(client)
            assert not resp.isHealthy
            assert [r for r in resp.reasons if r.startswith(f"QueryNode={frozen_id} not healthy")], list(resp.reasons)
            assert not [r for r in resp.reasons if "QueryNode" in r and f"={frozen_id} " not in r], list(resp.reasons)
        finally:
            frozen.send_signal(signal.SIGCONT)
        wait_until("healthy again", lambda: _check_health(client).isHealthy, 30)


def _server_id(role: Role) -> int:
    """The server id the role's query node session registered under, from its log."""
    found = re.search(r"event='session registered'.* role='querynode' server_id=(\d+)", role.log())
    assert found, role.log()[-2000:]
    return int(found.group(1))
