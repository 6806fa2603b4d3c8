"""``WAL.request_tick``: a TimeTick above a fresh timestamp without waiting for the tick interval."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pyarrow as pa
import pytest

from common.errors import WALClosed
from common.message import Insert
from protos.common_pb2 import Message, MessageType
from streamingnode.wal.wal import WAL
from streamingnode.walimpls.wal import DeliverPolicy
from tests.streamingnode.fakes import CountingAllocator
from tests.streamingnode.wal.opened import local_wal

LONG_TICK = 60.0  # no idle TimeTick comes during a test: every tick seen was asked for or follows a batch


@pytest.fixture()
async def tso() -> CountingAllocator:
    return CountingAllocator(1000)


@pytest.fixture()
async def wal(tmp_path: Path, tso: CountingAllocator) -> AsyncIterator[WAL]:
    async with local_wal(tmp_path, tso, tick_interval=LONG_TICK) as w:
        yield w


def _insert(i: int) -> Message:
    return Insert.of(vchannel="v0", collection_id=1, partition_id=2,
                     table=pa.table({"id": pa.array([i], pa.int64())})).encode()


async def _ticks_until(wal: WAL, ts: int) -> list[Message]:
    """What a tailing reader of v0 gets until the first TimeTick >= ts."""
    got = []
    async for _, msg in wal.read(DeliverPolicy.all(), "v0"):
        got.append(msg)
        if msg.type == MessageType.TIME_TICK and msg.timetick >= ts:
            return got
    raise AssertionError("the WAL closed first")


async def test_concurrent_requests_share_one_tick_that_readers_receive(wal: WAL, tso: CountingAllocator) -> None:
    guarantee = await tso.allocate(1)  # what a Strong read carries: a fresh TSO timestamp
    async with asyncio.timeout(LONG_TICK / 4):
        reader = asyncio.create_task(_ticks_until(wal, guarantee))
        answers = await asyncio.gather(*(wal.request_tick(guarantee) for _ in range(50)))
        await reader
    assert all(a > guarantee for a in answers)
    assert wal.on_demand_ticks == 1


async def test_a_covered_request_is_answered_by_the_last_tick(wal: WAL, tso: CountingAllocator) -> None:
    guarantee = await tso.allocate(1)
    (appended,) = await wal.append([_insert(1)])  # stamped and closed by a TimeTick above the guarantee
    assert await wal.request_tick(guarantee) > appended.timetick
    assert wal.on_demand_ticks == 0


async def test_a_write_acknowledged_before_the_request_comes_before_the_tick(wal: WAL, tso: CountingAllocator) -> None:
    await wal.append([_insert(1)])
    guarantee = await tso.allocate(1)
    async with asyncio.timeout(LONG_TICK / 4):
        reader = asyncio.create_task(_ticks_until(wal, guarantee))
        await wal.request_tick(guarantee)
        got = await reader
    assert [m.type for m in got].count(MessageType.INSERT) == 1
    assert got[-1].type == MessageType.TIME_TICK and got[-1].timetick > guarantee


async def test_requests_after_close_fail(wal: WAL, tso: CountingAllocator) -> None:
    await wal.close()
    with pytest.raises(WALClosed):
        await wal.request_tick(await tso.allocate(1))
