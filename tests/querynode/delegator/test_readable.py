"""``wait_readable``: a read below tsafe asks for a TimeTick while it waits; a failed ask only leaves it waiting."""

from __future__ import annotations

import asyncio

import pytest

from common.errors import ReadTimeout, StrataError
from querynode.delegator.readable import wait_readable
from querynode.delegator.tsafe import TSafe
from streamingnode.client.timetick import TimeTickRequester
from tests.streamingnode.client.test_producer_coalescing import StaticSource

pytestmark = pytest.mark.timeout(30)


class Owner:
    """Answers a request by delivering a TimeTick above it to ``tsafe`` (as the consume loop would)."""

    def __init__(self, tsafe: TSafe, *, fail: bool = False) -> None:
        self.tsafe, self.fail = tsafe, fail
        self.asked: list[int] = []

    async def send(self, pchannel: str, timestamp: int, timeout: float) -> int:
        self.asked.append(timestamp)
        if self.fail:
            raise StrataError("owner moved")
        await self.tsafe.advance(timestamp + 1)
        return timestamp + 1


async def test_a_read_above_tsafe_asks_once_for_many_readers() -> None:
    tsafe = TSafe()
    await tsafe.advance(10)
    owner = Owner(tsafe)
    ticks = TimeTickRequester(StaticSource("unused", 1), send=owner.send)
    reads = [wait_readable(tsafe, ticks, "p0", 100, timeout=5, what="read") for _ in range(20)]
    assert await asyncio.gather(*reads) == [101] * 20
    assert owner.asked == [100]
    assert await wait_readable(tsafe, ticks, "p0", 50, timeout=5, what="read") == 101  # reached: nothing asked
    assert owner.asked == [100]


async def test_a_failed_ask_leaves_the_read_waiting_for_the_regular_tick() -> None:
    tsafe = TSafe()
    owner = Owner(tsafe, fail=True)
    ticks = TimeTickRequester(StaticSource("unused", 1), send=owner.send)
    read = asyncio.create_task(wait_readable(tsafe, ticks, "p0", 100, timeout=5, what="read"))
    while not owner.asked:
        await asyncio.sleep(0)
    assert not read.done()
    await tsafe.advance(120)  # the next regular TimeTick
    assert await read == 120


async def test_without_a_tick_the_read_still_times_out_with_its_error() -> None:
    tsafe = TSafe()
    owner = Owner(tsafe, fail=True)
    ticks = TimeTickRequester(StaticSource("unused", 1), send=owner.send)
    with pytest.raises(ReadTimeout, match="not yet readable"):
        await wait_readable(tsafe, ticks, "p0", 100, timeout=0.2, what="read")
