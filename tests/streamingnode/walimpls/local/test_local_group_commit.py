"""Group commit: many appends share one fsync; nothing is visible before it."""

from __future__ import annotations

import asyncio
import errno
import os
import threading
from collections.abc import Callable

import pytest

from common.errors import DiskQuotaExhausted
from streamingnode.walimpls import DeliverPolicy, LogEntry, MessageID
from streamingnode.walimpls.impls.local import LocalWALOpener
from streamingnode.walimpls.impls.local import writer as writer_module

MakeOpener = Callable[..., LocalWALOpener]
CH = "gc"


async def test_concurrent_appends_share_fsyncs(make_opener: MakeOpener) -> None:
    wal = await make_opener().open(CH, 1)
    n = 500
    ids = await asyncio.gather(*(wal.append([b"k" * 1024]) for _ in range(n)))
    assert len({i[0] for i in ids}) == n
    print(f"\n{n} concurrent appends: {wal.commit_count} commits, {wal.fsync_count} fsyncs")
    assert wal.fsync_count <= n // 20


async def test_producers_in_a_loop_share_fsyncs(make_opener: MakeOpener) -> None:
    wal = await make_opener().open(CH, 1)
    producers, rounds = 64, 20

    async def produce() -> None:
        for _ in range(rounds):
            await wal.append([b"p" * 1024])

    async with asyncio.TaskGroup() as tg:
        for _ in range(producers):
            tg.create_task(produce())
    total = producers * rounds
    print(f"\n{total} appends by {producers} producers: {wal.fsync_count} fsyncs")
    assert wal.last_message_id() == MessageID(total)
    assert wal.fsync_count <= total // 8


async def test_sync_off_never_fsyncs(make_opener: MakeOpener) -> None:
    wal = await make_opener(sync=False).open(CH, 1)
    await asyncio.gather(*(wal.append([b"x"]) for _ in range(50)))
    assert wal.fsync_count == 0


async def test_append_and_readers_wait_for_the_fsync(
    make_opener: MakeOpener, monkeypatch: pytest.MonkeyPatch
) -> None:
    wal = await make_opener().open(CH, 1)
    await wal.append([b"before"])  # the segment file exists from here on
    scanner = wal.read(DeliverPolicy.latest())
    gate, entered = threading.Event(), threading.Event()
    real_fsync = os.fsync

    def held_fsync(fd: int) -> None:
        entered.set()
        gate.wait(10)
        real_fsync(fd)

    monkeypatch.setattr(writer_module.os, "fsync", held_fsync)
    append = asyncio.create_task(wal.append([b"held"]))

    async def first() -> LogEntry:
        return await anext(aiter(scanner))

    read = asyncio.create_task(first())
    try:
        assert await asyncio.to_thread(entered.wait, 5)  # written, fsync pending
        await asyncio.sleep(0.1)
        assert not append.done() and not read.done()
        assert wal.last_message_id() == MessageID(1)
    finally:
        gate.set()
    assert await asyncio.wait_for(append, 5) == [MessageID(2)]
    entry = await asyncio.wait_for(read, 5)
    assert entry.payload == b"held"


async def test_a_failed_write_is_not_acknowledged_and_the_next_one_repairs(
    make_opener: MakeOpener, monkeypatch: pytest.MonkeyPatch
) -> None:
    wal = await make_opener().open(CH, 1)
    await wal.append([b"kept"])

    def no_space(fd: int, data: object) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(writer_module.os, "write", no_space)
    with pytest.raises(DiskQuotaExhausted, match="disk quota exceeded") as failed:
        await wal.append([b"lost"])
    assert isinstance(failed.value.__cause__, OSError)
    monkeypatch.undo()
    assert await wal.append([b"again"]) == [MessageID(2)]  # in place: the seq of the failed batch is reused
    await wal.close()
    wal = await make_opener().open(CH, 1)
    assert wal.last_message_id() == MessageID(2)
