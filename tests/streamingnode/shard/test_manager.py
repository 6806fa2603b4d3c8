"""ShardManager decisions, one scenario per test, driven through the caller's protocol."""

from __future__ import annotations

import pytest

from common.errors import CODE_TABLE, CollectionNotFound, ErrorCode, InvalidArgument
from common.message import ManualFlush
from protos.common_pb2 import MessageType
from streamingnode.shard import InsertPlan, SealInstruction, SealPolicy, SealReason, SegmentState, ShardManager
from tests.streamingnode.shard.writer import LogWriter, replay

POLICY = SealPolicy(max_rows=10, max_bytes=100, max_lifetime_ms=1_000, max_idle_ms=300)
C, D = 1, 2  # collections
P, Q = 10, 11  # partitions


@pytest.fixture()
def w() -> LogWriter:
    w = LogWriter(POLICY)
    w.create_collection(C, ["v0", "v1"])
    w.create_collection(D, ["v0"])
    return w


def kinds(w: LogWriter, since: int = 0) -> list[int]:
    return [e.type for e in w.log[since:]]


def seal(
    sid: int, reason: SealReason, vchannel: str = "v0", collection: int = C, partition: int = P
) -> SealInstruction:
    return SealInstruction(
        segment_id=sid, collection_id=collection, partition_id=partition, vchannel=vchannel, reason=reason
    )


def assert_replays(w: LogWriter) -> None:
    assert replay(POLICY, w.log).snapshot() == w.manager.snapshot()


# -- assignment and capacity ---------------------------------------------------


def test_first_insert_creates_a_segment_and_later_ones_share_it(w: LogWriter) -> None:
    m = ShardManager(POLICY)
    m.collection_created(C, ["v0"])
    assert m.plan_insert(vchannel="v0", collection_id=C, partition_id=P, rows=1, bytes=1, now_ms=0) == InsertPlan(
        segment_id=None, needs_new_segment=True
    )
    start = len(w.log)
    s1 = w.insert("v0", C, P, 3, 30)
    assert w.insert("v0", C, P, 3, 30) == s1
    assert kinds(w, start) == [MessageType.CREATE_SEGMENT, MessageType.INSERT, MessageType.INSERT]
    seg = w.manager.segment(s1)
    assert seg is not None and (seg.rows, seg.bytes, seg.state) == (6, 60, SegmentState.GROWING)
    # Each (vchannel, collection, partition) has its own segment.
    assert len({s1, w.insert("v1", C, P, 1, 1), w.insert("v0", C, Q, 1, 1), w.insert("v0", D, P, 1, 1)}) == 4
    assert_replays(w)


def test_row_cap_rolls_over_to_a_new_segment(w: LogWriter) -> None:
    s1 = w.insert("v0", C, P, 6, 1)
    assert w.insert("v0", C, P, 4, 1) == s1  # exactly max_rows fits
    plan = w.manager.plan_insert(vchannel="v0", collection_id=C, partition_id=P, rows=1, bytes=1, now_ms=w.now_ms)
    assert plan == InsertPlan(segment_id=None, needs_new_segment=True, seal=seal(s1, SealReason.ROWS))
    sealed = w.manager.segment(s1)
    assert sealed is not None and sealed.state is SegmentState.SEALED
    # Another plan does not seal it twice: the key simply has no open segment.
    assert w.manager.plan_insert(
        vchannel="v0", collection_id=C, partition_id=P, rows=1, bytes=1, now_ms=w.now_ms
    ) == InsertPlan(segment_id=None, needs_new_segment=True)


def test_row_cap_protocol_appends_flush_then_create_then_insert(w: LogWriter) -> None:
    s1 = w.insert("v0", C, P, 8, 1)
    start = len(w.log)
    s2 = w.insert("v0", C, P, 3, 1)
    assert s2 != s1
    assert kinds(w, start) == [MessageType.FLUSH, MessageType.CREATE_SEGMENT, MessageType.INSERT]
    assert w.log[start].message.segment_id == s1
    assert w.manager.segment(s1) is None  # flushed: forgotten
    assert [s.segment_id for s in w.manager.snapshot().segments if s.collection_id == C] == [s2]
    assert_replays(w)


def test_byte_cap_rolls_over(w: LogWriter) -> None:
    s1 = w.insert("v0", C, P, 1, 60)
    assert w.insert("v0", C, P, 1, 40) == s1
    start = len(w.log)
    s2 = w.insert("v0", C, P, 1, 1)
    assert s2 != s1
    assert w.log[start].type == MessageType.FLUSH
    assert_replays(w)


def test_full_segment_is_sealed_by_the_next_tick(w: LogWriter) -> None:
    s1 = w.insert("v0", C, P, 10, 1)
    s2 = w.insert("v0", C, Q, 1, 100)
    s3 = w.insert("v0", C, P + 2, 1, 1)
    assert w.tick() == [seal(s1, SealReason.ROWS), seal(s2, SealReason.BYTES, partition=Q)]
    assert [s.segment_id for s in w.manager.snapshot().growing() if s.collection_id == C] == [s3]
    assert_replays(w)


def test_oversized_insert_goes_whole_into_one_fresh_segment(w: LogWriter) -> None:
    s1 = w.insert("v0", C, P, 25, 1)  # no open segment: a fresh one takes all 25 rows
    seg = w.manager.segment(s1)
    assert seg is not None and seg.rows == 25
    start = len(w.log)
    s2 = w.insert("v0", C, P, 1, 1)  # the next insert seals the oversized segment
    assert s2 != s1 and w.log[start].message.segment_id == s1
    s3 = w.insert("v0", C, P, 30, 1)  # non-empty open segment: sealed, the insert goes to a fresh one
    seg3 = w.manager.segment(s3)
    assert s3 != s2 and seg3 is not None and seg3.rows == 30
    assert w.manager.segment(s2) is None
    assert_replays(w)


def test_planned_inserts_reserve_their_rows_until_commit_or_abort(w: LogWriter) -> None:
    s1 = w.insert("v0", C, P, 2, 2)
    m = w.manager

    def plan(rows: int) -> InsertPlan:
        return m.plan_insert(vchannel="v0", collection_id=C, partition_id=P, rows=rows, bytes=1, now_ms=w.now_ms)

    assert plan(4).segment_id == s1
    assert plan(4).segment_id == s1  # 2 + 4 + 4 = 10 with both in flight
    seg = m.segment(s1)
    assert seg is not None and (seg.rows, seg.pending_rows) == (2, 8)
    m.abort_insert(s1, 4, 1)
    m.commit_insert(s1, 4, 1, w.now_ms + 5)
    seg = m.segment(s1)
    assert seg is not None and (seg.rows, seg.pending_rows, seg.last_write_ms) == (6, 0, w.now_ms + 5)
    assert plan(4).segment_id == s1
    assert plan(1).needs_new_segment  # 6 + 4 in flight + 1 > 10


def test_commit_and_flush_of_forgotten_segments_are_ignored(w: LogWriter) -> None:
    s1 = w.insert("v0", C, P, 1, 1)
    w.manager.segment_flushed(s1)
    w.manager.segment_flushed(s1)
    w.manager.commit_insert(s1, 1, 1, w.now_ms)
    w.manager.abort_insert(s1, 1, 1)
    assert w.manager.segment(s1) is None


def test_segment_created_rejects_a_known_id(w: LogWriter) -> None:
    s1 = w.insert("v0", C, P, 1, 1)
    with pytest.raises(InvalidArgument, match="already exists"):
        w.manager.segment_created(s1, C, Q, "v0", w.now_ms)


def test_insert_needs_rows(w: LogWriter) -> None:
    with pytest.raises(InvalidArgument):
        w.manager.plan_insert(vchannel="v0", collection_id=C, partition_id=P, rows=0, bytes=0, now_ms=0)


# -- unknown collections -------------------------------------------------------


@pytest.mark.parametrize(
    ("vchannel", "collection"),
    [("v0", 99), ("v1", D), ("v9", C)],  # never created; created on another vchannel; unknown vchannel
)
def test_insert_into_unknown_collection_fails_clearly(w: LogWriter, vchannel: str, collection: int) -> None:
    with pytest.raises(CollectionNotFound, match=f"collection {collection} not found on vchannel {vchannel}") as err:
        w.insert(vchannel, collection, P, 1, 1)
    assert err.value.code is ErrorCode.COLLECTION_NOT_FOUND
    assert CODE_TABLE[err.value.code].milvus_code == 100  # pymilvus shows "collection not found"
    with pytest.raises(CollectionNotFound):
        w.manager.segment_created(500, collection, P, vchannel, 0)


def test_check_collection_for_deletes(w: LogWriter) -> None:
    w.manager.check_collection(C, "v1")
    with pytest.raises(CollectionNotFound):
        w.manager.check_collection(D, "v1")


def test_insert_after_drop_fails(w: LogWriter) -> None:
    w.insert("v0", D, P, 1, 1)
    w.drop_collection(D, "v0")
    with pytest.raises(CollectionNotFound):
        w.insert("v0", D, P, 1, 1)


# -- DDL -----------------------------------------------------------------------


def test_drop_collection_seals_its_segments(w: LogWriter) -> None:
    a = w.insert("v0", C, P, 1, 1)
    b = w.insert("v0", C, Q, 1, 1)
    c = w.insert("v1", C, P, 1, 1)
    other = w.insert("v0", D, P, 1, 1)
    start = len(w.log)
    assert w.drop_collection(C, "v0") == [
        seal(a, SealReason.COLLECTION_DROPPED),
        seal(b, SealReason.COLLECTION_DROPPED, partition=Q),
    ]
    assert kinds(w, start) == [MessageType.FLUSH, MessageType.FLUSH, MessageType.DROP_COLLECTION]
    assert w.insert("v1", C, P, 1, 1) == c  # its other vchannel lives on
    assert w.manager.collection_dropped(C) == [seal(c, SealReason.COLLECTION_DROPPED, vchannel="v1")]
    assert w.manager.collection_dropped(C) == []  # unknown: no-op
    assert [s.segment_id for s in w.manager.snapshot().growing()] == [other]
    assert [col.collection_id for col in w.manager.snapshot().collections] == [D]


def test_drop_partition_seals_it_and_rejects_later_inserts(w: LogWriter) -> None:
    a = w.insert("v0", C, P, 1, 1)
    b = w.insert("v1", C, P, 1, 1)
    keep = w.insert("v0", C, Q, 1, 1)
    assert w.drop_partition(C, P, "v0") == [seal(a, SealReason.PARTITION_DROPPED)]
    assert w.drop_partition(C, P, "v1") == [seal(b, SealReason.PARTITION_DROPPED, vchannel="v1")]
    with pytest.raises(InvalidArgument, match="partition 10 of collection 1 was dropped"):
        w.insert("v0", C, P, 1, 1)
    assert w.insert("v0", C, Q, 1, 1) == keep
    assert w.manager.partition_dropped(99, P) == []
    assert_replays(w)


def test_manual_flush_seals_the_collection_and_later_inserts_use_new_segments(w: LogWriter) -> None:
    a = w.insert("v0", C, P, 1, 1)
    b = w.insert("v0", C, Q, 1, 1)
    c = w.insert("v1", C, P, 1, 1)
    other = w.insert("v0", D, P, 1, 1)
    start = len(w.log)
    seals = w.manual_flush(C, "v0", flush_ts=777)
    assert seals == [seal(a, SealReason.MANUAL_FLUSH), seal(b, SealReason.MANUAL_FLUSH, partition=Q)]
    assert kinds(w, start) == [MessageType.FLUSH, MessageType.FLUSH, MessageType.MANUAL_FLUSH]
    assert w.log[-1].message == ManualFlush(vchannel="v0", collection_id=C, flush_ts=777, segment_ids=(a, b))
    assert w.insert("v0", C, P, 1, 1) not in (a, b)
    assert w.insert("v1", C, P, 1, 1) == c  # another vchannel's ManualFlush seals that one
    assert w.insert("v0", D, P, 1, 1) == other
    assert w.manager.snapshot().collections[0].last_flush_ts == 777
    # Without a vchannel: every vchannel of the collection on this pchannel.
    growing = [s.segment_id for s in w.manager.snapshot().growing() if s.collection_id == C]
    assert len(growing) == 2
    assert [s.segment_id for s in w.manager.manual_flush(C, 778)] == growing
    with pytest.raises(CollectionNotFound):
        w.manager.manual_flush(99, 1)


# -- time ----------------------------------------------------------------------


def test_idle_segment_is_sealed_by_tick(w: LogWriter) -> None:
    s1 = w.insert("v0", C, P, 1, 1)
    assert w.tick(299) == []
    assert w.insert("v0", C, P, 1, 1) == s1  # a write restarts the idle clock
    assert w.tick(299) == []
    assert w.tick(1) == [seal(s1, SealReason.IDLE)]
    assert w.tick(10_000) == []  # sealed once
    assert_replays(w)


def test_lifetime_seals_a_busy_segment(w: LogWriter) -> None:
    s1 = w.insert("v0", C, P, 1, 1)
    for _ in range(4):
        assert w.tick(200) == []
        assert w.insert("v0", C, P, 1, 1) == s1
    assert w.tick(200) == [seal(s1, SealReason.LIFETIME)]  # 1000 ms after its CreateSegment
    assert_replays(w)


def test_insert_into_an_expired_segment_rolls_over_without_waiting_for_tick(w: LogWriter) -> None:
    s1 = w.insert("v0", C, P, 1, 1)
    w.now_ms += 300
    start = len(w.log)
    assert w.insert("v0", C, P, 1, 1) != s1
    assert w.log[start].type == MessageType.FLUSH and w.log[start].message.segment_id == s1
    assert_replays(w)


def test_pending_seals_lists_instructions_not_yet_carried_out(w: LogWriter) -> None:
    s1 = w.insert("v0", C, P, 1, 1)
    s2 = w.insert("v0", D, P, 1, 1)
    seals = w.manager.tick(w.now_ms + 300)  # the caller does not append the Flushes
    assert seals == [seal(s1, SealReason.IDLE), seal(s2, SealReason.IDLE, collection=D)]
    assert w.manager.tick(w.now_ms + 400) == []
    assert w.manager.pending_seals() == seals
    w.manager.segment_flushed(s1)
    assert w.manager.pending_seals() == seals[1:]
