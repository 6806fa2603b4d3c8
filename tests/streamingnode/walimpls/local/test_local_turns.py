"""``Turns``: who commits next, when callers wait, answer each other and get cancelled."""

from __future__ import annotations

import asyncio

import pytest

from streamingnode.walimpls import MessageID
from streamingnode.walimpls.impls.local.turns import Request, Turns


async def _settle() -> None:
    for _ in range(5):  # a hand-off takes a loop step or two
        await asyncio.sleep(0)


async def _behind_a_commit(
    turns: Turns, *payloads: bytes
) -> tuple[Request, list[Request], list[Request], list[asyncio.Task[bool]]]:
    """A first caller leading a commit (its batch taken), and a caller per payload queued behind it."""
    first = Request([b"1"])
    assert await turns.enter(first)
    batch = turns.take()
    waiting = [Request([p]) for p in payloads]
    entered = [asyncio.create_task(turns.enter(r)) for r in waiting]
    await _settle()
    return first, batch, waiting, entered


async def test_a_caller_alone_leads_at_once_and_waiters_get_the_leaders_answer() -> None:
    turns = Turns()
    first = Request([b"1"])
    assert await turns.enter(first)  # no await needed: nothing runs
    a, b = Request([b"a"]), Request([b"b"])
    wait_a = asyncio.create_task(turns.enter(a))
    wait_b = asyncio.create_task(turns.enter(b))
    await _settle()
    assert not wait_a.done() and not wait_b.done()
    batch = turns.take()
    assert batch == [first, a, b]
    for seq, request in enumerate(batch, 1):
        request.ids = [MessageID(seq)]
    turns.leave(batch)
    assert await wait_a is False and await wait_b is False  # answered: they do not lead
    assert await asyncio.wait_for(turns.hold(), 1) == []  # nobody leads any more


async def test_the_first_caller_that_queued_during_a_commit_leads_the_next() -> None:
    turns = Turns()
    first, batch, [a, b], [wait_a, wait_b] = await _behind_a_commit(turns, b"a", b"b")
    first.ids = [MessageID(1)]
    turns.leave(batch)
    assert await asyncio.wait_for(wait_a, 1) is True
    await _settle()
    assert not wait_b.done()  # one leader at a time
    assert turns.take() == [a, b]


async def test_a_caller_cancelled_after_it_was_handed_the_lead_hands_it_on() -> None:
    turns = Turns()
    first, batch, [a, b], [wait_a, wait_b] = await _behind_a_commit(turns, b"a", b"b")
    first.ids = [MessageID(1)]
    turns.leave(batch)  # no caller to wake: the lead goes to a at once
    assert a.wake is not None and a.wake.done()
    wait_a.cancel()  # before a's caller could run
    with pytest.raises(asyncio.CancelledError):
        await wait_a
    assert await asyncio.wait_for(wait_b, 1) is True
    assert turns.take() == [b]  # a's request left the queue: nothing of it is written


async def test_a_caller_cancelled_while_it_waits_leaves_the_queue() -> None:
    turns = Turns()
    first, batch, [a], [wait_a] = await _behind_a_commit(turns, b"a")
    wait_a.cancel()
    with pytest.raises(asyncio.CancelledError):
        await wait_a
    first.ids = [MessageID(1)]
    turns.leave(batch)
    assert await asyncio.wait_for(turns.hold(), 1) == []


async def test_hold_waits_for_the_commit_running_and_the_callers_waiting() -> None:
    turns = Turns()
    first, batch, [a], [wait_a] = await _behind_a_commit(turns, b"a")
    holding = asyncio.create_task(turns.hold())
    await _settle()
    assert not holding.done()
    first.ids = [MessageID(1)]
    turns.leave(batch)
    assert await asyncio.wait_for(wait_a, 1) is True  # a waited before the hold: it commits first
    await _settle()
    assert not holding.done()
    a_batch = turns.take()
    a.ids = [MessageID(2)]
    turns.leave(a_batch)
    assert await asyncio.wait_for(holding, 1) == []
    late = asyncio.create_task(turns.enter(Request([b"late"])))  # LocalWAL refuses these before enter
    await _settle()
    assert not late.done()  # the hold leads for good
    late.cancel()
    with pytest.raises(asyncio.CancelledError):
        await late
