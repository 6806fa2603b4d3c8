"""``TickRequests``: many requests, one tick; ticks published anyway answer what they cover; spacing."""

from __future__ import annotations

import asyncio

import pytest

from streamingnode.wal.tick_requests import TickRequests


async def test_one_tick_answers_every_request_below_it() -> None:
    reqs = TickRequests(min_interval=0.0)
    futures = [reqs.want(ts) for ts in (105, 101, 110, 103)]
    assert all(f is not None for f in futures)
    assert reqs.pending and reqs.delay(0.0) == 0.0
    reqs.ticked(120, now=1.0)
    assert [f.result() for f in futures if f is not None] == [120, 120, 120, 120]
    assert not reqs.pending and reqs.delay(1.0) is None
    assert reqs.on_demand_ticks == 1


async def test_a_published_tick_answers_only_what_it_covers() -> None:
    reqs = TickRequests()
    low, high = reqs.want(100), reqs.want(200)
    assert low is not None and high is not None
    reqs.published(150)  # e.g. the TimeTick after a batch, stamped from an older range
    assert low.result() == 150 and not high.done()
    assert reqs.pending and reqs.on_demand_ticks == 0


async def test_a_request_below_the_last_tick_needs_no_tick() -> None:
    reqs = TickRequests()
    reqs.published(500)
    assert reqs.want(500) is None and reqs.want(10) is None
    assert not reqs.pending and reqs.last == 500


async def test_on_demand_ticks_are_spaced() -> None:
    reqs = TickRequests(min_interval=0.01)
    first = reqs.want(10)
    assert first is not None and reqs.delay(5.0) == 0.0  # the first one goes at once
    reqs.ticked(20, now=5.0)
    second = reqs.want(30)
    assert second is not None
    assert reqs.delay(5.004) == pytest.approx(0.006)
    assert reqs.delay(5.02) == 0.0


async def test_a_withdrawn_request_is_not_pending() -> None:
    reqs = TickRequests()
    fut = reqs.want(10)
    assert fut is not None
    fut.cancel()  # the read was cancelled
    assert not reqs.pending and reqs.delay(0.0) is None


async def test_closing_fails_the_waiting_requests() -> None:
    reqs = TickRequests()
    fut = reqs.want(10)
    assert fut is not None
    reqs.fail_all(RuntimeError("closed"))
    with pytest.raises(RuntimeError):
        await asyncio.wait_for(fut, 1)
    assert not reqs.pending
