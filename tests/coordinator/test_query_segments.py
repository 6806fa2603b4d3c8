"""The served segments GetQuerySegmentInfo answers with (coordinator/query/segments.py): pure, no cluster."""

from __future__ import annotations

from common.segment import SegmentLevel, SegmentMeta, SegmentState
from coordinator.query.segments import DelegatorServing, ServedSegment, served_segments


def _meta(sid: int, level: SegmentLevel = SegmentLevel.L1, rows: int = 10) -> SegmentMeta:
    return SegmentMeta(
        segment_id=sid, collection_id=7, partition_id=8, vchannel="v0", state=SegmentState.FLUSHED, level=level, rows=rows
    )


METAS = {1: _meta(1), 2: _meta(2, rows=20), 3: _meta(3, SegmentLevel.L0, rows=0)}


def test_each_segment_lists_the_node_holding_it_in_every_replica_in_replica_order() -> None:
    delegators = [
        DelegatorServing(node_id=5, replica_id=2, sealed={1, 2, 3}, routes={1: 5, 2: 6}),
        DelegatorServing(node_id=1, replica_id=1, sealed={1, 2, 3}, routes={1: 2, 2: 1}),
    ]
    held = {1: {2: (40,)}, 2: {1: (40, 41)}, 5: {1: ()}, 6: {2: (40,)}}
    assert served_segments(delegators, METAS, held) == [
        ServedSegment(segment=METAS[1], node_ids=(2, 5), index_id=40),  # the index in place on node 2
        ServedSegment(segment=METAS[2], node_ids=(1, 6), index_id=40),
        ServedSegment(segment=METAS[3], node_ids=(1, 5), index_id=0),  # L0: read by each delegator itself
    ]


def test_a_segment_not_on_its_worker_yet_or_gone_from_the_metadata_is_left_out() -> None:
    delegators = [DelegatorServing(node_id=1, replica_id=1, sealed={1, 2, 4}, routes={1: 2, 2: 3, 4: 2})]
    held = {2: {1: ()}, 3: {}}  # node 3 has not loaded segment 2 yet; segment 4 was compacted away
    assert served_segments(delegators, METAS, held) == [ServedSegment(segment=METAS[1], node_ids=(2,), index_id=0)]


def test_nothing_is_served_without_delegators() -> None:
    assert served_segments([], METAS, {2: {1: (40,)}}) == []
