"""A failed backend append (the disk) does not stop time: readers see TimeTicks again once it works."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pyarrow as pa
import pytest

from common import failpoints
from common.errors import DiskQuotaExhausted
from common.message import Insert, decode
from protos.common_pb2 import Message, MessageType
from streamingnode.wal.wal import WAL
from streamingnode.walimpls.wal import DeliverPolicy, MessageID
from tests.streamingnode.fakes import CountingAllocator
from tests.streamingnode.wal.opened import local_wal

pytestmark = [pytest.mark.timeout(30), pytest.mark.usefixtures("disarmed")]


@pytest.fixture()
async def tso() -> CountingAllocator:
    return CountingAllocator(1000)


@pytest.fixture()
async def wal(tmp_path: Path, tso: CountingAllocator) -> AsyncIterator[WAL]:
    async with local_wal(tmp_path, tso, tick_interval=0.05) as w:
        yield w


def _insert(i: int) -> Message:
    return Insert.of(
        vchannel="v0", collection_id=1, partition_id=2, table=pa.table({"id": pa.array([i], pa.int64())})
    ).encode()


def _row_id(msg: Message) -> int:
    return int(decode(msg).table().column("id")[0].as_py())


async def _tick_above(seen: list[tuple[MessageID, Message]], timetick: int, timeout: float) -> bool:
    try:
        async with asyncio.timeout(timeout):
            while not any(m.type == MessageType.TIME_TICK and m.timetick > timetick for _, m in seen):
                await asyncio.sleep(0.02)
    except TimeoutError:
        return False
    return True


async def test_time_moves_again_after_a_failed_append_without_a_new_write(wal: WAL, tso: CountingAllocator) -> None:
    await wal.append([_insert(1)])
    seen: list[tuple[MessageID, Message]] = []

    async def read() -> None:
        async for item in wal.read(DeliverPolicy.all()):
            seen.append(item)

    reader = asyncio.create_task(read())
    try:
        assert await _tick_above(seen, 0, 5)
        failpoints.arm("wal.local.write=ENOSPC")
        with pytest.raises(DiskQuotaExhausted):
            await wal.append([_insert(2)])
        await asyncio.sleep(0.3)  # idle ticks while the disk still fails
        failpoints.arm("")
        freed_at = tso.next  # every TimeTick from here on is above this
        assert await _tick_above(seen, freed_at, 5), "no TimeTick reached the reader after the disk came back"
        (done,) = await wal.append([_insert(3)])
        assert await _tick_above(seen, done.timetick, 5)
        inserts = [_row_id(m) for _, m in seen if m.type == MessageType.INSERT]
        assert inserts == [1, 3]  # the refused one is nowhere
    finally:
        reader.cancel()
        await asyncio.gather(reader, return_exceptions=True)
