"""``TimeTickRequester``: one request in flight per pchannel, callers coalesced; and the real RPC."""

from __future__ import annotations

import asyncio

import pytest

from common.errors import NotReady, StrataError, UnmatchedChannelTerm
from streamingnode.client.timetick import TimeTickRequester
from streamingnode.walmanager.manager import WALManager
from tests.streamingnode.client.test_producer_coalescing import StaticSource

pytestmark = pytest.mark.timeout(30)


class GatedOwner:
    """A fake owner: each request waits for ``release`` and answers a tick above what it asked for."""

    def __init__(self) -> None:
        self.asked: list[int] = []
        self.release = asyncio.Event()
        self.fail: Exception | None = None

    async def send(self, pchannel: str, timestamp: int, timeout: float) -> int:
        self.asked.append(timestamp)
        await self.release.wait()
        if self.fail is not None:
            raise self.fail
        return timestamp + 1


def _requester(owner: GatedOwner) -> TimeTickRequester:
    return TimeTickRequester(StaticSource("unused", 1), send=owner.send)


async def _until(cond: object) -> None:
    while not cond():  # type: ignore[operator]
        await asyncio.sleep(0)


async def test_many_callers_one_request() -> None:
    owner = GatedOwner()
    ticks = _requester(owner)
    callers = [asyncio.create_task(ticks.request("p0", 100, timeout=5)) for _ in range(50)]
    await _until(lambda: owner.asked)
    owner.release.set()
    assert await asyncio.gather(*callers) == [101] * 50
    assert owner.asked == [100] and ticks.rounds("p0") == 1
    assert await ticks.request("p0", 101, timeout=5) == 101  # covered already: nothing sent
    assert ticks.rounds("p0") == 1


async def test_callers_arriving_meanwhile_share_the_next_request_at_their_highest_timestamp() -> None:
    owner = GatedOwner()
    ticks = _requester(owner)
    first = asyncio.create_task(ticks.request("p0", 100, timeout=5))
    await _until(lambda: owner.asked)
    later = [asyncio.create_task(ticks.request("p0", ts, timeout=5)) for ts in (150, 120, 180, 130)]
    await asyncio.sleep(0.01)
    assert owner.asked == [100]  # still one in flight
    owner.release.set()
    assert await first == 101
    assert await asyncio.gather(*later) == [181] * 4
    assert owner.asked == [100, 180]


async def test_pchannels_are_requested_apart() -> None:
    owner = GatedOwner()
    ticks = _requester(owner)
    both = [asyncio.create_task(ticks.request(p, 100, timeout=5)) for p in ("p0", "p1")]
    await _until(lambda: len(owner.asked) == 2)
    owner.release.set()
    assert await asyncio.gather(*both) == [101, 101]


async def test_a_failed_request_fails_its_waiting_callers_and_the_next_caller_asks_again() -> None:
    owner = GatedOwner()
    owner.fail = StrataError("owner down")
    ticks = _requester(owner)
    callers = [asyncio.create_task(ticks.request("p0", 100, timeout=5)) for _ in range(3)]
    await _until(lambda: owner.asked)
    owner.release.set()
    results = await asyncio.gather(*callers, return_exceptions=True)
    assert all(isinstance(r, StrataError) for r in results)
    owner.fail = None
    assert await ticks.request("p0", 100, timeout=5) == 101
    assert owner.asked == [100, 100]


async def test_a_leader_that_leaves_hands_over_to_a_waiting_caller() -> None:
    owner = GatedOwner()
    ticks = _requester(owner)
    leader = asyncio.create_task(ticks.request("p0", 100, timeout=5))
    await _until(lambda: owner.asked)
    follower = asyncio.create_task(ticks.request("p0", 100, timeout=5))
    await asyncio.sleep(0.01)
    leader.cancel()
    await _until(lambda: len(owner.asked) == 2)  # the follower asked itself
    owner.release.set()
    assert await follower == 101
    with pytest.raises(asyncio.CancelledError):
        await leader


async def test_the_rpc_returns_a_tick_above_the_timestamp(served: tuple[WALManager, str]) -> None:
    manager, address = served
    wal = manager.get("p0", 1)
    ticks, stale = TimeTickRequester(StaticSource(address, 1)), TimeTickRequester(StaticSource(address, 2))
    try:
        assert await ticks.request("p0", 1, timeout=5) >= 1  # covered: answered by the last tick
        above = (wal.last_timetick or 0) + 1  # the served WAL's counting TSO issues it next at the latest
        assert await ticks.request("p0", above, timeout=5) >= above
        with pytest.raises(UnmatchedChannelTerm):
            await stale.request("p0", above + 1, timeout=5)
    finally:
        await ticks.close()
        await stale.close()


async def test_no_owner_is_an_error_not_a_hang() -> None:
    class Nobody(StaticSource):
        async def resolve(self, pchannel: str, *, newer_than_term: int = 0, timeout: float = 30.0) -> tuple[str, int]:
            raise NotReady("no owner")

    with pytest.raises(NotReady):
        await TimeTickRequester(Nobody("", 0)).request("p0", 5, timeout=1)
