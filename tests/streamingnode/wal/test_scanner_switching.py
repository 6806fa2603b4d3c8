"""The switchable scanner over a real ``WAL`` and ``local`` backend: exactly-once across mode switches."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest

from common.errors import StrataError
from common.message import Insert
from protos.common_pb2 import Message, MessageType
from streamingnode.wal.scanner import ScanMode
from streamingnode.wal.wab import BufferOptions
from streamingnode.wal.wal import WAL, Appended
from streamingnode.walimpls.registry import build_opener
from streamingnode.walimpls.wal import DeliverPolicy, MessageID, WALImpl, WALOpener
from tests.streamingnode.fakes import CountingAllocator


def insert(vchannel: str, i: int, size: int = 200) -> Message:
    body = i.to_bytes(8, "big") + b"x" * size  # not Arrow: these readers look at the first 8 bytes only
    return Insert(vchannel=vchannel, collection_id=1, partition_id=0, rows=1, ipc=body).encode()


async def open_wal(tmp_path: Path, **kwargs: object) -> tuple[WAL, WALOpener]:
    opener = build_opener("local", root_dir=tmp_path, sync=False)
    impl = await opener.open("p0", 1)
    wal = WAL(impl, CountingAllocator(1000), **kwargs)  # type: ignore[arg-type]
    await wal.start()
    return wal, opener


@pytest.fixture()
async def small_wal(tmp_path: Path) -> AsyncIterator[WAL]:
    wal, opener = await open_wal(tmp_path, tick_interval=0.02, buffer=BufferOptions(max_bytes=4096))
    try:
        yield wal
    finally:
        await wal.close()
        await opener.close()


async def test_slow_consumer_with_a_tiny_buffer_sees_everything_once_in_order(small_wal: WAL) -> None:
    wal = small_wal
    rng = random.Random(7)
    appended: list[Appended] = []
    stop = asyncio.Event()
    produced = asyncio.Event()

    async def produce() -> None:
        i = 0
        while not stop.is_set():
            n = rng.randint(1, 3)
            appended.extend(await wal.append([insert(f"v{(i + k) % 2}", i + k) for k in range(n)]))
            i += n
            await asyncio.sleep(rng.random() * 0.002)
        produced.set()

    scanner = wal.scanner(DeliverPolicy.all())
    seen: list[tuple[MessageID, Message]] = []

    async def consume() -> None:
        async for item in scanner:
            seen.append(item)
            if len(seen) % 60 == 0:
                await asyncio.sleep(rng.random() * 0.02)  # slow now and then: falls behind eviction
            if produced.is_set() and item[0] >= appended[-1].message_id:
                return

    async with asyncio.timeout(15), asyncio.TaskGroup() as tg:
        tg.create_task(produce())
        tg.create_task(consume())
        await asyncio.sleep(2.5)
        stop.set()

    inserts = [(mid, m.timetick) for mid, m in seen if m.type == MessageType.INSERT]
    assert inserts == [(a.message_id, a.timetick) for a in appended]
    timeticks = [m.timetick for _, m in seen]
    assert all(a < b for a, b in zip(timeticks, timeticks[1:], strict=False))
    ticks = [m for _, m in seen if m.type == MessageType.TIME_TICK]
    assert len(ticks) > len(appended) // 3
    stats = scanner.stats
    assert stats.to_tailing > 5 and stats.to_catch_up > 5, stats
    assert stats.from_buffer > 0 and stats.from_backend > 0


async def test_an_idle_wal_delivers_volatile_ticks_to_a_reader_resuming_at_its_end(small_wal: WAL) -> None:
    wal = small_wal
    done = await wal.append([insert("v0", 1)])
    last = wal.impl.last_message_id()
    assert last is not None
    for policy in (DeliverPolicy.start_after(last), DeliverPolicy.latest()):
        scanner = wal.scanner(policy, "v0")
        got = []
        async with asyncio.timeout(2):
            async for mid, m in scanner:
                got.append((mid, m))
                if len(got) == 3:
                    break
        assert all(m.type == MessageType.TIME_TICK and mid == last for mid, m in got)
        assert scanner.mode is ScanMode.TAILING and scanner.stats.from_backend == 0
    # And a reader from the start catches up, then tails.
    scanner = wal.scanner(DeliverPolicy.all())
    got = []
    async with asyncio.timeout(2):
        async for mid, m in scanner:
            got.append((mid, m))
            if len(got) == 5:
                break
    assert [m.type for _, m in got[:3]] == [MessageType.TIME_TICK, MessageType.INSERT, MessageType.TIME_TICK]
    assert got[1][0] == done[0].message_id
    assert scanner.mode is ScanMode.TAILING


async def test_close_ends_readers_in_both_modes(tmp_path: Path) -> None:
    wal, opener = await open_wal(tmp_path, tick_interval=0.02, buffer=BufferOptions(max_bytes=1024))
    try:
        for i in range(20):
            await wal.append([insert("v0", i, size=300)])
        tailing = wal.scanner(DeliverPolicy.latest())
        catching_up = wal.scanner(DeliverPolicy.all())
        t_it, c_it = aiter(tailing), aiter(catching_up)
        await anext(t_it)
        await anext(c_it)
        assert tailing.mode is ScanMode.TAILING and catching_up.mode is ScanMode.CATCH_UP
        tail_rest = asyncio.create_task(_drain(t_it))
        await wal.close()
        async with asyncio.timeout(2):
            await tail_rest
            await _drain(c_it)
    finally:
        await wal.close()
        await opener.close()


async def _drain(it: AsyncIterator[tuple[MessageID, Message]]) -> int:
    return len([x async for x in it])


class FailAfterWrite:
    """A backend whose next append is written and then reported as failed (e.g. a lost ack)."""

    def __init__(self, inner: WALImpl) -> None:
        self._inner = inner
        self.channel = inner.channel
        self.term = inner.term
        self.fail_next = False

    async def append(self, payloads: Sequence[bytes]) -> list[MessageID]:
        ids = await self._inner.append(payloads)
        if self.fail_next:
            self.fail_next = False
            raise StrataError("ack lost")
        return ids

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)


async def test_a_batch_whose_append_failed_but_was_written_still_reaches_tailing_readers(tmp_path: Path) -> None:
    opener = build_opener("local", root_dir=tmp_path, sync=False)
    backend = FailAfterWrite(await opener.open("p0", 1))
    wal = WAL(backend, CountingAllocator(1000), tick_interval=0.02)  # type: ignore[arg-type]
    await wal.start()
    try:
        scanner = wal.scanner(DeliverPolicy.all(), "v0")
        it = aiter(scanner)
        await anext(it)
        assert scanner.mode is ScanMode.TAILING
        backend.fail_next = True
        with pytest.raises(StrataError):
            await wal.append([insert("v0", 1)])
        await wal.append([insert("v0", 2)])
        got: list[Message] = []
        async with asyncio.timeout(2):
            while len([m for m in got if m.type == MessageType.INSERT]) < 2:
                got.append((await anext(it))[1])
        assert [int.from_bytes(m.body[:8], "big") for m in got if m.type == MessageType.INSERT] == [1, 2]
        assert scanner.stats.to_catch_up >= 1
    finally:
        await wal.close()
        await opener.close()


async def test_last_confirmed_is_a_valid_resume_point_for_every_message(small_wal: WAL) -> None:
    """Reading the backend from a message's last_confirmed returns it and everything not older."""
    wal = small_wal
    await asyncio.gather(*(wal.append([insert("v0", i), insert("v1", i)]) for i in range(30)))
    await asyncio.sleep(0.1)  # some volatile ticks
    await wal.append([insert("v0", 99)])
    last = wal.impl.last_message_id()
    assert last is not None
    log: list[tuple[MessageID, Message]] = []
    scanner = wal.impl.read(DeliverPolicy.all())
    async for entry in scanner:
        log.append((entry.message_id, Message.FromString(entry.payload)))
        if entry.message_id == last:
            break
    await scanner.close()
    delivered = []
    async with asyncio.timeout(2):
        async for mid, m in wal.read(DeliverPolicy.all()):
            delivered.append((mid, m))
            if mid == last and m.type == MessageType.TIME_TICK and m.timetick > log[-1][1].timetick:
                break  # a volatile tick after the last batch
    for mid, m in delivered:
        if not m.last_confirmed:
            assert (mid, m) == delivered[0]  # the first TimeTick of the first term
            continue
        start = MessageID.from_bytes(m.last_confirmed)
        assert start <= mid
        from_start = [(i, x) for i, x in log if i >= start]
        assert [x.timetick for _, x in from_start if x.timetick >= m.timetick] == [
            x.timetick for _, x in log if x.timetick >= m.timetick
        ]
