"""``WALLifetime``: transitions, stale requests, failed opens, cancelled callers, hooks, close."""

from __future__ import annotations

import asyncio

import pytest

from common.errors import (
    ChannelFenced,
    ChannelNotExist,
    ErrorCode,
    IgnoredOperation,
    StrataError,
    UnmatchedChannelTerm,
    WALClosed,
)
from streamingnode.wal.wal import WAL
from streamingnode.walmanager.lifetime import WALLifetime
from streamingnode.walmanager.state import WALState
from tests.streamingnode.walmanager.fakes import FakeFactory, wait_state


async def test_open_remove_and_reopen_walk_the_legal_transitions(lifetime: WALLifetime, factory: FakeFactory) -> None:
    await lifetime.open(1)  # (-1,F) -> (1,T)
    assert lifetime.current == WALState(1, True)
    assert lifetime.available_wal(1).term == 1
    await lifetime.remove(1)  # (1,T) -> (1,F)
    assert lifetime.current == WALState(1, False)
    await lifetime.open(2)  # (1,F) -> (2,T)
    assert lifetime.current == WALState(2, True)
    await lifetime.open(3)  # (2,T) -> (2,F) -> (3,T)
    assert lifetime.current == WALState(3, True)
    await lifetime.remove(5)  # (3,T) -> (3,F) -> (5,F)
    assert lifetime.current == WALState(5, False)
    assert factory.events == [
        ("open", "p0", 1),
        ("close", "p0", 1),
        ("open", "p0", 2),
        ("close", "p0", 2),
        ("open", "p0", 3),
        ("close", "p0", 3),
    ]
    assert factory.max_open == 1 and factory.overlaps == 0


async def test_remove_of_an_unknown_channel_just_records_the_term(lifetime: WALLifetime, factory: FakeFactory) -> None:
    await lifetime.remove(4)
    assert lifetime.current == WALState(4, False)
    assert factory.events == []


@pytest.mark.parametrize(
    ("setup", "stale"),
    [
        ([("open", 1)], ("open", 1)),  # repeated open: (1,T) is not later than (1,T)
        ([("open", 2)], ("open", 1)),  # older term
        ([("open", 2)], ("remove", 1)),
        ([("open", 1), ("remove", 1)], ("open", 1)),  # (1,F) -> (1,T) is never allowed
        ([("open", 1), ("remove", 1)], ("remove", 1)),
        ([("remove", 3)], ("open", 2)),
    ],
)
async def test_a_request_not_later_than_expected_is_ignored(
    lifetime: WALLifetime, factory: FakeFactory, setup: list[tuple[str, int]], stale: tuple[str, int]
) -> None:
    for op, term in setup:
        await getattr(lifetime, op)(term)
    before, events = lifetime.current, list(factory.events)
    with pytest.raises(IgnoredOperation):
        await getattr(lifetime, stale[0])(stale[1])
    assert lifetime.current == before
    assert factory.events == events


async def test_failed_open_is_published_raised_and_counts_as_removed(
    lifetime: WALLifetime, factory: FakeFactory
) -> None:
    factory.fail[3] = ChannelFenced("owned by term 7")
    with pytest.raises(ChannelFenced, match="owned by term 7") as info:
        await lifetime.open(3)
    assert info.value.__cause__ is factory.fail[3]
    assert lifetime.current == WALState(3, False, "owned by term 7")
    with pytest.raises(ChannelNotExist):
        lifetime.available_wal(3)
    await lifetime.remove(3)  # the failed open counts as removed: no step, no error
    assert lifetime.current == WALState(3, False, "owned by term 7")
    await lifetime.open(4)
    assert lifetime.current == WALState(4, True)


async def test_an_untyped_open_error_becomes_unexpected(lifetime: WALLifetime, factory: FakeFactory) -> None:
    factory.fail[1] = OSError("no space left")
    with pytest.raises(StrataError, match="no space left") as info:
        await lifetime.open(1)
    assert info.value.code == ErrorCode.UNEXPECTED
    assert lifetime.current == WALState(1, False, "no space left")


async def test_an_open_overtaken_by_a_newer_term_gets_unmatched_term(
    lifetime: WALLifetime, factory: FakeFactory
) -> None:
    first = asyncio.create_task(lifetime.open(1))
    second = asyncio.create_task(lifetime.open(2))
    with pytest.raises(UnmatchedChannelTerm):
        await first
    await second
    assert lifetime.current == WALState(2, True)
    assert factory.opened_terms() == [2]  # term 1 was replaced before the worker started it


async def test_a_remove_overtaken_by_a_newer_term_gets_unmatched_term(lifetime: WALLifetime) -> None:
    await lifetime.open(1)
    removing = asyncio.create_task(lifetime.remove(1))
    opening = asyncio.create_task(lifetime.open(2))
    with pytest.raises(UnmatchedChannelTerm):
        await removing
    await opening
    assert lifetime.current == WALState(2, True)


async def test_an_open_overtaken_by_a_remove_of_its_term_is_ignored(
    lifetime: WALLifetime, factory: FakeFactory
) -> None:
    opening = asyncio.create_task(lifetime.open(1))
    removing = asyncio.create_task(lifetime.remove(1))
    with pytest.raises(IgnoredOperation, match="remove"):
        await opening
    await removing
    assert lifetime.current == WALState(1, False)
    assert factory.events == []


async def test_available_wal_checks_presence_and_term(lifetime: WALLifetime) -> None:
    with pytest.raises(ChannelNotExist):
        lifetime.available_wal(1)
    await lifetime.open(2)
    with pytest.raises(UnmatchedChannelTerm):
        lifetime.available_wal(1)
    with pytest.raises(UnmatchedChannelTerm):
        lifetime.available_wal(3)
    assert lifetime.available_wal(2).term == 2
    await lifetime.remove(2)
    with pytest.raises(ChannelNotExist):
        lifetime.available_wal(2)


async def test_a_cancelled_open_still_completes(lifetime: WALLifetime, factory: FakeFactory) -> None:
    factory.gate = asyncio.Event()
    caller = asyncio.create_task(lifetime.open(1))
    await asyncio.wait_for(factory.entered.wait(), 2)
    caller.cancel()  # e.g. the Assign RPC hit its deadline
    with pytest.raises(asyncio.CancelledError):
        await caller
    assert lifetime.current == WALState(-1, False)
    factory.gate.set()
    await wait_state(lifetime, 1, True)
    assert lifetime.available_wal(1).term == 1
    with pytest.raises(IgnoredOperation):  # the open of term 1 is still the expected one
        await lifetime.open(1)
    await lifetime.open(2)
    await lifetime.remove(2)
    assert lifetime.current == WALState(2, False)
    assert factory.overlaps == 0 and factory.max_open == 1


async def test_a_cancelled_remove_still_closes_the_wal(factory: FakeFactory) -> None:
    closing = asyncio.Event()
    release = asyncio.Event()

    async def slow_close(wal: WAL) -> None:
        closing.set()
        await release.wait()

    lt = WALLifetime("p0", factory, on_close=slow_close)
    try:
        await lt.open(1)
        caller = asyncio.create_task(lt.remove(1))
        await asyncio.wait_for(closing.wait(), 2)
        caller.cancel()
        with pytest.raises(asyncio.CancelledError):
            await caller
        release.set()
        await wait_state(lt, 1, False)
        assert factory.open_wals["p0"] == []
        await lt.open(2)
    finally:
        release.set()
        await asyncio.wait_for(lt.close(), 5)


async def test_on_close_runs_before_the_wal_closes_and_on_open_after_it_opened(factory: FakeFactory) -> None:
    seen: list[tuple[str, int, bool]] = []

    async def on_open(wal: WAL) -> None:
        seen.append(("on_open", wal.term, wal.closed))  # type: ignore[attr-defined]  # FakeWAL

    async def on_close(wal: WAL) -> None:
        seen.append(("on_close", wal.term, wal.closed))  # type: ignore[attr-defined]  # FakeWAL

    lt = WALLifetime("p0", factory, on_open=on_open, on_close=on_close)
    try:
        await lt.open(1)
        await lt.open(2)
    finally:
        await asyncio.wait_for(lt.close(), 5)
    assert seen == [("on_open", 1, False), ("on_close", 1, False), ("on_open", 2, False), ("on_close", 2, False)]
    assert factory.events == [("open", "p0", 1), ("close", "p0", 1), ("open", "p0", 2), ("close", "p0", 2)]


async def test_a_failing_on_open_hook_fails_the_open_and_closes_the_wal(factory: FakeFactory) -> None:
    async def on_open(wal: WAL) -> None:
        raise RuntimeError("flusher refused")

    lt = WALLifetime("p0", factory, on_open=on_open)
    try:
        with pytest.raises(StrataError, match="flusher refused"):
            await lt.open(1)
        assert lt.current == WALState(1, False, "flusher refused")
        assert factory.open_wals["p0"] == []
    finally:
        await asyncio.wait_for(lt.close(), 5)


async def test_a_failing_on_close_hook_does_not_keep_the_wal_open(factory: FakeFactory) -> None:
    async def on_close(wal: WAL) -> None:
        raise RuntimeError("flusher stuck")

    lt = WALLifetime("p0", factory, on_close=on_close)
    try:
        await lt.open(1)
        await lt.remove(1)
        assert lt.current == WALState(1, False)
        assert factory.open_wals["p0"] == []
    finally:
        await asyncio.wait_for(lt.close(), 5)


async def test_close_closes_the_wal_and_fails_later_requests(factory: FakeFactory) -> None:
    lt = WALLifetime("p0", factory)
    await lt.open(1)
    await asyncio.wait_for(lt.close(), 5)
    assert lt.current == WALState(1, False)
    assert factory.open_wals["p0"] == []
    with pytest.raises(WALClosed):
        await lt.open(2)
    with pytest.raises(WALClosed):
        await lt.remove(2)
    await lt.close()  # idempotent


async def test_close_finishes_the_step_in_flight_then_answers_its_waiter(factory: FakeFactory) -> None:
    factory.gate = asyncio.Event()
    lt = WALLifetime("p0", factory)
    opening = asyncio.create_task(lt.open(1))
    await asyncio.wait_for(factory.entered.wait(), 2)
    closing = asyncio.create_task(lt.close())
    await asyncio.sleep(0.01)
    assert not closing.done()  # it waits for the open in flight
    factory.gate.set()
    await asyncio.wait_for(closing, 5)
    with pytest.raises(WALClosed):
        await opening
    assert factory.events == [("open", "p0", 1), ("close", "p0", 1)]
    assert lt.current == WALState(1, False)
