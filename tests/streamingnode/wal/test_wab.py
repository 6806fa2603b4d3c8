"""The write-ahead buffer: order, tailing, eviction by bytes and age, Evicted, close."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from common.errors import InvalidArgument, StrataError
from common.message import TimeTick
from protos.common_pb2 import Message, MessageType
from streamingnode.wal.wab import BufferOptions, Entry, Evicted, WriteAheadBuffer, WriteAheadBufferReader
from streamingnode.walimpls.wal import MessageID

START_TS = 100


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Log:
    """Builds batches the way the WAL writer does: ids and timeticks grow, a tick closes each batch."""

    def __init__(self, buffer: WriteAheadBuffer) -> None:
        self.buffer = buffer
        self.next_id = 2  # 1 is the start tick
        self.next_ts = START_TS + 1
        self.last_persisted = MessageID(1)

    def batch(self, n: int, *, body: int = 0) -> list[Entry]:
        entries = []
        for _ in range(n):
            msg = Message(type=MessageType.INSERT, vchannel="v0", timetick=self.next_ts, body=b"x" * body)
            entries.append((MessageID(self.next_id), msg))
            self.next_id += 1
            self.next_ts += 1
        tick = (MessageID(self.next_id), TimeTick(timetick=self.next_ts).encode())
        self.last_persisted = tick[0]
        self.next_id += 1
        self.next_ts += 1
        self.buffer.append_batch(entries, tick)
        return [*entries, tick]

    def volatile(self) -> Entry:
        tick = TimeTick(timetick=self.next_ts).encode()
        self.next_ts += 1
        self.buffer.append_volatile_tick(tick, self.last_persisted)
        return (self.last_persisted, tick)


def make(max_bytes: int = 1 << 20, max_age: float = 30.0, clock: FakeClock | None = None) -> tuple[WriteAheadBuffer, Log]:
    buf = WriteAheadBuffer(
        start_timetick=START_TS,
        start_id=MessageID(1),
        options=BufferOptions(max_bytes=max_bytes, max_age=max_age),
        clock=clock or FakeClock(),
    )
    return buf, Log(buf)


def ready(reader: WriteAheadBufferReader) -> list[Entry]:
    return reader.take_ready(1 << 30)


async def take(reader: WriteAheadBufferReader, n: int) -> list[Entry]:
    async with asyncio.timeout(2):
        return [await anext(reader) for _ in range(n)]


def ticks(entries: list[Entry]) -> list[int]:
    return [m.timetick for _, m in entries]


async def test_reader_returns_everything_after_the_timetick_in_order_then_tails() -> None:
    buf, log = make()
    b1 = log.batch(3)
    b2 = log.batch(2)
    assert await take(buf.read_from_exclusive_timetick(START_TS), 7) == b1 + b2
    # From a TimeTick: the next batch. From inside a batch: the rest of it.
    assert await take(buf.read_from_exclusive_timetick(b1[-1][1].timetick), 3) == b2
    assert await take(buf.read_from_exclusive_timetick(b1[1][1].timetick), 5) == b1[2:] + b2
    reader = buf.read_from_exclusive_timetick(b2[-1][1].timetick)
    waiting = asyncio.create_task(anext(reader))
    await asyncio.sleep(0.01)
    assert not waiting.done()
    b3 = log.batch(1)
    assert await waiting == b3[0]
    assert await take(reader, 1) == b3[1:]


async def test_a_timetick_beyond_the_newest_waits_and_skips_what_is_not_above_it() -> None:
    buf, log = make()
    log.batch(1)
    reader = buf.read_from_exclusive_timetick(buf.last_timetick + 2)
    assert ready(reader) == []
    b2 = log.batch(3)  # timeticks last+1 .. last+4
    assert ready(reader) == b2[2:]


async def test_volatile_ticks_carry_the_last_persisted_id() -> None:
    buf, log = make()
    b1 = log.batch(1)
    v = log.volatile()
    assert v[0] == b1[-1][0]
    got = ready(buf.read_from_exclusive_timetick(START_TS))
    assert got == [*b1, v]
    assert buf.last_persisted == (b1[-1][0], b1[-1][1].timetick)
    assert buf.last_timetick == v[1].timetick


def test_timeticks_must_grow() -> None:
    buf, log = make()
    log.batch(2)
    with pytest.raises(StrataError, match="backwards"):
        buf.append_volatile_tick(TimeTick(timetick=START_TS + 1).encode(), MessageID(3))
    late = Message(type=MessageType.INSERT, timetick=START_TS + 1)
    with pytest.raises(StrataError, match="out of order"):
        buf.append_batch([(MessageID(9), late)], (MessageID(10), TimeTick(timetick=START_TS + 50).encode()))
    with pytest.raises(StrataError, match="TimeTick"):
        buf.append_batch([], (MessageID(10), late))
    with pytest.raises(InvalidArgument):
        make(max_bytes=0)


def test_eviction_by_bytes_drops_whole_oldest_batches_and_keeps_the_newest() -> None:
    buf, log = make(max_bytes=3000)
    batches = [log.batch(2, body=500) for _ in range(6)]  # about 1 KiB each
    assert buf.size_bytes <= 3000
    assert buf.first_timetick is not None
    held = ready(buf.read_from_exclusive_timetick(buf.first_timetick - 1))
    # What is held is a suffix of whole batches.
    assert held == [e for b in batches[-len(held) // 3 :] for e in b]
    assert 1 <= len(held) // 3 < 6 and buf.evicted_batches == 6 - len(held) // 3
    with pytest.raises(Evicted):
        buf.read_from_exclusive_timetick(START_TS)
    with pytest.raises(Evicted):
        buf.read_from_exclusive_timetick(batches[0][-1][1].timetick - 1)
    # Right after the newest evicted TimeTick is still complete.
    first_held = held[0][1].timetick
    assert ready(buf.read_from_exclusive_timetick(first_held - 1)) == held
    # One batch larger than the bound still stays (it is the newest).
    newest_tick = buf.last_timetick
    big = log.batch(1, body=10_000)
    assert buf.batch_count == 1 and ready(buf.read_from_exclusive_timetick(newest_tick)) == big


def test_eviction_by_age_with_an_injected_clock() -> None:
    clock = FakeClock()
    buf, log = make(max_age=30.0, clock=clock)
    old = log.batch(2)
    clock.now += 20
    young = log.batch(2)
    clock.now += 11  # `old` is 31 s old, `young` 11 s
    buf.evict()
    assert buf.batch_count == 1
    with pytest.raises(Evicted):
        buf.read_from_exclusive_timetick(old[0][1].timetick)
    assert ready(buf.read_from_exclusive_timetick(old[-1][1].timetick)) == young
    clock.now += 60  # the newest batch always stays
    buf.evict()
    assert buf.batch_count == 1


def test_evicted_volatile_ticks_do_not_make_the_last_persisted_tick_unreadable() -> None:
    # An idle WAL: after the last batch only volatile ticks follow, and old ones are evicted.
    clock = FakeClock()
    buf, log = make(max_age=1.0, clock=clock)
    last = log.batch(1)
    vols = []
    for _ in range(10):
        clock.now += 0.5
        vols.append(log.volatile())
    assert buf.batch_count < 10
    got = ready(buf.read_from_exclusive_timetick(last[-1][1].timetick))
    assert got == vols[-len(got) :] and all(mid == last[-1][0] for mid, _ in got)
    # The persisted batch itself is gone.
    with pytest.raises(Evicted):
        buf.read_from_exclusive_timetick(START_TS)


async def test_a_reader_behind_eviction_gets_evicted_even_mid_batch() -> None:
    buf, log = make(max_bytes=2500)
    b1 = log.batch(3, body=300)
    reader = buf.read_from_exclusive_timetick(START_TS)
    assert await take(reader, 1) == b1[:1]
    for _ in range(5):
        log.batch(3, body=300)
    with pytest.raises(Evicted):
        await anext(reader)
    # A reader waiting at the tail is never evicted by later appends.
    tail = buf.read_from_exclusive_timetick(buf.last_timetick)
    for _ in range(5):
        b = log.batch(3, body=300)
        assert ready(tail) == b


async def test_close_ends_readers_after_what_is_held() -> None:
    buf, log = make()
    b1 = log.batch(1)
    reader = buf.read_from_exclusive_timetick(START_TS)
    waiting_reader = buf.read_from_exclusive_timetick(b1[-1][1].timetick)
    waiting = asyncio.create_task(anext(waiting_reader))
    await asyncio.sleep(0.01)
    buf.close()
    with pytest.raises(StopAsyncIteration):
        await waiting
    assert [e async for e in reader] == b1
    with pytest.raises(StrataError):
        log.batch(1)


async def test_invalidate_evicts_every_reader_including_waiting_ones() -> None:
    buf, log = make()
    b1 = log.batch(1)
    behind = buf.read_from_exclusive_timetick(START_TS)
    waiting_reader = buf.read_from_exclusive_timetick(b1[-1][1].timetick)
    waiting = asyncio.create_task(anext(waiting_reader))
    await asyncio.sleep(0.01)
    # An append whose timeticks went up to next_ts + 5 failed: it may be in the log.
    failed_through = log.next_ts + 5
    buf.invalidate(failed_through)
    with pytest.raises(Evicted):
        await waiting
    with pytest.raises(Evicted):
        await anext(behind)
    with pytest.raises(Evicted):
        buf.read_from_exclusive_timetick(b1[-1][1].timetick)
    log.next_ts = failed_through + 1
    b2 = log.batch(1)
    assert ready(buf.read_from_exclusive_timetick(failed_through)) == b2


@settings(max_examples=200, deadline=None)
@given(
    ops=st.lists(st.integers(-1, 4), min_size=1, max_size=40),
    max_bytes=st.integers(200, 4000),
    start_at=st.integers(-5, 200),
)
def test_a_reader_misses_no_persisted_message_and_is_refused_only_when_one_is_gone(
    ops: list[int], max_bytes: int, start_at: int
) -> None:
    """Model: the full history; -1 appends a volatile tick, n >= 0 a batch of n messages."""
    buf, log = make(max_bytes=max_bytes)
    history: list[tuple[Entry, bool]] = []  # (entry, volatile)
    for op in ops:
        if op < 0:
            history.append((log.volatile(), True))
        else:
            history += [(e, False) for e in log.batch(op, body=50)]
    t = START_TS + start_at
    above = [(e, volatile) for e, volatile in history if e[1].timetick > t]
    oldest = buf.first_timetick
    assert oldest is not None
    try:
        got = ready(buf.read_from_exclusive_timetick(t))
    except Evicted:
        gone = [e for e, volatile in above if not volatile and e[1].timetick < oldest]
        assert t < START_TS or gone
        return
    # In order, nothing invented; every persisted message above t; volatile ticks only if held.
    assert got == [e for e, volatile in above if not volatile or e[1].timetick >= oldest]
