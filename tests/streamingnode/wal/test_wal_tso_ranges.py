"""The WAL on a node's range of TSO timestamps: data from the range, the rest fresh.

The clock of the range never moves here, so a range never expires by age: every
timestamp above one the "coordinator" took meanwhile must come from a fresh
allocation, which is what these tests check the WAL asks for.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pyarrow as pa
import pytest

from common.message import Insert, ManualFlush
from protos.common_pb2 import Message, MessageType
from streamingnode.wal.timestamps import BatchedTimestamps
from streamingnode.wal.wal import WAL
from streamingnode.walimpls.registry import build_opener
from streamingnode.walimpls.wal import DeliverPolicy, WALOpener
from tests.streamingnode.fakes import CountingAllocator
from tests.streamingnode.wal.collection import create_collection


class World:
    def __init__(self, tmp_path: Path) -> None:
        self.opener: WALOpener = build_opener("local", root_dir=tmp_path)
        self.tso = CountingAllocator(1000, name="tso")  # the coordinator's TSO
        self.ts = BatchedTimestamps(self.tso, batch=1000, clock=lambda: 0.0)  # the node's ranges, never stale

    async def wal(self, term: int) -> WAL:
        w = WAL(await self.opener.open("p0", term), self.ts, tick_interval=0.05)
        await w.start()
        return w


@pytest.fixture()
async def world(tmp_path: Path) -> AsyncIterator[World]:
    w = World(tmp_path)
    try:
        yield w
    finally:
        await w.opener.close()


def _insert(i: int) -> Message:
    return Insert.of(
        vchannel="v0", collection_id=1, partition_id=2, table=pa.table({"id": pa.array([i], pa.int64())})
    ).encode()


async def test_inserts_share_one_range(world: World) -> None:
    wal = await world.wal(1)
    try:
        calls = world.ts.remote_calls
        got = [(await wal.append([_insert(i)]))[0].timetick for i in range(20)]
        assert got == sorted(got) and len(set(got)) == 20
        assert world.ts.remote_calls - calls <= 1
    finally:
        await wal.close()


async def test_an_insert_may_be_stamped_below_a_later_coordinator_timestamp(world: World) -> None:
    """The premise of the next test: without a fresh allocation the range is below what the TSO issued since."""
    wal = await world.wal(1)
    try:
        await wal.append([_insert(0)])
        issued = await world.tso.allocate(1)
        (got,) = await wal.append([_insert(1)])
        assert got.timetick < issued
    finally:
        await wal.close()


@pytest.mark.parametrize("kind", ["create_collection", "manual_flush"])
async def test_a_coordinator_message_and_everything_after_it_are_above_its_timestamps(world: World, kind: str) -> None:
    wal = await world.wal(1)
    try:
        await wal.append([_insert(0)])
        issued = await world.tso.allocate(1)  # e.g. the flush_ts the coordinator puts in its ManualFlush
        msg = (
            ManualFlush(vchannel="v0", collection_id=1, flush_ts=issued).encode()
            if kind == "manual_flush"
            else create_collection("v0", 7)
        )
        (control,) = await wal.append([msg])
        (after,) = await wal.append([_insert(1)])
        assert issued < control.timetick < after.timetick
    finally:
        await wal.close()


async def test_an_idle_wal_ticks_past_a_timestamp_issued_meanwhile(world: World) -> None:
    """What a Strong read waits for: tsafe reaching a guarantee timestamp the proxy took from the TSO."""
    wal = await world.wal(1)
    try:
        (last,) = await wal.append([_insert(0)])
        guarantee = await world.tso.allocate(1)
        reached = 0
        async with asyncio.timeout(5):
            async for _, m in wal.read(DeliverPolicy.start_after(last.message_id)):
                if m.type == MessageType.TIME_TICK and m.timetick > guarantee:
                    reached = m.timetick
                    break
        assert reached > guarantee
    finally:
        await wal.close()


async def test_a_new_term_starts_above_what_another_owner_took_meanwhile(world: World) -> None:
    old = await world.wal(1)
    await old.append([_insert(0)])  # this node now holds a range
    await old.close()
    other_owner = await world.tso.allocate(5)  # term 2 ran elsewhere
    reopened = await world.wal(3)
    try:
        first_tick = None
        async for _, m in reopened.read(DeliverPolicy.all()):
            if m.type == MessageType.TIME_TICK and m.wal_term == 3:
                first_tick = m.timetick
                break
        assert first_tick is not None and first_tick > other_owner + 4
        (after,) = await reopened.append([_insert(1)])
        assert after.timetick > first_tick
    finally:
        await reopened.close()
