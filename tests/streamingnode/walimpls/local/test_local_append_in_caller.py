"""``append`` commits in its caller's task: no writer task, and cancellation never leaves
the WAL half-way through a write.

Fsyncs are held in the worker thread by :class:`FsyncGate` to stop a commit at a known point.
"""

from __future__ import annotations

import asyncio
import errno
import os
import threading
from collections.abc import Callable, Iterator

import pytest

from common.errors import WALClosed
from streamingnode.walimpls import DeliverPolicy, MessageID
from streamingnode.walimpls.impls.local import LocalWAL, LocalWALOpener
from streamingnode.walimpls.impls.local import writer as writer_module

MakeOpener = Callable[..., LocalWALOpener]
CH = "caller"


class FsyncGate:
    """Once :meth:`hold` is called, holds every ``os.fsync`` until let through (``release``)
    or until the gate opens again (``open``)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._allowed = 0
        self._opened = True
        self._entered = 0
        self._left = 0
        self.error: int | None = None  # an errno: a let-through fsync fails with it
        self._real = os.fsync

    def fsync(self, fd: int) -> None:
        with self._cond:
            self._entered += 1
            self._cond.notify_all()
            assert self._cond.wait_for(lambda: self._opened or self._allowed > 0, timeout=10)
            if not self._opened:
                self._allowed -= 1
            error = self.error
        try:
            if error is not None:
                raise OSError(error, os.strerror(error))
            self._real(fd)
        finally:
            with self._cond:
                self._left += 1
                self._cond.notify_all()

    def hold(self) -> None:
        """Close the gate; fsyncs are counted from here."""
        with self._cond:
            self._opened, self._allowed, self._entered, self._left = False, 0, 0, 0

    async def entered(self, n: int) -> None:
        """Wait until the ``n``-th fsync since :meth:`hold` is in progress (held or let through)."""

        def wait() -> bool:
            with self._cond:
                return self._cond.wait_for(lambda: self._entered >= n, timeout=5)

        assert await asyncio.to_thread(wait), f"fsync #{n} never started"

    async def left(self, n: int) -> None:
        """Wait until the ``n``-th fsync since :meth:`hold` has returned or raised."""

        def wait() -> bool:
            with self._cond:
                return self._cond.wait_for(lambda: self._left >= n, timeout=5)

        assert await asyncio.to_thread(wait), f"fsync #{n} never returned"

    def release(self, n: int = 1) -> None:
        with self._cond:
            self._allowed += n
            self._cond.notify_all()

    def open(self) -> None:
        with self._cond:
            self._opened = True
            self._cond.notify_all()


@pytest.fixture
def gate(monkeypatch: pytest.MonkeyPatch) -> Iterator[FsyncGate]:
    held = FsyncGate()
    monkeypatch.setattr(writer_module.os, "fsync", held.fsync)
    yield held
    held.open()  # never leave a worker thread (or the opener's close) waiting


async def _log_of(wal: LocalWAL) -> list[bytes]:
    last = wal.last_message_id()
    if last is None:
        return []
    out: list[bytes] = []
    scanner = wal.read(DeliverPolicy.all())
    async with asyncio.timeout(5):
        async for entry in scanner:
            out.append(entry.payload)
            if entry.message_id == last:
                break
    await scanner.close()
    return out


async def test_open_and_append_start_no_task_besides_the_callers(
    make_opener: MakeOpener, gate: FsyncGate
) -> None:
    before = asyncio.all_tasks()
    wal = await make_opener().open(CH, 1)
    assert asyncio.all_tasks() == before, "opening the WAL started a task"
    await wal.append([b"first"])
    gate.hold()
    append = asyncio.create_task(wal.append([b"held"]))
    await gate.entered(1)  # the batch is in the worker thread, its fsync held
    assert asyncio.all_tasks() == before | {append}, "the append was handed to another task"
    gate.open()
    assert await append == [MessageID(2)]
    assert asyncio.all_tasks() == before
    await wal.close()


async def test_a_leader_cancelled_during_its_write_finishes_it_before_the_next_write(
    make_opener: MakeOpener, gate: FsyncGate
) -> None:
    wal = await make_opener().open(CH, 1)
    await wal.append([b"before"])
    gate.hold()
    leader = asyncio.create_task(wal.append([b"held"]))
    await gate.entered(1)
    leader.cancel()
    follower = asyncio.create_task(wal.append([b"next"]))
    await asyncio.sleep(0.1)
    # The cancelled caller stays the leader until its worker thread returns.
    assert not leader.done() and not follower.done()
    assert wal.last_message_id() == MessageID(1)
    gate.open()
    with pytest.raises(asyncio.CancelledError):
        await leader
    assert await follower == [MessageID(3)]  # the held batch took seq 2: it is in the log
    assert wal.last_message_id() == MessageID(3)
    assert await _log_of(wal) == [b"before", b"held", b"next"]
    await wal.close()
    wal = await make_opener().open(CH, 2)
    assert await _log_of(wal) == [b"before", b"held", b"next"]


async def test_a_cancelled_leader_still_answers_the_appends_it_carried(
    make_opener: MakeOpener, gate: FsyncGate
) -> None:
    wal = await make_opener().open(CH, 1)
    await wal.append([b"p0"])
    gate.hold()
    first = asyncio.create_task(wal.append([b"first"]))
    await gate.entered(1)
    a = asyncio.create_task(wal.append([b"a"]))
    b = asyncio.create_task(wal.append([b"b"]))
    await asyncio.sleep(0.05)  # both wait behind the running commit
    commits = wal.commit_count
    gate.release()  # first's fsync: then a leads the next commit, carrying b
    await gate.entered(2)
    a.cancel()
    await asyncio.sleep(0.05)
    assert not b.done()
    gate.open()
    assert await first == [MessageID(2)]
    with pytest.raises(asyncio.CancelledError):
        await a
    assert await b == [MessageID(4)]
    assert wal.commit_count == commits + 2  # first's, then a's and b's together
    assert await _log_of(wal) == [b"p0", b"first", b"a", b"b"]


async def test_an_append_cancelled_while_waiting_is_dropped(make_opener: MakeOpener, gate: FsyncGate) -> None:
    wal = await make_opener().open(CH, 1)
    await wal.append([b"before"])
    gate.hold()
    leader = asyncio.create_task(wal.append([b"held"]))
    await gate.entered(1)
    waiting = asyncio.create_task(wal.append([b"dropped"]))
    await asyncio.sleep(0.05)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    gate.open()
    assert await leader == [MessageID(2)]
    assert await wal.append([b"after"]) == [MessageID(3)]  # no seq was spent on the dropped one
    assert await _log_of(wal) == [b"before", b"held", b"after"]


async def test_a_leader_cancelled_during_a_failing_write_leaves_the_repair_to_the_next_append(
    make_opener: MakeOpener, gate: FsyncGate
) -> None:
    wal = await make_opener().open(CH, 1)
    await wal.append([b"acked"])
    gate.hold()
    gate.error = errno.EIO
    leader = asyncio.create_task(wal.append([b"never acknowledged"]))
    await gate.entered(1)  # its bytes are in the file, the fsync will fail
    leader.cancel()
    gate.release()
    with pytest.raises(asyncio.CancelledError):
        await leader
    await gate.left(1)
    assert wal.last_message_id() == MessageID(1)
    gate.error = None
    gate.open()
    assert await wal.append([b"after"]) == [MessageID(2)]  # repaired in place, seq 2 handed out again
    assert await _log_of(wal) == [b"acked", b"after"]
    await wal.close()
    wal = await make_opener().open(CH, 2)
    assert await _log_of(wal) == [b"acked", b"after"]


async def test_close_during_a_write_lets_it_and_the_waiting_appends_finish(
    make_opener: MakeOpener, gate: FsyncGate
) -> None:
    wal = await make_opener().open(CH, 1)
    await wal.append([b"before"])
    gate.hold()
    writing = asyncio.create_task(wal.append([b"held"]))
    await gate.entered(1)
    waiting = asyncio.create_task(wal.append([b"queued"]))
    await asyncio.sleep(0.05)
    closing = asyncio.create_task(wal.close())
    await asyncio.sleep(0.05)
    assert not closing.done()
    with pytest.raises(WALClosed):
        await wal.append([b"late"])
    gate.open()
    assert await writing == [MessageID(2)]
    assert await waiting == [MessageID(3)]
    await closing
    assert wal.is_closed
    with pytest.raises(WALClosed):
        await wal.append([b"after close"])
    wal = await make_opener().open(CH, 2)
    assert await _log_of(wal) == [b"before", b"held", b"queued"]
