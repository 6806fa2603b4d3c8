"""GetQuerySegmentInfo, LoadBalance, the default resource group and GetMetrics of a cluster of real processes.

etcd, a coordinator, a streaming node, two query nodes and a proxy, each its
own process group on 127.0.0.1. A collection with 2 shards holds flushed rows:

* loaded with one replica, its sealed segments are spread over both query
  nodes (placed by row count), each listed once with the node holding it;
  ``load_balance`` asked to move them to the other node of the replica is
  refused as not supported, and nothing moves;
* loaded with two replicas, each segment lists both nodes;
* the default resource group holds both query nodes (their sessions' ids and
  addresses), and the proxy, a role of its own, reports ``DISTRIBUTED``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pymilvus import MilvusClient, MilvusException
from pymilvus.grpc_gen import milvus_pb2

from tests.cluster.harness import cluster, create_collection, read_sessions, retry, vectors, wait_until

DIM = 8
ROOT = "segments-groups"
ROWS = 600
GROUP = "__default_resource_group"


def _served(client: MilvusClient, expected: set[int], copies: int) -> dict[int, list[int]]:
    """Segment -> nodes once every flushed segment is served ``copies`` times."""
    found: dict[int, list[int]] = {}

    def ready() -> bool:
        nonlocal found
        found = {s.segment_id: list(s.node_ids) for s in client.list_loaded_segments("c")}
        return set(found) == expected and all(len(n) == copies for n in found.values())

    wait_until("segments served", ready, 120)
    return found


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_segments_are_listed_per_node_and_replica_and_the_group_holds_every_query_node(tmp_path: Path) -> None:
    with cluster(tmp_path, ROOT, query_nodes=2) as (c, client):
        # Both query nodes known to the coordinator before the load places the segments.
        wait_until(
            "two query nodes",
            lambda: retry("describe", lambda: client.describe_resource_group(GROUP), timeout=30).num_available_node == 2,
            60,
        )
        retry("create", lambda: create_collection(client, "c", dim=DIM, num_shards=2), timeout=60)
        client.insert("c", vectors(range(ROWS), DIM), timeout=30)
        client.flush("c", timeout=60)
        flushed = {s.segment_id for s in client.list_persistent_segments("c")}
        assert len(flushed) >= 2  # one per shard at least
        sessions = read_sessions(c.etcd.endpoint, ROOT, "querynode")
        assert len(sessions) == 2

        one = _served(client, flushed, copies=1)
        assert {n for nodes in one.values() for n in nodes} == set(sessions)  # spread over both nodes
        src = one[min(one)][0]
        [dst] = set(sessions) - {src}
        with pytest.raises(MilvusException, match="LoadBalance is not supported for moving segments") as err:
            client._get_connection().load_balance("c", src, [dst], [min(one)])
        assert err.value.code == 6
        assert _served(client, flushed, copies=1) == one

        group = client.describe_resource_group(GROUP)
        assert group.num_available_node == 2
        assert {n.node_id: n.address for n in group.nodes} == sessions
        assert dict(group.num_loaded_replica) == {"c": 1}

        client.release_collection("c")
        client.load_collection("c", replica_number=2, timeout=120)
        two = _served(client, flushed, copies=2)
        assert all(sorted(nodes) == sorted(sessions) for nodes in two.values())
        assert dict(client.describe_resource_group(GROUP).num_loaded_replica) == {"c": 2}

        stub = client._get_connection()._stub
        metrics = stub.GetMetrics(milvus_pb2.GetMetricsRequest(request='{"metric_type": "system_info"}'), timeout=10)
        nodes = json.loads(metrics.response)["nodes_info"]
        [proxy] = [n for n in nodes if n["infos"]["type"] == "proxy"]
        # The topology lists the cluster's two query nodes, by their session ids.
        assert sorted(n["infos"]["id"] for n in nodes if n["infos"]["type"] == "querynode") == sorted(sessions)
        assert proxy["infos"]["system_info"]["deploy_mode"] == "DISTRIBUTED"
        assert stub.RegisterLink(milvus_pb2.RegisterLinkRequest(), timeout=10).status.reason == "DISTRIBUTED"
