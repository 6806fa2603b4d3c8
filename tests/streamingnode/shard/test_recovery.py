"""Rebuilding a ShardManager from the WAL (observe) and from a snapshot."""

from __future__ import annotations

from common.message import CreateSegment, DropCollection, Flush, Insert, ManualFlush, TimeTick
from protos.common_pb2 import MessageType
from streamingnode.shard import SealPolicy, SealReason, SegmentState, ShardManager
from tests.streamingnode.shard.writer import LogWriter, created, entry, old_entry, replay

POLICY = SealPolicy(max_rows=10, max_bytes=100, max_lifetime_ms=1_000, max_idle_ms=300)
C, P = 1, 10


def busy_writer() -> LogWriter:
    w = LogWriter(POLICY)
    w.create_collection(C, ["v0", "v1"])
    w.create_collection(2, ["v1"])
    for i in range(12):
        w.now_ms += 40
        w.insert(f"v{i % 2}", C, P + i % 3, 1 + i % 4, 7 * i)
    w.manual_flush(C, "v1", flush_ts=5)
    w.insert("v1", 2, P, 3, 3)
    w.insert("v0", C, P, 9, 9)
    w.tick(100)
    w.drop_partition(C, P + 1, "v0")
    return w


def test_replay_rebuilds_collections_segments_and_times() -> None:
    w = busy_writer()
    m = replay(POLICY, w.log)
    assert m.snapshot() == w.manager.snapshot()
    assert m.snapshot().growing()  # the scenario leaves growing segments to compare
    assert m.pending_seals() == []
    # The rebuilt manager decides like the live one from here on.
    assert m.tick(w.now_ms + 300) == w.manager.tick(w.now_ms + 300)


def test_snapshot_plus_replay_of_the_rest_equals_a_full_replay() -> None:
    w = busy_writer()
    for cut in (0, 5, len(w.log) // 2, len(w.log)):
        head = replay(POLICY, w.log[:cut]).snapshot()
        assert ShardManager.from_snapshot(head, POLICY).snapshot() == head
        assert replay(POLICY, w.log[cut:], start=head).snapshot() == w.manager.snapshot()


def test_from_snapshot_drops_in_flight_reservations() -> None:
    w = busy_writer()
    m = w.manager
    plan = m.plan_insert(vchannel="v1", collection_id=2, partition_id=P, rows=2, bytes=2, now_ms=w.now_ms)
    assert plan.segment_id is not None
    restored = ShardManager.from_snapshot(m.snapshot(), POLICY)
    seg = restored.segment(plan.segment_id)
    assert seg is not None and (seg.pending_rows, seg.pending_bytes) == (0, 0)


def test_seals_whose_flush_is_missing_from_the_log_are_pending_after_replay() -> None:
    # A log whose DropCollection/ManualFlush were not preceded by Flush messages
    # (e.g. a crash between the decision and the Flush): the seals are owed again.
    log = [
        entry(created(C, "v0"), 1),
        entry(created(2, "v0"), 1),
        entry(CreateSegment(vchannel="v0", collection_id=C, partition_id=P, segment_id=7), 2),
        entry(CreateSegment(vchannel="v0", collection_id=2, partition_id=P, segment_id=8), 2),
        entry(DropCollection(vchannel="v0", collection_id=C), 3),
        entry(ManualFlush(vchannel="v0", collection_id=2, flush_ts=4, segment_ids=(8,)), 4),
    ]
    m = replay(POLICY, log)
    assert [(s.segment_id, s.reason) for s in m.pending_seals()] == [
        (7, SealReason.COLLECTION_DROPPED),
        (8, SealReason.MANUAL_FLUSH),
    ]
    assert all(s.state is SegmentState.SEALED for s in m.snapshot().segments)


def test_observe_ignores_what_it_cannot_place() -> None:
    log = [
        # An Insert written before segment assignment existed (no segment_id).
        entry(created(C, "v0"), 1),
        old_entry(MessageType.INSERT, "v0", {"collection_id": C, "partition_id": P, "rows": 3}, 2),
        # Messages about a collection or segment this pchannel does not know.
        entry(CreateSegment(vchannel="v0", collection_id=9, partition_id=P, segment_id=5), 3),
        entry(Insert(vchannel="v0", collection_id=C, partition_id=P, rows=1, ipc=b"", segment_id=5, nbytes=1), 3),
        entry(Flush(vchannel="v0", collection_id=9, partition_id=P, segment_id=5), 3),
        old_entry(MessageType.MANUAL_FLUSH, "v3", {"collection_id": C, "flush_ts": 3}, 3),
        entry(DropCollection(vchannel="v0", collection_id=9), 3),
        entry(TimeTick(timetick=4), 4),
        old_entry(MessageType.DELETE, "v0", {"collection_id": C, "rows": 1}, 4),
    ]
    snap = replay(POLICY, log).snapshot()
    assert snap.segments == ()
    assert [(c.collection_id, c.vchannels, c.last_flush_ts) for c in snap.collections] == [(C, frozenset({"v0"}), 0)]
