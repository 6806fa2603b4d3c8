"""Which segments compaction picks: pure decisions over segment metadata."""

from __future__ import annotations

from common.position import Position
from common.segment import SegmentLevel, SegmentMeta, SegmentState
from coordinator.data.jobs import JobKind, JobRecord, JobState, can_move
from coordinator.data.policy import (
    PolicyOptions,
    foldable_l0,
    folds_in_mix,
    l0_plan,
    mix_plans,
    with_l0_folded,
)

V = "p_1v0"
OPTIONS = PolicyOptions(target_rows=1000, min_segments=3, delete_ratio=0.2, l0_segments=2, min_age_seconds=60)


def seg(sid: int, *, rows: int = 100, state: SegmentState = SegmentState.FLUSHED, level: SegmentLevel = SegmentLevel.L1,
        start: int | None = 10, end: int | None = 20, partition: int = 1, deleted: int = 0,
        flushed_at: float = 0.0) -> SegmentMeta:
    return SegmentMeta(
        segment_id=sid, collection_id=1, partition_id=partition if level == SegmentLevel.L1 else -1, vchannel=V,
        state=state, level=level, rows=rows if level == SegmentLevel.L1 else 0, manifest=f"m/{sid}",
        start_position=None if start is None else Position(b"\x01", start),
        position=None if end is None else Position(b"\x02", end), deleted_rows=deleted, flushed_at=flushed_at,
    )


def test_l0_deletes_fold_only_when_every_row_they_can_remove_is_flushed() -> None:
    l0_old = seg(10, level=SegmentLevel.L0, start=40, end=50)
    l0_new = seg(11, level=SegmentLevel.L0, start=70, end=90)
    flushed = [seg(1), l0_old, l0_new]
    growing = seg(2, state=SegmentState.GROWING, start=60, end=None)
    # The growing segment started at 60: deletes up to 60 cannot touch it, the one at 90 may.
    assert [s.segment_id for s in foldable_l0([*flushed, growing], flushed, import_floor=None)] == [10]
    assert foldable_l0([*flushed, growing], flushed, import_floor=45) == []  # an import at 45 is still running
    assert [s.segment_id for s in foldable_l0(flushed, flushed, import_floor=None)] == [10, 11]
    unknown = seg(3, state=SegmentState.SEALED, start=None)
    assert foldable_l0([*flushed, unknown], flushed, import_floor=None) == []
    plan = l0_plan(flushed, flushed, OPTIONS, import_floor=None, manual=False, now=100)
    assert plan is not None and [s.segment_id for s in plan.l0] == [10, 11] and [s.segment_id for s in plan.targets] == [1]
    # Automatically only once l0_segments settled ones piled up; manually at once.
    assert l0_plan(flushed, flushed, OPTIONS, import_floor=None, manual=False, now=30) is None  # not settled
    assert l0_plan([*flushed, growing], flushed, OPTIONS, import_floor=None, manual=False, now=100) is None
    assert l0_plan([*flushed, growing], flushed, OPTIONS, import_floor=None, manual=True) is not None


def test_automatic_mix_plans_wait_for_settled_segments_and_enough_small_ones() -> None:
    small = [seg(i, rows=100, flushed_at=0) for i in range(1, 3)]
    assert mix_plans(small, OPTIONS, now=100, expire_before=0, manual=False) == []  # 2 < min_segments
    three = [*small, seg(3, rows=100, flushed_at=0), seg(4, rows=900, flushed_at=0)]
    [plan] = mix_plans(three, OPTIONS, now=100, expire_before=0, manual=False)
    assert [s.segment_id for s in plan.inputs] == [1, 2, 3] and plan.reason == "small"
    assert mix_plans(three, OPTIONS, now=30, expire_before=0, manual=False) == []  # not settled for 60 s yet
    # A segment with a fifth of its rows deleted is rewritten alone; an expired one too.
    assert [s.segment_id for s in mix_plans([seg(5, rows=900, deleted=200)], OPTIONS, now=100, expire_before=0,
                                            manual=False)[0].inputs] == [5]
    [expired] = mix_plans([seg(6, rows=900, end=20)], OPTIONS, now=100, expire_before=25, manual=False)
    assert expired.reason == "expired"
    assert mix_plans([seg(6, rows=900, end=30)], OPTIONS, now=100, expire_before=25, manual=False) == []


def test_manual_mix_plans_take_deletes_small_pairs_and_every_segment_when_deletes_are_not_folded() -> None:
    segs = [seg(1, rows=100), seg(2, rows=900), seg(3, rows=900, deleted=1), seg(4, rows=100, partition=2)]
    plans = mix_plans(segs, OPTIONS, now=0, expire_before=0, manual=True)
    assert [[s.segment_id for s in p.inputs] for p in plans] == [[3]]  # one small segment per partition: no pair
    plans = mix_plans([*segs, seg(5, rows=10)], OPTIONS, now=0, expire_before=0, manual=True)
    assert [[s.segment_id for s in p.inputs] for p in plans] == [[1, 3, 5]]
    plans = mix_plans(segs, OPTIONS, now=0, expire_before=0, manual=True, unfolded_deletes=True)
    assert [(p.partition_id, [s.segment_id for s in p.inputs]) for p in plans] == [(1, [1, 2, 3]), (2, [4])]
    # Rows may expire: a manual request rewrites segments whose oldest row is past the TTL.
    plans = mix_plans([seg(7, rows=900, start=5, end=30)], OPTIONS, now=0, expire_before=10, manual=True)
    assert plans and plans[0].reason == "expiring"


def test_plans_are_split_to_fit_one_commit() -> None:
    many = [seg(i, rows=10) for i in range(1, 150)]
    plans = mix_plans(many, PolicyOptions(target_rows=1000, max_inputs=64), now=0, expire_before=0, manual=True)
    assert [len(p.inputs) for p in plans] == [64, 64, 21]


def test_a_manual_mix_plan_over_the_whole_vchannel_drops_the_foldable_l0_segments() -> None:
    l1 = [seg(1), seg(2)]
    l0 = seg(9, level=SegmentLevel.L0, start=30, end=40)
    flushed = [*l1, l0]
    assert folds_in_mix(flushed, OPTIONS)
    assert not folds_in_mix([*flushed, seg(3, partition=2)], OPTIONS)
    plans = mix_plans(flushed, OPTIONS, now=0, expire_before=0, manual=True, unfolded_deletes=True)
    [folded] = with_l0_folded(plans, flushed, flushed, import_floor=None)
    assert [s.segment_id for s in folded.drop_l0] == [9]
    growing = seg(4, state=SegmentState.GROWING, start=35)
    [kept] = with_l0_folded(plans, [*flushed, growing], flushed, import_floor=None)
    assert kept.drop_l0 == ()  # a segment started before the delete: the L0 segment stays
    partial = mix_plans([seg(1, rows=10), seg(2, rows=10), seg(5, rows=900), l0], OPTIONS, now=0, expire_before=0,
                        manual=True)
    assert all(p.drop_l0 == () for p in with_l0_folded(partial, flushed, [*flushed, seg(5, rows=900)],
                                                         import_floor=None))


def test_job_states_only_move_forward() -> None:
    assert can_move(JobState.PENDING, JobState.RUNNING) and can_move(JobState.RUNNING, JobState.FAILED)
    assert not can_move(JobState.COMMITTED, JobState.FAILED) and not can_move(JobState.RUNNING, JobState.PENDING)
    job = JobRecord(job_id=1, kind=JobKind.IMPORT, collection_id=2, files=("a.parquet",), options={"k": "v"})
    moved = job.moved(JobState.RUNNING, now=5.0, import_ts=7)
    assert JobRecord.from_json(moved.to_json()) == moved
    done = moved.moved(JobState.COMMITTED, now=9.0)
    assert done.finished_at == 9.0
    try:
        done.moved(JobState.FAILED, now=10.0)
    except ValueError:
        pass
    else:
        raise AssertionError("a committed job failed")
