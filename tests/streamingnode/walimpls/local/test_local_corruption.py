"""Damage that is not a torn tail is reported, never silently dropped."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

from common.errors import StrataError
from streamingnode.walimpls import DeliverPolicy, LogEntry, MessageID
from streamingnode.walimpls.impls.local import LocalWAL, LocalWALOpener
from streamingnode.walimpls.impls.local.record import HEADER_SIZE, encode

MakeOpener = Callable[..., LocalWALOpener]
CH = "corrupt"
PAYLOAD = 100
RECORD = HEADER_SIZE + PAYLOAD


async def _fill(make_opener: MakeOpener, n: int, segment_bytes: int = 1 << 20) -> list[Path]:
    wal = await make_opener(segment_bytes=segment_bytes).open(CH, 1)
    await wal.append([bytes([i % 256]) * PAYLOAD for i in range(n)])
    await wal.close()
    return [s.path for s in wal.segments]


def _flip(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x55
    path.write_bytes(bytes(data))


async def _drain(wal: LocalWAL, policy: DeliverPolicy, n: int) -> list[LogEntry]:
    out: list[LogEntry] = []
    async with asyncio.timeout(5):
        async for entry in wal.read(policy):
            out.append(entry)
            if len(out) == n:
                break
    return out


@pytest.mark.parametrize("where", ["payload", "length", "seq", "first record"])
async def test_damage_followed_by_good_records_fails_open(
    make_opener: MakeOpener, where: str
) -> None:
    (path,) = await _fill(make_opener, 5)
    size = path.stat().st_size
    offset = {
        "payload": 2 * RECORD + HEADER_SIZE + 7,
        "length": 2 * RECORD + 1,
        "seq": 2 * RECORD + 9,
        "first record": 3,
    }[where]
    _flip(path, offset)
    for _ in range(2):  # the failed open gave the lock back
        with pytest.raises(StrataError, match="corrupted"):
            await make_opener().open(CH, 1)
    assert path.stat().st_size == size  # nothing was cut


async def test_valid_record_with_a_wrong_seq_fails_open(make_opener: MakeOpener) -> None:
    (path,) = await _fill(make_opener, 3)
    with path.open("ab") as f:
        f.write(encode(99, b"from somewhere else"))
    with pytest.raises(StrataError, match="seq 99"):
        await make_opener().open(CH, 1)


async def test_damage_in_a_sealed_segment_fails_the_reader(make_opener: MakeOpener) -> None:
    paths = await _fill(make_opener, 40, segment_bytes=1024)
    assert len(paths) > 3
    _flip(paths[0], RECORD + HEADER_SIZE + 3)  # second record of the first file
    wal = await make_opener(segment_bytes=1024).open(CH, 1)  # only the last file is checked
    with pytest.raises(StrataError, match="corrupted"):
        await _drain(wal, DeliverPolicy.all(), 40)
    later = await _drain(wal, DeliverPolicy.start_from(MessageID(20)), 21)
    assert [e.message_id.seq for e in later] == list(range(20, 41))


async def test_missing_middle_segment_fails_the_reader(make_opener: MakeOpener) -> None:
    paths = await _fill(make_opener, 40, segment_bytes=1024)
    paths[1].unlink()
    wal = await make_opener(segment_bytes=1024).open(CH, 1)
    with pytest.raises(StrataError, match="corrupted"):
        await _drain(wal, DeliverPolicy.all(), 40)
