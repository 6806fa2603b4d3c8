"""The WAL adaptor: timetick order, volatile idle ticks, vchannel filter, stale-owner filter."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pyarrow as pa
import pytest

from common.message import Insert, TimeTick, decode
from protos.common_pb2 import Message, MessageType
from streamingnode.wal.wal import WAL
from streamingnode.walimpls.wal import DeliverPolicy, MessageID
from tests.streamingnode.fakes import CountingAllocator
from tests.streamingnode.wal.opened import local_wal


@pytest.fixture()
async def wal(tmp_path: Path) -> AsyncIterator[WAL]:
    async with local_wal(tmp_path, CountingAllocator(1000), tick_interval=0.05) as w:
        yield w


def _insert(v: str, i: int) -> Message:
    table = pa.table({"id": pa.array([i], pa.int64())})
    return Insert.of(vchannel=v, collection_id=1, partition_id=2, table=table).encode()


async def _collect(wal: WAL, n: int, *, vchannel: str = "", policy: DeliverPolicy | None = None) -> list[tuple[MessageID, Message]]:
    out = []
    async for item in wal.read(policy or DeliverPolicy.all(), vchannel):
        out.append(item)
        if len(out) == n:
            break
    return out


async def test_concurrent_appends_get_increasing_timeticks_in_log_order(wal: WAL) -> None:
    results = await asyncio.gather(*(wal.append([_insert("v0", i)]) for i in range(50)))
    appended = sorted((r[0].message_id, r[0].timetick) for r in results)
    ticks = [t for _, t in appended]
    assert ticks == sorted(ticks) and len(set(ticks)) == 50
    seen = await _collect(wal, 60)
    inserts = [(mid, m.timetick) for mid, m in seen if m.type == MessageType.INSERT]
    assert inserts == appended
    # Every TimeTick is above every message before it.
    high = 0
    for _, m in seen:
        if m.type == MessageType.TIME_TICK:
            assert m.timetick > high
        high = max(high, m.timetick)


async def test_idle_wal_publishes_ticks_without_writing(wal: WAL, tmp_path: Path) -> None:
    await wal.append([_insert("v0", 1)])
    files = list((tmp_path / "p0").glob("*.log"))
    size = sum(f.stat().st_size for f in files)
    got = await _collect(wal, 6)
    ticks = [m.timetick for _, m in got if m.type == MessageType.TIME_TICK]
    assert len(ticks) >= 4 and ticks == sorted(ticks) and len(set(ticks)) == len(ticks)
    await asyncio.sleep(0.3)
    assert sum(f.stat().st_size for f in files) == size  # idle: nothing persisted


async def test_vchannel_filter_keeps_ticks(wal: WAL) -> None:
    for i in range(4):
        await wal.append([_insert(f"v{i % 2}", i)])
    got = await _collect(wal, 8, vchannel="v1")
    assert {m.vchannel for _, m in got if m.type != MessageType.TIME_TICK} == {"v1"}
    assert any(m.type == MessageType.TIME_TICK for _, m in got)


async def test_late_message_below_delivered_tick_is_dropped(wal: WAL) -> None:
    await wal.append([_insert("v0", 1)])
    # A stale owner's late write: persisted after a TimeTick but with an older timetick.
    late = _insert("v0", 99)
    late.timetick = 5
    await wal.impl.append([late.SerializeToString()])
    await wal.append([_insert("v0", 2)])
    got = await _collect(wal, 8)
    ids = [m for _, m in got if m.type == MessageType.INSERT]
    assert all(m.timetick != 5 for m in ids)
    assert len(ids) == 2


async def test_resume_after_a_volatile_tick_misses_nothing(wal: WAL) -> None:
    await wal.append([_insert("v0", 1)])
    first = await _collect(wal, 4)
    resume_id = first[-1][0]
    await wal.append([_insert("v0", 2)])
    rest = await _collect(wal, 2, policy=DeliverPolicy.start_after(resume_id))
    assert any(m.type == MessageType.INSERT for _, m in rest)


def test_first_tick_is_a_time_tick() -> None:
    assert TimeTick(timetick=7).encode().type == MessageType.TIME_TICK


async def test_transaction_shares_one_timetick_and_is_delivered_whole(wal: WAL) -> None:
    before = await wal.append([_insert("v0", 0)])
    txn, plain = await asyncio.gather(
        wal.append([_insert("v0", 1), _insert("v0", 2), _insert("v0", 3)], txn=True),
        wal.append([_insert("v0", 4), _insert("v0", 5)]),
    )
    assert len({a.timetick for a in txn}) == 1
    assert len({a.timetick for a in plain}) == 2
    assert txn[0].timetick > before[0].timetick
    got = await _collect(wal, 12)
    inserts = [m for _, m in got if m.type == MessageType.INSERT]
    assert len(inserts) == 6  # the scanner keeps every message of a transaction
    ticks = [m.timetick for m in inserts]
    assert ticks == sorted(ticks)
    # A TimeTick never falls inside the transaction.
    seq = [(m.type, m.timetick) for _, m in got]
    t = txn[0].timetick
    positions = [i for i, (_, tt) in enumerate(seq) if tt == t]
    assert positions == list(range(positions[0], positions[0] + 3))


def _row_id(m: Message) -> int:
    return int(decode(m).table().column("id")[0].as_py())


async def test_an_appender_resumes_before_a_tailing_reader_sees_its_batch(wal: WAL) -> None:
    # The append's answer is on the client's path; the readers' work (the flusher) is not.
    events: list[str] = []
    await wal.append([_insert("v0", 0)])
    caught_up = asyncio.Event()

    async def tail() -> None:
        async for _, m in wal.read(DeliverPolicy.all()):
            if m.type == MessageType.INSERT and _row_id(m) == 1:
                events.append("read")
                return
            if m.type == MessageType.TIME_TICK:
                caught_up.set()

    reader = asyncio.create_task(tail())
    await caught_up.wait()  # the reader now waits on the buffer for the next batch
    await wal.append([_insert("v0", 1)])
    events.append("acked")
    await asyncio.wait_for(reader, 10)
    assert events == ["acked", "read"]


class _CountingFailures(CountingAllocator):
    def __init__(self) -> None:
        super().__init__(1000, name="tso")
        self.tries = 0

    async def allocate(self, count: int) -> int:
        self.tries += self.fail
        return await super().allocate(count)


async def test_an_idle_wal_backs_off_while_its_ticks_fail_and_appends_still_answer(tmp_path: Path) -> None:
    """The TSO unreachable (a coordinator restarting): an idle WAL's TimeTicks fail at once. It
    tries again less and less often (at most one try a second), never in a loop that starves
    the other tasks, and an append still hears why it failed; once the TSO answers, ticks resume."""
    tso = _CountingFailures()
    async with local_wal(tmp_path, tso, tick_interval=0.01) as wal:
        tso.fail = True
        await asyncio.sleep(1.5)
        assert 0 < tso.tries <= 12  # 0.01 s doubling to 1 s: 8 tries in 1.5 s; every 0.01 s would be ~150
        with pytest.raises(Exception, match="tso unavailable"):
            await asyncio.wait_for(wal.append([_insert("v0", 1)]), 5)
        tso.fail = False
        await asyncio.wait_for(wal.append([_insert("v0", 2)]), 5)
        ticks = [m for _, m in await _collect(wal, 3) if m.type == MessageType.TIME_TICK]
        assert ticks
