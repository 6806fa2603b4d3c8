"""Segment files roll by size, carry their first seq, and truncate whole."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from streamingnode.walimpls import DeliverPolicy, LogEntry, MessageID
from streamingnode.walimpls.impls.local import LocalWAL, LocalWALOpener
from streamingnode.walimpls.impls.local.record import HEADER, HEADER_SIZE
from streamingnode.walimpls.impls.local.segment import list_segments

MakeOpener = Callable[..., LocalWALOpener]
CH = "seg"
PAYLOAD = 100
RECORD = HEADER_SIZE + PAYLOAD  # 116: eight records fit in 1024 bytes


def _first_seq_in(path: Path) -> int:
    _, _, seq = HEADER.unpack(path.read_bytes()[:HEADER_SIZE])
    return int(seq)


async def _take(wal: LocalWAL, policy: DeliverPolicy, n: int) -> list[LogEntry]:
    out: list[LogEntry] = []
    scanner = wal.read(policy)
    async with asyncio.timeout(5):
        async for entry in scanner:
            out.append(entry)
            if len(out) == n:
                break
    await scanner.close()
    return out


async def test_files_roll_by_size_and_are_named_by_first_seq(make_opener: MakeOpener) -> None:
    wal = await make_opener(segment_bytes=1024).open(CH, 1)
    for i in range(50):
        await wal.append([bytes([i]) * PAYLOAD])
    segments = list_segments(wal.segments[0].path.parent)
    assert [s.first_seq for s in segments] == [1, 9, 17, 25, 33, 41, 49]
    for segment in segments:
        assert _first_seq_in(segment.path) == segment.first_seq
        assert segment.path.stat().st_size <= 1024
    assert segments[-1].path.stat().st_size == 2 * RECORD


async def test_a_record_larger_than_a_segment_gets_its_own_file(make_opener: MakeOpener) -> None:
    wal = await make_opener(segment_bytes=1024).open(CH, 1)
    await wal.append([b"a" * PAYLOAD, b"b" * 5000, b"c" * PAYLOAD])
    sizes = [s.path.stat().st_size for s in wal.segments]
    assert sizes == [RECORD, HEADER_SIZE + 5000, RECORD]
    entries = await _take(wal, DeliverPolicy.all(), 3)
    assert [len(e.payload) for e in entries] == [PAYLOAD, 5000, PAYLOAD]


async def test_truncate_deletes_whole_files_strictly_below(make_opener: MakeOpener) -> None:
    wal = await make_opener(segment_bytes=1024).open(CH, 1)
    await wal.append([b"t" * PAYLOAD for _ in range(50)])
    directory = wal.segments[0].path.parent
    await wal.truncate(MessageID(17))  # 17 starts a file: the two before it go
    assert [s.first_seq for s in list_segments(directory)] == [17, 25, 33, 41, 49]
    await wal.truncate(MessageID(30))  # 30 is inside 25..32: that file stays
    assert [s.first_seq for s in list_segments(directory)] == [25, 33, 41, 49]
    await wal.truncate(MessageID(10**9))  # the last file is never deleted
    assert [s.first_seq for s in list_segments(directory)] == [49]
    assert [e.message_id.seq for e in await _take(wal, DeliverPolicy.all(), 2)] == [49, 50]


async def test_reader_inside_a_truncated_file_keeps_reading(make_opener: MakeOpener) -> None:
    # 64 KiB payloads, three per file: a reader's batch (1 MiB) ends in the
    # middle of the files, so it comes back to files truncate deleted since.
    wal = await make_opener(segment_bytes=256 * 1024).open(CH, 1)
    ids = await wal.append([bytes([i]) * 65536 for i in range(40)])
    scanner = wal.read(DeliverPolicy.all())
    it = aiter(scanner)
    seen = [await anext(it)]
    await wal.truncate(ids[-1])
    assert len(wal.segments) == 1
    async with asyncio.timeout(5):
        while seen[-1].message_id != ids[-1]:
            seen.append(await anext(it))
    # It finishes the file it had open, then goes on at the first remaining
    # record: a contiguous prefix, then the last record.
    seqs = [e.message_id.seq for e in seen]
    assert seqs[:-1] == list(range(1, len(seqs))) and len(seqs) > 3
    assert all(e.payload == bytes([e.message_id.seq - 1]) * 65536 for e in seen)


async def test_readers_survive_rolls_and_truncation(make_opener: MakeOpener) -> None:
    wal = await make_opener(segment_bytes=2048).open(CH, 1)
    total = 600
    truncated_to = 0

    async def produce() -> None:
        nonlocal truncated_to
        for i in range(total // 10):
            ids = await wal.append([f"{i}-{j}".encode().ljust(200, b".") for j in range(10)])
            if i % 5 == 4:
                truncated_to = ids[0].seq
                await wal.truncate(ids[0])

    async def consume(delay: float) -> list[int]:
        seqs: list[int] = []
        async for entry in wal.read(DeliverPolicy.all()):
            seqs.append(entry.message_id.seq)
            if entry.message_id.seq == total:
                return seqs
            await asyncio.sleep(delay)
        return seqs

    async with asyncio.timeout(10), asyncio.TaskGroup() as tg:
        tg.create_task(produce())
        readers = [tg.create_task(consume(d)) for d in (0, 0.0002, 0.001)]
    for seqs in (r.result() for r in readers):
        assert seqs == sorted(set(seqs))  # strictly increasing, no repeats
        # Gaps only where truncation removed records before the reader came.
        tail = [s for s in seqs if s >= truncated_to]
        assert tail == list(range(truncated_to, total + 1))
    assert len(list_segments(wal.segments[0].path.parent)) < total * 216 // 2048
