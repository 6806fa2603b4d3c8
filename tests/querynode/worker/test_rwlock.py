"""The worker's readers-writer lock: reads overlap, writes run alone, a waiting write goes first."""

from __future__ import annotations

import asyncio

from querynode.worker.rwlock import ReadWriteLock


async def test_reads_overlap() -> None:
    lock = ReadWriteLock()
    inside = 0
    most = 0

    async def read() -> None:
        nonlocal inside, most
        async with lock.read():
            inside += 1
            most = max(most, inside)
            await asyncio.sleep(0.01)
            inside -= 1

    await asyncio.gather(*(read() for _ in range(4)))
    assert most == 4


async def test_write_excludes_reads_and_writes() -> None:
    lock = ReadWriteLock()
    events: list[str] = []

    async def read(name: str) -> None:
        async with lock.read():
            events.append(f"{name}+")
            await asyncio.sleep(0.01)
            events.append(f"{name}-")

    async def write(name: str) -> None:
        async with lock.write():
            events.append(f"{name}+")
            await asyncio.sleep(0.01)
            events.append(f"{name}-")

    await asyncio.gather(read("r1"), write("w1"), write("w2"), read("r2"))
    for w in ("w1", "w2"):
        start = events.index(f"{w}+")
        assert events[start + 1] == f"{w}-", events  # nothing entered while it held the lock


async def test_waiting_writer_holds_new_readers_back() -> None:
    lock = ReadWriteLock()
    order: list[str] = []
    first_in = asyncio.Event()
    release_first = asyncio.Event()

    async def first_reader() -> None:
        async with lock.read():
            first_in.set()
            await release_first.wait()
            order.append("r1 done")

    async def writer() -> None:
        async with lock.write():
            order.append("w")

    async def late_reader() -> None:
        async with lock.read():
            order.append("r2")

    r1 = asyncio.create_task(first_reader())
    await first_in.wait()
    w = asyncio.create_task(writer())
    await asyncio.sleep(0)  # the writer is waiting now
    r2 = asyncio.create_task(late_reader())
    await asyncio.sleep(0.01)
    assert order == []  # the late reader did not slip in ahead of the waiting writer
    release_first.set()
    await asyncio.gather(r1, w, r2)
    assert order == ["r1 done", "w", "r2"]


async def test_cancelled_writer_lets_readers_in() -> None:
    lock = ReadWriteLock()
    reading = asyncio.Event()
    done = asyncio.Event()

    async def holder() -> None:
        async with lock.read():
            reading.set()
            await done.wait()

    h = asyncio.create_task(holder())
    await reading.wait()
    w = asyncio.create_task(lock.write().__aenter__())
    await asyncio.sleep(0)
    w.cancel()
    await asyncio.gather(w, return_exceptions=True)
    async with asyncio.timeout(1):
        async with lock.read():
            pass
    done.set()
    await h
