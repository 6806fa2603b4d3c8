"""The replica view GetReplicas answers with (coordinator/query/replicas.py): pure, no cluster."""

from __future__ import annotations

from coordinator.query.replicas import ReplicaView, ShardView, replica_views

LIVE = {1: "127.0.0.1:1001", 2: "127.0.0.1:1002", 3: "127.0.0.1:1003"}


def test_each_shard_names_its_leader_and_the_live_nodes_holding_its_sealed_segments() -> None:
    views = replica_views(
        ["v0", "v1"],
        members={1: {2, 1}, 2: {3}},
        leaders={1: {"v0": 1, "v1": 2}, 2: {"v0": 3, "v1": 3}},
        workers={(1, "v0"): {2, 9}, (2, "v1"): set(), (3, "v0"): {3}},  # 9 is gone
        live=LIVE,
    )
    assert views == [
        ReplicaView(
            replica_id=1,
            node_ids=(1, 2),
            shards=(
                ShardView(vchannel="v0", leader_id=1, leader_address=LIVE[1], node_ids=(1, 2)),
                ShardView(vchannel="v1", leader_id=2, leader_address=LIVE[2], node_ids=(2,)),
            ),
        ),
        ReplicaView(
            replica_id=2,
            node_ids=(3,),
            shards=(
                ShardView(vchannel="v0", leader_id=3, leader_address=LIVE[3], node_ids=(3,)),
                ShardView(vchannel="v1", leader_id=3, leader_address=LIVE[3], node_ids=(3,)),
            ),
        ),
    ]


def test_a_replica_with_a_vchannel_lacking_a_live_leader_has_no_shards() -> None:
    views = replica_views(
        ["v0", "v1"],
        members={1: {1}, 2: {2}},
        leaders={1: {"v0": 1}, 2: {"v0": 4, "v1": 2}},  # replica 1: v1 not placed; replica 2: node 4 is gone
        workers={},
        live=LIVE,
    )
    assert [(v.replica_id, v.node_ids, v.shards) for v in views] == [(1, (1,), ()), (2, (2,), ())]


def test_no_replicas_no_views() -> None:
    assert replica_views(["v0"], members={}, leaders={}, workers={}, live=LIVE) == []
