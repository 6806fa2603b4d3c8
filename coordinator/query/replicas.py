"""The replicas of a loaded collection as they serve now: what Milvus's ``GetReplicas`` shows. Pure, no I/O.

A replica lists its member query nodes and one shard per vchannel: the
*leader* (the node running the vchannel's delegator) and the replica's nodes
serving the shard (the leader and the workers its sealed segments were placed
on). As in Milvus, a replica one of whose vchannels has no live delegator yet
(still loading, or its node was lost) is listed without shards.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class ShardView:
    vchannel: str
    leader_id: int
    leader_address: str
    node_ids: tuple[int, ...]  # sorted, the leader included


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplicaView:
    replica_id: int
    node_ids: tuple[int, ...]  # sorted
    shards: tuple[ShardView, ...]  # in vchannel order; empty while a vchannel has no live leader


def replica_views(
    vchannels: Sequence[str],
    members: Mapping[int, Collection[int]],
    leaders: Mapping[int, Mapping[str, int]],
    workers: Mapping[tuple[int, str], Collection[int]],
    live: Mapping[int, str],
) -> list[ReplicaView]:
    """Every replica, by replica id.

    ``members``: replica id -> its query nodes; ``leaders``: replica id -> vchannel -> the node
    whose delegator serves it; ``workers``: (leader, vchannel) -> nodes holding the delegator's
    sealed segments; ``live``: node id -> address of every live query node.
    """
    out = []
    for rid in sorted(members):
        placed = leaders.get(rid, {})
        shards: list[ShardView] = []
        for vchannel in vchannels:
            leader = placed.get(vchannel)
            if leader is None or leader not in live:
                shards = []
                break
            serving = {leader} | {n for n in workers.get((leader, vchannel), ()) if n in live}
            shards.append(
                ShardView(
                    vchannel=vchannel, leader_id=leader, leader_address=live[leader], node_ids=tuple(sorted(serving))
                )
            )
        out.append(ReplicaView(replica_id=rid, node_ids=tuple(sorted(members[rid])), shards=tuple(shards)))
    return out
