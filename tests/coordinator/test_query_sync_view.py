"""A round of distribution syncs reads the FLUSHED segments once (fakes around ``DelegatorSync``).

The query coordinator syncs a collection's delegators one vchannel after another, awaiting each. A
compaction that commits while the first vchannel's sync is awaited must not make the second sync
release the compaction's inputs without placing its outputs: the rows would be missing from reads
until the next round (seen as rows missing from a Strong query right after a compaction).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

from pymilvus.grpc_gen import common_pb2

from common.etcd.session import SessionInfo
from common.segment import SegmentLevel, SegmentMeta, SegmentState
from coordinator.query.delegator_sync import DelegatorSync
from coordinator.query.distribution import ChannelState, NodeDist
from protos import querynode_pb2

V0, V1 = "dml_0_7v0", "dml_1_7v1"


def _segment(sid: int, vchannel: str) -> SegmentMeta:
    return SegmentMeta(segment_id=sid, collection_id=7, partition_id=1, vchannel=vchannel,
                       state=SegmentState.FLUSHED, level=SegmentLevel.L1, rows=10)


class Data:
    """The data coordinator's FLUSHED segments, changed by the test between syncs."""

    def __init__(self) -> None:
        self.flushed = {V0: [_segment(1, V0)], V1: [_segment(2, V1)]}

    def flushed_segments(self, *, vchannel: str) -> list[SegmentMeta]:
        return list(self.flushed[vchannel])


class Node:
    """A query node that records each sync; the first one lets a compaction of V1 commit meanwhile."""

    def __init__(self, data: Data) -> None:
        self.data = data
        self.syncs: list[querynode_pb2.SyncDistributionRequest] = []

    async def SyncDistribution(self, req: querynode_pb2.SyncDistributionRequest, timeout: float) -> Any:
        self.syncs.append(req)
        if len(self.syncs) == 1:
            self.data.flushed[V1] = [_segment(3, V1)]  # segment 2 compacted into 3, committed now
        return SimpleNamespace(status=common_pb2.Status())


async def test_a_compaction_committed_during_a_round_never_releases_inputs_without_their_outputs() -> None:
    data = Data()
    node = Node(data)
    nodes = {5: SessionInfo(role="querynode", server_id=5, address="127.0.0.1:1")}
    sync = DelegatorSync(
        catalog=cast(Any, None),
        data=cast(Any, data),
        stub=lambda address: cast(Any, node),  # the fake node for every address
        nodes=lambda: nodes,
    )
    # Both delegators serve and already hold segment 2 on V1; segment 1 on V0 is new to its delegator.
    serving = ChannelState(tsafe=1, sealed=frozenset(), serviceable=True, replica_id=1)
    dist = {5: NodeDist(channels={V0: serving, V1: ChannelState(1, frozenset({2}), True, 1)}, segments={(7, 2): 10})}
    sync._sent = {(5, V1): {2: 5}}
    meta = SimpleNamespace(collection_id=7, vchannels=(V0, V1), pchannels=("p0", "p1"))
    channels = {V0: 5, V1: 5}  # both delegators on node 5, partition 1 loaded

    await sync.sync_replica(cast(Any, meta), 1, {5}, channels, dist, {1}, [])
    for req in node.syncs:  # whatever a sync of this round releases, it places what replaced it
        placed = {p.segment.segment_id for p in req.placements}
        assert not (set(req.release) and not placed), (req.vchannel, list(req.release), placed)

    # The next round, with a view taken after the commit, swaps them in one sync.
    node.syncs.clear()
    await sync.sync_replica(cast(Any, meta), 1, {5}, channels, dist, {1}, [])
    [swap] = [r for r in node.syncs if r.vchannel == V1]
    assert list(swap.release) == [2] and [p.segment.segment_id for p in swap.placements] == [3]
