"""The delegator's distribution planning, without workers or storage (``planning.py``)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from common.segment import SegmentMeta, SegmentState
from common.storage.layout import ALL_PARTITIONS
from common.storage.stats import SegmentStats
from querynode.delegator.distribution import Placement
from querynode.delegator.load_failures import LoadFailures
from querynode.delegator.planning import (
    Oracle,
    PlacedSegment,
    forward_plan,
    group_by_worker,
    loads_due,
    with_batch_versions,
)

A, B = Placement(1, "a:1"), Placement(2, "b:1")


def _placed(sid: int, where: Placement) -> PlacedSegment:
    return PlacedSegment(SegmentMeta(segment_id=sid, collection_id=1, partition_id=10, vchannel="v", state=SegmentState.FLUSHED), where)


def _oracle(**keys: list[int]) -> Oracle:
    """PK stats of segments ``s<id>`` holding exactly ``keys``."""
    oracle = Oracle()
    for name, pks in keys.items():
        oracle.stats[int(name[1:])] = [SegmentStats.build(pa.array(pks, pa.int64()))]
    return oracle


def test_forward_plan_sends_cuts_only_where_the_partition_and_the_pk_stats_allow() -> None:
    oracle = _oracle(s1=[1, 2], s2=[100, 200], s3=[1, 2])
    sealed = {1: A, 2: A, 3: B}
    partition_of = {1: 10, 2: 10, 3: 20}
    pks, ts = pa.array([1, 2], pa.int64()), np.array([5, 6], dtype=np.uint64)

    plan = forward_plan(sealed, partition_of, oracle, pks, ts, 10)
    assert list(plan) == [A] and list(plan[A]) == [1]  # s2 cannot hold the keys, s3 is in another partition
    assert plan[A][1][0].to_pylist() == [1, 2] and plan[A][1][1].tolist() == [5, 6]

    everywhere = forward_plan(sealed, partition_of, oracle, pks, ts, ALL_PARTITIONS, exclude=1)
    assert {p: list(c) for p, c in everywhere.items()} == {B: [3]}


def test_loads_due_skips_segments_served_by_their_node_and_defers_recent_failures() -> None:
    now = [0.0]
    failures = LoadFailures(clock=lambda: now[0])
    failures.record(4, 1, OSError("disk"))
    failures.record(4, 1, OSError("disk"))  # the second failure in a row waits out a backoff
    load, deferred = loads_due({1: A, 2: A}, [_placed(1, A), _placed(2, B), _placed(3, A), _placed(4, A)], failures)
    assert [(p.meta.segment_id, moving) for p, moving in load] == [(2, A), (3, None)]
    assert deferred == [4]
    now[0] = 3600.0  # its backoff has passed
    load, deferred = loads_due({}, [_placed(4, A)], failures)
    assert [p.meta.segment_id for p, _ in load] == [4] and deferred == []


def test_batch_versions_add_the_other_segments_rows_of_its_partition() -> None:
    oracle = _oracle(s1=[1, 2, 3])
    pks, ts = pa.array([9], pa.int64()), np.array([1], dtype=np.uint64)
    others = [
        (10, pa.array([2, 50], pa.int64()), np.array([7, 8], dtype=np.uint64)),
        (20, pa.array([3], pa.int64()), np.array([9], dtype=np.uint64)),  # another partition
    ]
    got_pks, got_ts = with_batch_versions(pks, ts, 1, 10, oracle, others)
    assert 2 in got_pks.to_pylist() and 3 not in got_pks.to_pylist()
    assert dict(zip(got_pks.to_pylist(), got_ts.tolist(), strict=True))[2] == 7


def test_group_by_worker() -> None:
    assert group_by_worker({1: A, 2: B, 3: A}) == {A: [1, 3], B: [2]}
