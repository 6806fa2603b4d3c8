"""The WAL writer with the shard interceptor: segment assignment, self-generated CreateSegment/Flush."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from common.errors import CollectionNotFound, MalformedMessage, StrataError
from common.message import CreateSegment, Delete, DropCollection, Flush, Insert, ManualFlush, decode
from common.tsoutil import compose
from protos.common_pb2 import Message, MessageType
from streamingnode.shard import SealPolicy, ShardManager
from streamingnode.wal.shard_interceptor import ShardInterceptor
from streamingnode.wal.wal import WAL
from streamingnode.walimpls.registry import build_opener
from streamingnode.walimpls.wal import DeliverPolicy
from tests.streamingnode.fakes import CountingAllocator
from tests.streamingnode.wal.collection import create_collection, schema_change


class Harness:
    def __init__(self, root: Path, policy: SealPolicy) -> None:
        self.root, self.policy = root, policy
        # Realistic hybrid timestamps: replay reads segment ages from them.
        self.tso, self.ids = CountingAllocator(compose(int(time.time() * 1000))), CountingAllocator(500)

    async def open(self, term: int) -> tuple[WAL, object]:
        opener = build_opener("local", root_dir=self.root)
        impl = await opener.open("p0", term)
        shard = ShardInterceptor(ShardManager(self.policy), self.ids)
        wal = WAL(impl, self.tso, tick_interval=0.05, interceptors=[shard])
        await wal.start()
        return wal, opener


@pytest.fixture()
async def harness(tmp_path: Path) -> AsyncIterator[Harness]:
    yield Harness(tmp_path, SealPolicy(max_rows=10))


def _insert(rows: int) -> Message:
    return Insert.of(
        vchannel="v0", collection_id=7, partition_id=8, table=pa.table({"id": pa.array(range(rows), pa.int64())})
    ).encode()


async def _log(wal: WAL) -> list[tuple[int, Any]]:
    out = []
    last = wal.impl.last_message_id()
    async for mid, msg in wal.read(DeliverPolicy.all()):
        if msg.type != MessageType.TIME_TICK:
            out.append((msg.type, decode(msg)))
        if last is not None and mid >= last:
            break
    return out


async def test_inserts_get_segments_and_roll_over_at_the_row_cap(harness: Harness) -> None:
    wal, opener = await harness.open(1)
    try:
        await wal.append([create_collection("v0", 7)])
        for _ in range(3):
            await wal.append([_insert(4)])  # 4 + 4 fit; the third would pass max_rows=10
        log = await _log(wal)
        kinds = [k for k, _ in log]
        assert kinds == [
            MessageType.CREATE_COLLECTION,
            MessageType.CREATE_SEGMENT, MessageType.INSERT, MessageType.INSERT,
            MessageType.FLUSH, MessageType.CREATE_SEGMENT, MessageType.INSERT,
        ]  # fmt: skip
        segs = [h.segment_id for k, h in log if k == MessageType.INSERT]
        assert segs[0] == segs[1] != segs[2]
        flushed = next(h for k, h in log if k == MessageType.FLUSH)
        assert flushed.segment_id == segs[0]
    finally:
        await wal.close()
        await opener.close()  # type: ignore[attr-defined]


async def test_unknown_collection_is_refused_and_writes_nothing(harness: Harness) -> None:
    wal, opener = await harness.open(1)
    try:
        with pytest.raises(CollectionNotFound):
            await wal.append([_insert(1)])
        with pytest.raises(CollectionNotFound):
            await wal.append([Delete.of(vchannel="v0", collection_id=7, pks=pa.array([1], pa.int64())).encode()])
        await wal.append([create_collection("v0", 7)])
        await wal.append([DropCollection(vchannel="v0", collection_id=7).encode()])
        with pytest.raises(CollectionNotFound):
            await wal.append([_insert(1)])
        assert [k for k, _ in await _log(wal)] == [MessageType.CREATE_COLLECTION, MessageType.DROP_COLLECTION]
    finally:
        await wal.close()
        await opener.close()  # type: ignore[attr-defined]


async def test_manual_flush_seals_and_records_segments(harness: Harness) -> None:
    wal, opener = await harness.open(1)
    try:
        await wal.append([create_collection("v0", 7)])
        await wal.append([_insert(2)])
        [flushed] = await wal.append([ManualFlush(vchannel="v0", collection_id=7, flush_ts=123).encode()])
        await wal.append([_insert(2)])
        log = await _log(wal)
        manual = next(h for k, h in log if k == MessageType.MANUAL_FLUSH)
        first_seg = next(h.segment_id for k, h in log if k == MessageType.INSERT)
        assert manual.segment_ids == (first_seg,)
        assert flushed.sealed_segment_ids == (first_seg,)  # the appender hears what it sealed
        inserts = [h.segment_id for k, h in log if k == MessageType.INSERT]
        assert inserts[1] != first_seg  # a new segment after the flush
    finally:
        await wal.close()
        await opener.close()  # type: ignore[attr-defined]


async def test_schema_change_seals_the_collections_segments_and_replays(harness: Harness) -> None:
    """A field added: the WAL writes a Flush of the growing segment before the SchemaChange, and
    later inserts go to a new segment, also after a reopen (the seal is replayed, not redone)."""
    wal, opener = await harness.open(1)
    await wal.append([create_collection("v0", 7)])
    await wal.append([_insert(2)])
    await wal.append([schema_change("v0", 7, version=1)])
    with pytest.raises(CollectionNotFound):
        await wal.append([schema_change("v0", 8, version=1)])
    await wal.close()
    await opener.close()  # type: ignore[attr-defined]
    wal, opener = await harness.open(2)
    try:
        await wal.append([_insert(2)])
        log = await _log(wal)
        kinds = [k for k, _ in log]
        assert kinds == [
            MessageType.CREATE_COLLECTION, MessageType.CREATE_SEGMENT, MessageType.INSERT,
            MessageType.FLUSH, MessageType.SCHEMA_CHANGE, MessageType.CREATE_SEGMENT, MessageType.INSERT,
        ]  # fmt: skip
        first, second = (h.segment_id for k, h in log if k == MessageType.INSERT)
        assert first != second and next(h for k, h in log if k == MessageType.FLUSH).segment_id == first
    finally:
        await wal.close()
        await opener.close()  # type: ignore[attr-defined]


async def test_reopen_replays_segment_state(harness: Harness) -> None:
    wal, opener = await harness.open(1)
    await wal.append([create_collection("v0", 7)])
    await wal.append([_insert(3)])
    await wal.close()
    await opener.close()  # type: ignore[attr-defined]
    wal, opener = await harness.open(2)
    try:
        await wal.append([_insert(3)])  # same open segment: 3 + 3 <= 10, no new CreateSegment
        log = await _log(wal)
        assert [k for k, _ in log].count(MessageType.CREATE_SEGMENT) == 1
        segs = {h.segment_id for k, h in log if k == MessageType.INSERT}
        assert len(segs) == 1
    finally:
        await wal.close()
        await opener.close()  # type: ignore[attr-defined]


async def test_idle_policy_flushes_without_an_append(tmp_path: Path) -> None:
    h = Harness(tmp_path, SealPolicy(max_idle_ms=50, max_lifetime_ms=60_000))
    wal, opener = await h.open(1)
    try:
        await wal.append([create_collection("v0", 7)])
        await wal.append([_insert(1)])
        for _ in range(40):
            if any(k == MessageType.FLUSH for k, _ in await _log(wal)):
                break
            await asyncio.sleep(0.05)
        assert any(k == MessageType.FLUSH for k, _ in await _log(wal))
    finally:
        await wal.close()
        await opener.close()  # type: ignore[attr-defined]


async def test_a_malformed_message_is_refused_and_nothing_of_its_append_is_written(harness: Harness) -> None:
    """An Insert without ``rows`` fails its own append with MalformedMessage (INVALID_ARGUMENT),
    reserves no segment room, and the WAL goes on writing."""
    wal, opener = await harness.open(1)
    try:
        await wal.append([create_collection("v0", 7)])
        before = await _log(wal)
        bad = Message(type=MessageType.INSERT, vchannel="v0", header=b'{"collection_id": 7, "partition_id": 8}')
        with pytest.raises(MalformedMessage, match="header key 'rows' is missing"):
            await wal.append([_insert(2), bad])  # one append: the good Insert is not written either
        assert await _log(wal) == before
        await wal.append([_insert(2)])
        log = await _log(wal)
        assert [k for k, _ in log] == [MessageType.CREATE_COLLECTION, MessageType.CREATE_SEGMENT, MessageType.INSERT]
        [segment] = [m for _, m in log if isinstance(m, CreateSegment)]
        assert harness_rows(wal, segment.segment_id) == 2  # the refused append reserved nothing
    finally:
        await wal.close()
        await opener.close()  # type: ignore[attr-defined]



async def test_a_refused_append_leaves_no_segment_without_its_create_segment(harness: Harness) -> None:
    """An Insert planned into a fresh segment, then a message of the same append refused: nothing is
    written, so the segment is forgotten and the next Insert gets a CreateSegment before it (the
    flusher skips inserts into a segment it never saw created)."""
    wal, opener = await harness.open(1)
    try:
        await wal.append([create_collection("v0", 7)])
        stray = Delete.of(vchannel="v0", collection_id=99, pks=pa.array([1], pa.int64())).encode()
        with pytest.raises(CollectionNotFound):
            await wal.append([_insert(2), stray])
        await wal.append([_insert(2)])
        log = await _log(wal)
        assert [k for k, _ in log] == [MessageType.CREATE_COLLECTION, MessageType.CREATE_SEGMENT, MessageType.INSERT]
        [created] = [m for _, m in log if isinstance(m, CreateSegment)]
        [inserted] = [m for _, m in log if isinstance(m, Insert)]
        assert inserted.segment_id == created.segment_id
    finally:
        await wal.close()
        await opener.close()  # type: ignore[attr-defined]


def harness_rows(wal: WAL, segment_id: int) -> int:
    assert wal._shard is not None
    seg = wal._shard.manager.segment(segment_id)
    assert seg is not None
    return seg.rows


async def test_a_failed_append_leaves_no_segment_without_its_create_segment(harness: Harness) -> None:
    """An Insert planned into a fresh segment whose append then fails (here: no timestamps, as
    while the coordinator restarts): its CreateSegment is not in the log, so no later Insert may
    name that segment (the flusher skips inserts into a segment it never saw created, and its
    checkpoint would pass their rows)."""
    wal, opener = await harness.open(1)
    try:
        await wal.append([create_collection("v0", 7)])
        harness.tso.fail = True
        with pytest.raises(StrataError, match="unavailable"):
            await wal.append([_insert(2)])
        harness.tso.fail = False
        await wal.append([_insert(2)])
        await wal.append([_insert(2)])
        log = await _log(wal)
        created = {m.segment_id for _, m in log if isinstance(m, CreateSegment)}
        inserted = [m.segment_id for _, m in log if isinstance(m, Insert)]
        assert len(inserted) == 2 and set(inserted) <= created
        # Had the failed append reached the log after all, its segment would be closed for readers:
        # the segment is sealed, and its Flush is written at an idle tick.
        [doubtful] = set(range(500, harness.ids.next)) - created  # the ids the shard interceptor took
        deadline = time.monotonic() + 10
        while not any(isinstance(m, Flush) and m.segment_id == doubtful for _, m in await _log(wal)):
            assert time.monotonic() < deadline, "the segment of the failed append was never flushed"
            await asyncio.sleep(0.05)
    finally:
        await wal.close()
        await opener.close()  # type: ignore[attr-defined]
