"""BatchedTimestamps: ranges of TSO timestamps, bounded in age, fresh on demand."""

from __future__ import annotations

import asyncio

import pytest

from common.errors import StrataError
from common.tsoutil import TIMESTAMP_RANGE_MAX_AGE_S
from streamingnode.wal.timestamps import BatchedTimestamps
from tests.streamingnode.fakes import CountingAllocator


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _batched(remote: CountingAllocator, clock: Clock, batch: int = 10) -> BatchedTimestamps:
    return BatchedTimestamps(remote, batch=batch, max_age=TIMESTAMP_RANGE_MAX_AGE_S, clock=clock)


async def test_one_remote_call_serves_a_whole_range() -> None:
    remote, clock = CountingAllocator(1000), Clock()
    ts = _batched(remote, clock)
    got = [await ts.allocate(1) for _ in range(10)]
    assert got == list(range(1000, 1010)) and ts.remote_calls == 1
    assert await ts.allocate(1) == 1010 and ts.remote_calls == 2  # the range ran out


async def test_a_request_larger_than_a_range_gets_its_own() -> None:
    remote, clock = CountingAllocator(1), Clock()
    ts = _batched(remote, clock)
    first = await ts.allocate(3)
    big = await ts.allocate(25)  # 7 left in the range: not enough
    assert big >= first + 10 and remote.next == big + 25 and ts.remote_calls == 2
    expected = remote.next
    assert await ts.allocate(1) == expected and ts.remote_calls == 3  # nothing left of the big one


async def test_a_range_older_than_the_bound_is_not_used() -> None:
    remote, clock = CountingAllocator(1), Clock()
    ts = _batched(remote, clock)
    await ts.allocate(1)
    clock.now += TIMESTAMP_RANGE_MAX_AGE_S * 0.5
    await ts.allocate(1)
    assert ts.remote_calls == 1
    issued_meanwhile = await remote.allocate(1)  # e.g. a coordinator's own timestamp
    clock.now += TIMESTAMP_RANGE_MAX_AGE_S * 0.6
    assert await ts.allocate(1) > issued_meanwhile and ts.remote_calls == 2


async def test_the_age_counts_from_the_request_not_the_answer() -> None:
    clock = Clock()

    class Slow(CountingAllocator):
        async def allocate(self, count: int) -> int:
            clock.now += TIMESTAMP_RANGE_MAX_AGE_S * 1.1  # the answer arrives after the range's age ran out
            return await super().allocate(count)

    remote = Slow(1)
    ts = _batched(remote, clock)
    assert await ts.allocate(1) == 1  # the caller that asked gets its timestamp
    assert await ts.allocate(1) == 11 and ts.remote_calls == 2  # nobody else uses that range


async def test_fresh_asks_the_tso_and_later_values_follow_it() -> None:
    remote, clock = CountingAllocator(1), Clock()
    ts = _batched(remote, clock)
    assert await ts.allocate(1) == 1
    issued_meanwhile = await remote.allocate(1)
    fresh = await ts.allocate_fresh(1)
    assert fresh > issued_meanwhile and ts.remote_calls == 2
    assert await ts.allocate(1) == fresh + 1 and ts.remote_calls == 2  # the rest of the fresh range


async def test_concurrent_callers_share_one_refill_and_get_distinct_values() -> None:
    remote, clock = CountingAllocator(1), Clock()
    ts = _batched(remote, clock, batch=100)
    got = await asyncio.gather(*(ts.allocate(2) for _ in range(30)))
    values = [v + i for v in got for i in range(2)]
    assert len(set(values)) == 60 and ts.remote_calls == 1


async def test_a_failed_refill_raises_and_the_next_call_asks_again() -> None:
    remote, clock = CountingAllocator(1), Clock()
    ts = _batched(remote, clock, batch=2)
    await ts.allocate(2)
    remote.fail = True
    with pytest.raises(StrataError, match="unavailable"):
        await ts.allocate(1)
    remote.fail = False
    assert await ts.allocate(1) == 3


async def test_a_tso_going_backwards_is_refused() -> None:
    remote, clock = CountingAllocator(1000), Clock()
    ts = _batched(remote, clock)
    await ts.allocate(1)
    remote.next = 5
    with pytest.raises(RuntimeError, match="went backwards"):
        await ts.allocate_fresh(1)


def test_bad_options_are_refused() -> None:
    with pytest.raises(ValueError, match="batch"):
        BatchedTimestamps(CountingAllocator(), batch=0)
    with pytest.raises(ValueError, match="max_age"):
        BatchedTimestamps(CountingAllocator(), max_age=TIMESTAMP_RANGE_MAX_AGE_S * 2)


async def test_with_the_real_clock_a_range_expires_after_the_bound() -> None:
    remote = CountingAllocator(1)
    ts = BatchedTimestamps(remote)
    await ts.allocate(1)
    issued = await remote.allocate(1)
    await asyncio.sleep(TIMESTAMP_RANGE_MAX_AGE_S)
    assert await ts.allocate(1) > issued
