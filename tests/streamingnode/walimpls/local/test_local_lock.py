"""The LOCK file: held while open, records the term, survives close."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

from common.errors import ChannelFenced, InvalidArgument, WALClosed
from streamingnode.walimpls.impls.local import LocalWALOpener

MakeOpener = Callable[..., LocalWALOpener]
CH = "locked"


async def test_lock_file_records_the_term(make_opener: MakeOpener, wal_root: Path) -> None:
    wal = await make_opener().open(CH, 3)
    lock = wal_root / CH / "LOCK"
    assert lock.read_text() == "3\n"
    await wal.close()
    assert lock.read_text() == "3\n"  # kept for the stale-term check
    wal = await make_opener().open(CH, 9)
    assert lock.read_text() == "9\n"


async def test_same_opener_cannot_open_a_channel_twice(make_opener: MakeOpener) -> None:
    opener = make_opener()
    await opener.open(CH, 1)
    with pytest.raises(ChannelFenced, match="owned by term 1"):
        await opener.open(CH, 2)


async def test_cancelled_open_gives_the_lock_back(make_opener: MakeOpener) -> None:
    opener = make_opener()
    for _ in range(20):
        task = asyncio.create_task(opener.open(CH, 1))
        await asyncio.sleep(0)  # recovery is running in its thread
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    async with asyncio.timeout(5):
        while True:
            try:
                wal = await opener.open(CH, 1)
                break
            except ChannelFenced:  # a cancelled recovery thread still finishing
                await asyncio.sleep(0.01)
    await wal.close()


@pytest.mark.parametrize("channel", ["", ".", "..", "a/b", "nul\0"])
async def test_bad_channel_names(make_opener: MakeOpener, channel: str) -> None:
    with pytest.raises(InvalidArgument):
        await make_opener().open(channel, 1)


async def test_closed_opener_refuses_to_open(make_opener: MakeOpener) -> None:
    opener = make_opener()
    await opener.close()
    with pytest.raises(WALClosed):
        await opener.open(CH, 1)
