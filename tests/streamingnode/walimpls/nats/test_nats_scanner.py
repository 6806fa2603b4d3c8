"""Scanners of the ``nats`` backend: ids across many owners and truncation, consumers that vanish."""

from __future__ import annotations

import asyncio

from nats.aio.client import Client as NATS

from streamingnode.walimpls import DeliverPolicy, LogEntry, MessageID, Scanner
from tests.streamingnode.walimpls.nats.conftest import MakeOpener

CH = "pchannel-0"


async def _take(scanner: Scanner, n: int, timeout: float = 10.0) -> list[LogEntry]:
    out: list[LogEntry] = []
    it = aiter(scanner)
    async with asyncio.timeout(timeout):
        while len(out) < n:
            out.append(await anext(it))
    return out


async def test_ids_stay_dense_across_owners_and_truncation(make_opener: MakeOpener) -> None:
    """Each open puts a marker between records; ids and every deliver policy ignore them."""
    payloads: list[bytes] = []
    ids: list[MessageID] = []
    for term in range(1, 7):
        wal = await make_opener().open(CH, term)
        assert wal.last_message_id() == (ids[-1] if ids else None)
        batch = [f"t{term}-{i}".encode() for i in range(term % 3)]  # some owners append nothing
        ids += await wal.append(batch)
        payloads += batch
        if term == 4:
            await wal.truncate(ids[2])
        await wal.close()
    assert [i.seq for i in ids] == list(range(1, len(ids) + 1))
    wal = await make_opener().open(CH, 7)
    first = wal.first_message_id()
    assert first is not None and first <= ids[2] and wal.last_message_id() == ids[-1]  # whole frames are purged
    kept = list(zip(ids, payloads, strict=True))[ids.index(first) :]
    assert [(e.message_id, e.payload) for e in await _take(wal.read(DeliverPolicy.all()), len(kept))] == kept
    for k, mid in enumerate(ids[2:], start=2):
        (entry,) = await _take(wal.read(DeliverPolicy.start_from(mid)), 1)
        assert (entry.message_id, entry.payload) == (mid, payloads[k])
        rest = await _take(wal.read(DeliverPolicy.start_after(mid)), len(ids) - k - 1) if k + 1 < len(ids) else []
        assert [e.message_id for e in rest] == ids[k + 1 :]


async def test_a_scanner_replaces_a_deleted_consumer(make_opener: MakeOpener, raw_nats: NATS, prefix: str) -> None:
    wal = await make_opener().open(CH, 1)
    first = await wal.append([b"a", b"b"])
    scanner = wal.read(DeliverPolicy.all())
    assert [e.message_id for e in await _take(scanner, 2)] == first
    js = raw_nats.jetstream()
    stream = f"{prefix}_{CH}"
    consumers = await js.consumers_info(stream)
    assert len(consumers) == 1
    assert await js.delete_consumer(stream, consumers[0].name)
    more = await wal.append([b"c"])
    more += await wal.append([b"d"])
    got = await _take(scanner, 2)
    assert [(e.message_id, e.payload) for e in got] == list(zip(more, [b"c", b"d"], strict=True))
    assert [c.name for c in await js.consumers_info(stream)] != [consumers[0].name]
    await scanner.close()
    assert await js.consumers_info(stream) == []  # close deletes its consumer


async def test_a_start_far_behind_the_tail_is_looked_up(make_opener: MakeOpener) -> None:
    """A reopened WAL knows only its first and last frame: older starts are found by a binary search."""
    wal = await make_opener().open(CH, 1)
    ids: list[MessageID] = []
    for i in range(120):  # one frame per call, of 1 to 3 records
        ids += await wal.append([f"r{i}-{k}".encode() for k in range(i % 3 + 1)])
    await wal.close()
    wal = await make_opener().open(CH, 2)
    for k in (0, 1, 57, 58, 59, 131, len(ids) - 2):
        (entry,) = await _take(wal.read(DeliverPolicy.start_from(ids[k])), 1)
        assert entry.message_id == ids[k]
        (entry,) = await _take(wal.read(DeliverPolicy.start_after(ids[k])), 1)
        assert entry.message_id == ids[k + 1]
    await wal.truncate(ids[100])
    first = wal.first_message_id()
    assert first is not None and ids[98] <= first <= ids[100]  # the frame holding it stays, whole
    (entry,) = await _take(wal.read(DeliverPolicy.start_from(ids[3])), 1)
    assert entry.message_id == first  # truncated away: the first remaining record
