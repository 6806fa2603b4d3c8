"""Sync policies: buffer full, stale, memory pressure; nothing twice."""

from __future__ import annotations

import pyarrow as pa

from common.message import Delete
from streamingnode.flusher.pipeline import SyncDeletes, SyncSegment
from streamingnode.flusher.policy import SyncOptions, due_syncs
from tests.streamingnode.flusher.test_pipeline import create_segment, insert, mid, pipeline, stamp


def _filled(clock: list[float], rows_per_segment: dict[int, int]):  # type: ignore[no-untyped-def]
    p = pipeline(clock=lambda: clock[0])
    n = 1
    for sid, rows in rows_per_segment.items():
        p.handle(mid(n), create_segment(sid, n * 10))
        n += 1
        p.handle(mid(n), insert(sid, list(range(rows)), n * 10))
        n += 1
    return p


def test_full_stale_and_nothing_twice() -> None:
    clock = [100.0]
    p = _filled(clock, {1: 1000, 2: 10})
    big = p.segments[1].nbytes
    opts = SyncOptions(segment_buffer_bytes=big, stale_seconds=30)
    assert due_syncs([p], opts, clock[0], set()) == [SyncSegment(p.vchannel, 1, False, "buffer full")]
    assert due_syncs([p], opts, clock[0], {(p.vchannel, 1)}) == []
    clock[0] += 31
    assert SyncSegment(p.vchannel, 2, False, "stale") in due_syncs([p], opts, clock[0], set())


def test_sealed_segments_are_left_to_their_final_sync() -> None:
    clock = [0.0]
    p = _filled(clock, {1: 1000})
    p.segments[1].sealed = True
    assert due_syncs([p], SyncOptions(segment_buffer_bytes=1), 1e9, set()) == []


def test_memory_pressure_syncs_the_largest_buffers_until_under_half() -> None:
    clock = [0.0]
    p = _filled(clock, {1: 4000, 2: 2000, 3: 100})
    sizes = {sid: b.nbytes for sid, b in p.segments.items()}
    limit = sum(sizes.values()) - 1
    work = due_syncs([p], SyncOptions(memory_limit_bytes=limit), 0.0, set())
    assert [w.segment_id for w in work if isinstance(w, SyncSegment)] == [1]  # 4000 rows leave under half
    assert all(w.reason == "memory pressure" for w in work if isinstance(w, SyncSegment))


def test_deletes_sync_when_full_or_stale() -> None:
    clock = [0.0]
    p = pipeline(clock=lambda: clock[0])
    p.handle(
        mid(1), stamp(Delete.of(vchannel=p.vchannel, collection_id=1, pks=pa.array([1, 2], pa.int64())).encode(), 10)
    )
    opts = SyncOptions(delete_stale_seconds=5)
    assert due_syncs([p], opts, 1.0, set()) == []
    assert due_syncs([p], opts, 6.0, set()) == [SyncDeletes(p.vchannel, "stale")]
    assert due_syncs([p], SyncOptions(delete_buffer_bytes=1), 1.0, set()) == [SyncDeletes(p.vchannel, "buffer full")]
