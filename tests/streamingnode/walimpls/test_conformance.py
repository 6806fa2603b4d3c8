"""The contract every WAL backend keeps; runs once per registered backend."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any, Protocol

import pytest

from common.errors import ChannelFenced, WALClosed
from streamingnode.walimpls import DeliverPolicy, LogEntry, MessageID, WALImpl, WALOpener

Take = Callable[..., Coroutine[Any, Any, list[LogEntry]]]
NothingWithin = Callable[..., Awaitable[bool]]


class Backend(Protocol):  # the ``backend`` fixture of conftest.py
    name: str
    options: dict[str, Any]

    def opener(self) -> WALOpener: ...


CH = "pchannel-0"
REPO_ROOT = Path(__file__).resolve().parents[3]


def payloads(prefix: str, n: int, size: int = 0) -> list[bytes]:
    return [f"{prefix}-{i}".encode().ljust(size, b".") for i in range(n)]


def ids_of(entries: list[LogEntry]) -> list[MessageID]:
    return [e.message_id for e in entries]


async def test_empty_wal(backend: Backend) -> None:
    wal = await backend.opener().open(CH, 1)
    assert wal.channel == CH and wal.term == 1
    assert wal.last_message_id() is None
    assert await wal.append([]) == []


async def test_append_order_and_read_all(backend: Backend, take: Take) -> None:
    wal = await backend.opener().open(CH, 1)
    first = await wal.append(payloads("a", 3))
    second = await wal.append(payloads("b", 20, size=150))
    ids = first + second
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert wal.last_message_id() == ids[-1]
    entries = await take(wal.read(DeliverPolicy.all()), len(ids))
    assert ids_of(entries) == ids
    assert [e.payload for e in entries] == payloads("a", 3) + payloads("b", 20, size=150)


async def test_concurrent_appends_group_into_one_order(backend: Backend, take: Take) -> None:
    wal = await backend.opener().open(CH, 1)
    single = [wal.append([f"s-{i}".encode()]) for i in range(200)]
    multi = [wal.append(payloads(f"m{i}", 5)) for i in range(20)]
    results = await asyncio.gather(*single, *multi)
    all_ids = [i for r in results for i in r]
    assert len(set(all_ids)) == 300
    log = await take(wal.read(DeliverPolicy.all()), 300)
    assert ids_of(log) == sorted(all_ids)
    position = {e.message_id: n for n, e in enumerate(log)}
    by_id = {e.message_id: e.payload for e in log}
    for i, ids in enumerate(results[200:]):
        # One call's payloads are adjacent and in order in the log.
        spots = [position[x] for x in ids]
        assert spots == list(range(spots[0], spots[0] + 5))
        assert [by_id[x] for x in ids] == payloads(f"m{i}", 5)
    for i, ids in enumerate(results[:200]):
        assert by_id[ids[0]] == f"s-{i}".encode()


async def test_concurrent_readers_see_the_same_log(backend: Backend, take: Take) -> None:
    wal = await backend.opener().open(CH, 1)
    readers = [wal.read(DeliverPolicy.all()) for _ in range(4)]
    reads = [asyncio.create_task(take(r, 200, timeout=10)) for r in readers]

    async def produce(p: int) -> None:
        for i in range(8):
            await wal.append(payloads(f"p{p}-{i}", 5, size=64))

    async with asyncio.TaskGroup() as tg:
        for p in range(5):
            tg.create_task(produce(p))
    logs = await asyncio.gather(*reads)
    expected = ids_of(logs[0])
    assert expected == sorted(expected) and len(set(expected)) == 200
    for log in logs[1:]:
        assert ids_of(log) == expected
        assert [e.payload for e in log] == [e.payload for e in logs[0]]
    assert expected[-1] == wal.last_message_id()


async def test_deliver_policies(
    backend: Backend, take: Take, nothing_within: NothingWithin
) -> None:
    wal = await backend.opener().open(CH, 1)
    ids = await wal.append(payloads("x", 10))
    assert ids_of(await take(wal.read(DeliverPolicy.all()), 10)) == ids
    assert ids_of(await take(wal.read(DeliverPolicy.start_from(ids[4])), 6)) == ids[4:]
    assert ids_of(await take(wal.read(DeliverPolicy.start_after(ids[4])), 5)) == ids[5:]
    after_last = wal.read(DeliverPolicy.start_after(ids[-1]))
    latest = wal.read(DeliverPolicy.latest())
    assert await nothing_within(latest)
    assert await nothing_within(after_last)
    new = await wal.append([b"new"])
    for scanner in (latest, after_last):
        (entry,) = await take(scanner, 1)
        assert entry.message_id == new[0] and entry.payload == b"new"


async def test_scanner_tails_new_appends(backend: Backend, take: Take) -> None:
    wal = await backend.opener().open(CH, 1)
    scanner = wal.read(DeliverPolicy.all())
    pending = asyncio.create_task(take(scanner, 3))
    await asyncio.sleep(0.05)
    assert not pending.done()
    ids = await wal.append([b"1"])
    ids += await wal.append([b"2", b"3"])
    assert ids_of(await pending) == ids


async def test_scanner_close_ends_iteration(backend: Backend) -> None:
    wal = await backend.opener().open(CH, 1)
    await wal.append([b"only"])
    scanner = wal.read(DeliverPolicy.all())
    seen: list[LogEntry] = []

    async def consume() -> None:
        async for entry in scanner:
            seen.append(entry)

    task = asyncio.create_task(consume())
    # Close once the record was delivered (a fixed 50 ms was too short for a loaded machine's NATS).
    async with asyncio.timeout(30):
        while not seen:
            await asyncio.sleep(0.01)
    await scanner.close()
    await asyncio.wait_for(task, 5)
    assert [e.payload for e in seen] == [b"only"]


async def test_truncate_keeps_everything_from_the_id(backend: Backend, take: Take) -> None:
    wal = await backend.opener().open(CH, 1)
    ids = await wal.append(payloads("t", 100, size=100))
    cut = ids[60]
    await wal.truncate(cut)
    assert ids_of(await take(wal.read(DeliverPolicy.start_from(cut)), 40)) == ids[60:]
    # A start that was truncated away begins at the first remaining record.
    for policy in (DeliverPolicy.all(), DeliverPolicy.start_from(ids[0])):
        head = (await take(wal.read(policy), 1))[0].message_id
        assert head <= cut
        kept = ids[ids.index(head) :]
        assert ids_of(await take(wal.read(policy), len(kept))) == kept
    await wal.truncate(ids[-1])
    assert ids_of(await take(wal.read(DeliverPolicy.start_from(ids[-1])), 1)) == [ids[-1]]
    more = await wal.append([b"after-truncate"])
    assert more[0] > ids[-1]
    await wal.close()
    wal = await backend.opener().open(CH, 1)
    log = await take(wal.read(DeliverPolicy.start_from(ids[-1])), 2)
    assert ids_of(log) == [ids[-1], more[0]]


async def test_first_message_id_follows_appends_and_truncation(backend: Backend, take: Take) -> None:
    wal = await backend.opener().open(CH, 1)
    assert wal.first_message_id() is None
    ids = await wal.append(payloads("f", 100, size=100))
    assert wal.first_message_id() == ids[0]
    await wal.truncate(ids[60])
    first = wal.first_message_id()
    assert first is not None and ids[0] <= first <= ids[60]
    # It is exactly where a reader from the start begins.
    assert (await take(wal.read(DeliverPolicy.all()), 1))[0].message_id == first
    await wal.close()
    wal = await backend.opener().open(CH, 1)
    assert wal.first_message_id() == first
    await wal.close()


async def test_close_drains_appends_and_ends_readers(backend: Backend) -> None:
    wal = await backend.opener().open(CH, 1)
    scanner = wal.read(DeliverPolicy.all())
    seen: list[LogEntry] = []

    async def consume() -> None:
        async for entry in scanner:
            seen.append(entry)

    reader = asyncio.create_task(consume())
    appends = [asyncio.create_task(wal.append([f"d-{i}".encode()])) for i in range(50)]
    await asyncio.sleep(0)  # every append is queued
    await wal.close()
    results = await asyncio.gather(*appends)
    assert len({r[0] for r in results}) == 50
    await asyncio.wait_for(reader, 5)
    assert len(seen) <= 50
    with pytest.raises(WALClosed):
        await wal.append([b"late"])
    with pytest.raises(WALClosed):
        wal.read(DeliverPolicy.all())
    await wal.close()  # idempotent


async def test_reopen_after_close_keeps_data_and_continues_ids(
    backend: Backend, take: Take
) -> None:
    wal = await backend.opener().open(CH, 1)
    ids = await wal.append(payloads("r", 30, size=100))
    await wal.close()
    wal = await backend.opener().open(CH, 2)
    assert wal.last_message_id() == ids[-1]
    log = await take(wal.read(DeliverPolicy.all()), 30)
    assert [e.payload for e in log] == payloads("r", 30, size=100)
    more = await wal.append([b"next"])
    assert more[0] > ids[-1]
    assert wal.last_message_id() == more[0]


async def test_an_open_channel_refuses_the_same_term(backend: Backend) -> None:
    wal = await backend.opener().open(CH, 3)
    with pytest.raises(ChannelFenced, match="3"):
        await backend.opener().open(CH, 3)
    await wal.append([b"still mine"])
    await wal.close()
    taken = await backend.opener().open(CH, 3)  # closed: the same term may open it again
    assert taken.term == 3


async def test_a_newer_term_takes_over_and_fences_the_old_owner(backend: Backend, take: Take) -> None:
    # The old owner is still running (frozen, partitioned): nobody closed it.
    old = await backend.opener().open(CH, 3)
    await old.append(payloads("old", 5, size=300))  # rolls files (2 KiB segments)
    new = await backend.opener().open(CH, 4)
    for _ in range(3):  # every later append fails, also ones that would roll a file
        with pytest.raises(ChannelFenced, match="4"):
            await old.append(payloads("late", 4, size=900))
    await new.append([b"new-0"])
    expected = payloads("old", 5, size=300) + [b"new-0"]
    assert [e.payload for e in await take(new.read(DeliverPolicy.all()), 6)] == expected
    # The next owner, after both are gone, sees the same log: nothing of the fenced writes.
    await old.close()
    await new.close()
    after = await backend.opener().open(CH, 5)
    log = await take(after.read(DeliverPolicy.all()), 6)
    assert [e.payload for e in log] == expected
    more = await after.append([b"new-1"])
    assert more[0] > log[-1].message_id


async def test_stale_term_is_fenced(backend: Backend) -> None:
    wal = await backend.opener().open(CH, 5)
    await wal.close()
    with pytest.raises(ChannelFenced, match="5"):
        await backend.opener().open(CH, 4)
    wal = await backend.opener().open(CH, 5)
    await wal.close()
    wal = await backend.opener().open(CH, 6)
    await wal.close()
    with pytest.raises(ChannelFenced):
        await backend.opener().open(CH, 5)


async def test_channels_are_independent(backend: Backend, take: Take) -> None:
    opener = backend.opener()
    a, b = await opener.open("ch-a", 1), await opener.open("ch-b", 1)
    await a.append([b"a1", b"a2"])
    await b.append([b"b1"])
    assert [e.payload for e in await take(a.read(DeliverPolicy.all()), 2)] == [b"a1", b"a2"]
    assert [e.payload for e in await take(b.read(DeliverPolicy.all()), 1)] == [b"b1"]


async def test_opener_close_closes_its_wals(backend: Backend) -> None:
    opener = backend.opener()
    wal = await opener.open(CH, 1)
    await opener.close()
    with pytest.raises(WALClosed):
        await wal.append([b"x"])
    reopened = await backend.opener().open(CH, 1)  # ownership was given up
    await reopened.close()


_CRASHING_OWNER = """
import asyncio, json, os, sys
from streamingnode.walimpls import build_opener

async def main() -> None:
    name, options, channel, term, count = json.loads(sys.argv[1])
    wal = await build_opener(name, **options).open(channel, term)
    ids = await wal.append([f"crash-{i}".encode() for i in range(count)])
    print("IDS " + json.dumps([i.to_bytes().hex() for i in ids]), flush=True)
    await asyncio.to_thread(sys.stdin.readline)
    os._exit(0)  # a crash: no close, no flush, no unlock

asyncio.run(main())
"""


async def test_reopen_after_crash(backend: Backend, take: Take) -> None:
    args = json.dumps([backend.name, backend.options, CH, 7, 25])
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _CRASHING_OWNER, args, env=env, cwd=REPO_ROOT,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert child.stdin is not None and child.stdout is not None
    try:
        async with asyncio.timeout(30):
            while not (line := await child.stdout.readline()).startswith(b"IDS "):
                assert line, "the crashing owner exited early"
        ids = [MessageID.from_bytes(bytes.fromhex(h)) for h in json.loads(line[4:])]
        with pytest.raises(ChannelFenced, match="7"):  # another process owns it
            await backend.opener().open(CH, 7)
        child.stdin.write(b"crash\n")
        await child.stdin.drain()
        assert await asyncio.wait_for(child.wait(), 30) == 0
    finally:
        if child.returncode is None:
            child.kill()
            await child.wait()
    wal: WALImpl = await backend.opener().open(CH, 7)
    assert wal.last_message_id() == ids[-1]
    log = await take(wal.read(DeliverPolicy.all()), 25)
    assert ids_of(log) == ids
    assert [e.payload for e in log] == [f"crash-{i}".encode() for i in range(25)]
    more = await wal.append([b"after crash"])
    assert more[0] > ids[-1]


_FROZEN_OWNER = """
import asyncio, json, sys
from common.errors import ChannelFenced
from streamingnode.walimpls import build_opener

async def main() -> None:
    name, options, channel, term = json.loads(sys.argv[1])
    wal = await build_opener(name, **options).open(channel, term)
    i = 0
    while True:
        try:
            ids = await wal.append([f"frozen-{i}".encode().ljust(300, b".")])
        except ChannelFenced as err:
            print("FENCED " + str(err), flush=True)
            return
        print(f"ACK {i} {ids[0].to_bytes().hex()}", flush=True)
        i += 1

asyncio.run(main())
"""


async def test_a_frozen_owner_is_fenced_when_it_wakes_up(
    backend: Backend, take: Take, nothing_within: NothingWithin
) -> None:
    """SIGSTOP an owner that appends without pause, take the channel over, SIGCONT it.

    Nothing it appends after the take-over is acknowledged or ever delivered;
    everything it acknowledged is in the new owner's log.
    """
    args = json.dumps([backend.name, backend.options, CH, 7])
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _FROZEN_OWNER, args, env=env, cwd=REPO_ROOT,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    assert child.stdout is not None
    acked: dict[int, MessageID] = {}
    try:
        async with asyncio.timeout(30):
            while len(acked) < 20:
                line = (await child.stdout.readline()).decode()
                assert line, "the owner exited early"
                if not line.startswith("ACK "):
                    continue  # its log lines
                _, i, hexid = line.split()
                acked[int(i)] = MessageID.from_bytes(bytes.fromhex(hexid))
        os.kill(child.pid, signal.SIGSTOP)
        new = await backend.opener().open(CH, 8)
        mine = await new.append([b"new-owner"])
        os.kill(child.pid, signal.SIGCONT)
        async with asyncio.timeout(30):
            while True:
                line = (await child.stdout.readline()).decode()
                assert line, "the frozen owner exited without being fenced"
                if line.startswith("FENCED "):
                    break
                if not line.startswith("ACK "):
                    continue
                _, i, hexid = line.split()  # acknowledged before the take-over, printed after SIGCONT
                acked[int(i)] = MessageID.from_bytes(bytes.fromhex(hexid))
        assert await child.wait() == 0
    finally:
        if child.returncode is None:
            child.kill()
            await child.wait()
    log = await take(new.read(DeliverPolicy.all()), mine[0].seq, timeout=10)
    by_id = {e.message_id: e.payload for e in log}
    for i, mid in acked.items():  # every acknowledged append is there
        assert by_id[mid] == f"frozen-{i}".encode().ljust(300, b".")
    # The old owner's records form a prefix; the new owner's record follows them, nothing after.
    payloads_in_order = [e.payload for e in log]
    assert payloads_in_order[-1] == b"new-owner" and log[-1].message_id == mine[0]
    assert all(p.startswith(b"frozen-") for p in payloads_in_order[:-1])
    assert await nothing_within(new.read(DeliverPolicy.start_after(mine[0])), 0.5)

