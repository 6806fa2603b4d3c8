"""Read holds: truncation never passes an open reader's restart position; an idle reader is abandoned."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pyarrow as pa
import pytest

from common.errors import PositionTruncated
from common.message import Insert
from common.tsoutil import compose
from protos.common_pb2 import Message, MessageType
from streamingnode.wal.holds import ReadHolds
from streamingnode.wal.recovery import MemoryRecoveryStore
from streamingnode.wal.wal import WAL
from streamingnode.walimpls.registry import build_opener
from streamingnode.walimpls.wal import DeliverPolicy, MessageID
from tests.streamingnode.fakes import CountingAllocator
from tests.streamingnode.wal.collection import create_collection

pytestmark = pytest.mark.timeout(60)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_bound_is_the_lowest_live_hold_and_idle_holds_are_abandoned() -> None:
    clock = Clock()
    holds = ReadHolds("p0", max_age=60, clock=clock)
    assert holds.bound(MessageID(100)) == MessageID(100)
    a = holds.open(MessageID(40))
    b = holds.open(MessageID(70))
    assert holds.bound(MessageID(100)) == MessageID(40)
    assert holds.bound(MessageID(30)) == MessageID(30)
    everything = holds.open(None)
    assert holds.bound(MessageID(100)) is None
    holds.close(everything)
    clock.now += 50
    holds.move(b, MessageID(90))
    clock.now += 20  # a read nothing for 70 s, b for 20 s
    assert holds.bound(MessageID(100)) == MessageID(90)
    assert a.abandoned and not b.abandoned and len(holds) == 1
    holds.close(b)
    assert holds.bound(MessageID(100)) == MessageID(100)


def _insert(first: int) -> Message:
    return Insert.of(
        vchannel="v0",
        collection_id=7,
        partition_id=8,
        table=pa.table({"id": pa.array(range(first, first + 10), pa.int64())}),
    ).encode()


async def _wal(tmp_path: Path, clock: Clock, *, hold_seconds: float = 600.0) -> WAL:
    opener = build_opener("local", root_dir=tmp_path, segment_bytes=2048, sync=False)
    wal = WAL(
        await opener.open("p0", 1),
        CountingAllocator(compose(int(time.time() * 1000))),
        tick_interval=0.05,
        recovery=MemoryRecoveryStore().handle("p0"),
        snapshot_interval=0.0,
        read_hold_seconds=hold_seconds,
        clock=clock,
    )
    await wal.start()
    return wal


async def _saved(wal: WAL) -> MessageID:
    async with asyncio.timeout(5):
        while wal.saved_position is None or wal.saved_position.message_id != wal._folded.message_id:  # type: ignore[union-attr]
            await asyncio.sleep(0.02)
    return MessageID.from_bytes(wal.saved_position.message_id)


async def test_truncation_keeps_what_an_open_reader_still_needs(tmp_path: Path) -> None:
    wal = await _wal(tmp_path, Clock())
    await wal.append([create_collection("v0", 7)])
    ids = [(await wal.append([_insert(i * 10)]))[0].message_id for i in range(10)]
    reader = wal.scanner(DeliverPolicy.start_from(ids[2]), "v0")  # a consumer that is loading: not reading yet
    for i in range(10, 40):
        await wal.append([_insert(i * 10)])
    saved = await _saved(wal)
    assert await wal.truncate(saved) == ids[2]
    first = wal.impl.first_message_id()
    assert first is not None and first <= ids[2]
    wal.check_start(DeliverPolicy.start_from(ids[2]))
    got = []
    async for _, msg in reader:  # everything from its position is still there, in order
        if msg.type == MessageType.INSERT:
            got.append(msg)
            if len(got) == 38:
                break
    assert len(got) == 38
    reader.release()  # the consumer left (the handler releases its scanner when the stream ends)
    assert await wal.truncate(saved) == saved  # truncation catches up
    await wal.close()


async def test_a_reader_idle_too_long_is_abandoned_and_fails_instead_of_skipping(tmp_path: Path) -> None:
    clock = Clock()
    wal = await _wal(tmp_path, clock, hold_seconds=30)
    await wal.append([create_collection("v0", 7)])
    ids = [(await wal.append([_insert(i * 10)]))[0].message_id for i in range(40)]
    stream = aiter(wal.scanner(DeliverPolicy.start_from(ids[0]), "v0"))
    await anext(stream)  # it read something, then stopped pulling
    saved = await _saved(wal)
    assert await wal.truncate(saved) < saved  # held
    clock.now += 31
    assert await wal.truncate(saved) == saved  # abandoned: the files it needed are gone
    with pytest.raises(PositionTruncated):
        while True:
            await anext(stream)
    await wal.close()
