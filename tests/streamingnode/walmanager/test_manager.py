"""``WALManager``: routing to lifetimes, status, close, and the default factory on the real ``local`` backend."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from common.errors import (
    ChannelFenced,
    ChannelNotExist,
    IgnoredOperation,
    StrataError,
    UnmatchedChannelTerm,
    WALClosed,
)
from streamingnode.wal.wal import WAL
from streamingnode.walimpls.registry import build_opener
from streamingnode.walimpls.wal import WALOpener
from streamingnode.walmanager.manager import WALManager, WALStatus
from tests.streamingnode.fakes import CountingAllocator
from tests.streamingnode.walmanager.fakes import FakeFactory


@pytest.fixture
async def fake_manager(factory: FakeFactory) -> AsyncIterator[WALManager]:
    manager = WALManager(None, None, wal_factory=factory)  # type: ignore[arg-type]  # the factory replaces both
    try:
        yield manager
    finally:
        await asyncio.wait_for(manager.close(), 5)


async def test_each_pchannel_has_its_own_lifetime(fake_manager: WALManager, factory: FakeFactory) -> None:
    with pytest.raises(ChannelNotExist):
        fake_manager.get("p0", 1)
    await fake_manager.open("p0", 1)
    await fake_manager.open("p1", 5)
    await fake_manager.remove("p2", 3)
    assert fake_manager.get("p0", 1).term == 1
    assert fake_manager.get("p1", 5).term == 5
    with pytest.raises(UnmatchedChannelTerm):
        fake_manager.get("p1", 4)
    with pytest.raises(ChannelNotExist):
        fake_manager.get("p2", 3)
    with pytest.raises(IgnoredOperation):
        await fake_manager.open("p1", 4)
    await fake_manager.open("p0", 2)  # a newer term on p0 does not touch p1
    assert sorted(fake_manager.states(), key=lambda s: s.pchannel) == [
        WALStatus(pchannel="p0", term=2, available=True),
        WALStatus(pchannel="p1", term=5, available=True),
        WALStatus(pchannel="p2", term=3, available=False),
    ]


async def test_release_all_closes_every_wal_and_stays_usable(fake_manager: WALManager) -> None:
    await fake_manager.open("p0", 1)
    await fake_manager.open("p1", 4)
    await fake_manager.release_all()  # what a lost session does
    assert sorted(fake_manager.states(), key=lambda s: s.pchannel) == [
        WALStatus(pchannel="p0", term=1, available=False),
        WALStatus(pchannel="p1", term=4, available=False),
    ]
    for name, term in (("p0", 1), ("p1", 4)):
        with pytest.raises((ChannelNotExist, UnmatchedChannelTerm)):
            fake_manager.get(name, term)
    await fake_manager.open("p0", 2)  # given back later with a newer term
    assert fake_manager.get("p0", 2).term == 2


async def test_states_report_a_failed_open(fake_manager: WALManager, factory: FakeFactory) -> None:
    factory.fail[2] = ChannelFenced("owned elsewhere")
    with pytest.raises(ChannelFenced):
        await fake_manager.open("p0", 2)
    assert fake_manager.states() == [WALStatus(pchannel="p0", term=2, available=False, error="owned elsewhere")]


async def test_close_closes_every_wal_and_fails_new_requests(factory: FakeFactory) -> None:
    closed: list[tuple[str, int]] = []

    async def on_close(wal: WAL) -> None:
        closed.append((wal.channel, wal.term))

    manager = WALManager(None, None, wal_factory=factory, on_close=on_close)  # type: ignore[arg-type]
    await manager.open("p0", 1)
    await manager.open("p1", 1)
    await asyncio.wait_for(manager.close(), 5)
    assert sorted(closed) == [("p0", 1), ("p1", 1)]
    assert all(wals == [] for wals in factory.open_wals.values())
    with pytest.raises(WALClosed):
        await manager.open("p0", 2)
    with pytest.raises(WALClosed):
        await manager.remove("p3", 2)
    with pytest.raises(ChannelNotExist):
        manager.get("p0", 1)
    await manager.close()  # idempotent


async def test_close_answers_a_waiting_open_with_wal_closed(factory: FakeFactory) -> None:
    factory.gate = asyncio.Event()
    manager = WALManager(None, None, wal_factory=factory)  # type: ignore[arg-type]
    opening = asyncio.create_task(manager.open("p0", 1))
    await asyncio.wait_for(factory.entered.wait(), 2)
    closing = asyncio.create_task(manager.close())
    await asyncio.sleep(0)
    factory.gate.set()
    await asyncio.wait_for(closing, 5)
    with pytest.raises(WALClosed):
        await opening
    assert factory.open_wals["p0"] == []


@pytest.fixture
async def local_opener(tmp_path: Path) -> AsyncIterator[WALOpener]:
    opener = build_opener("local", root_dir=tmp_path / "wal")
    try:
        yield opener
    finally:
        await opener.close()


async def test_default_factory_opens_and_starts_a_real_wal(local_opener: WALOpener) -> None:
    manager = WALManager(local_opener, CountingAllocator(1000), tick_interval=0.05)
    try:
        await manager.open("p0", 1)
        wal = manager.get("p0", 1)
        assert isinstance(wal, WAL) and wal.term == 1
        assert wal.impl.last_message_id() is not None  # start() wrote the term's first TimeTick
        await manager.open("p0", 2)  # closes term 1 (giving up the channel lock), opens term 2
        assert manager.get("p0", 2).term == 2
        await manager.remove("p0", 2)
        with pytest.raises(ChannelNotExist):
            manager.get("p0", 2)
    finally:
        await asyncio.wait_for(manager.close(), 5)


async def test_default_factory_gives_the_channel_back_when_start_fails(
    local_opener: WALOpener, tmp_path: Path
) -> None:
    tso = CountingAllocator(1000, name="tso")
    tso.fail = True
    manager = WALManager(local_opener, tso, tick_interval=0.05)
    try:
        with pytest.raises(StrataError, match="tso unavailable"):
            await manager.open("p0", 1)
        assert manager.states() == [WALStatus(pchannel="p0", term=1, available=False, error="tso unavailable")]
        # Another owner can open it with the same term: it would be fenced if term 1 still held it.
        other = build_opener("local", root_dir=tmp_path / "wal")
        await (await other.open("p0", 1)).close()
        await other.close()
        tso.fail = False
        await manager.open("p0", 2)
        assert manager.get("p0", 2).term == 2
    finally:
        await asyncio.wait_for(manager.close(), 5)


async def test_backend_fencing_is_an_open_error(local_opener: WALOpener, tmp_path: Path) -> None:
    other = build_opener("local", root_dir=tmp_path / "wal")
    held = await other.open("p0", 5)  # another owner holds the channel with a newer term
    manager = WALManager(local_opener, CountingAllocator(1000), tick_interval=0.05)
    try:
        with pytest.raises(ChannelFenced):
            await manager.open("p0", 2)
        [status] = manager.states()
        assert (status.term, status.available) == (2, False) and status.error
        await manager.remove("p0", 2)  # the failed open counts as removed
        await held.close()
        await manager.open("p0", 6)
        assert manager.get("p0", 6).term == 6
    finally:
        await asyncio.wait_for(manager.close(), 5)
        await other.close()
