"""Recovery cuts a torn tail off the last segment and keeps everything before it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from streamingnode.walimpls import DeliverPolicy, MessageID
from streamingnode.walimpls.impls.local import LocalWAL, LocalWALOpener
from streamingnode.walimpls.impls.local.record import HEADER, encode
from streamingnode.walimpls.impls.local.segment import list_segments, segment_path

MakeOpener = Callable[..., LocalWALOpener]
CH = "torn"


def _header_claiming(length: int) -> bytes:
    return HEADER.pack(length, 0x12345678, 6)


# name -> bytes appended after five good records, and how many records survive.
DAMAGE: dict[str, tuple[bytes, int]] = {
    "half header": (encode(6, b"payload-6")[:7], 5),
    "half payload": (encode(6, b"payload-6")[:-3], 5),
    "header only": (encode(6, b"payload-6")[:16], 5),
    "huge length": (_header_claiming(1 << 30) + b"abc", 5),
    "garbage": (b"\xde\xad\xbe\xef" * 9 + b"\x01", 5),
    "zeros": (b"\x00" * 4096, 5),
}


async def _write_five(make_opener: MakeOpener) -> Path:
    wal = await make_opener().open(CH, 1)
    await wal.append([f"payload-{i}".encode() for i in range(1, 6)])
    await wal.close()
    return list_segments(wal.segments[0].path.parent)[-1].path


async def _read_all(wal: LocalWAL, n: int) -> list[bytes]:
    scanner = wal.read(DeliverPolicy.all())
    out = []
    async with asyncio.timeout(5):
        async for entry in scanner:
            out.append(entry.payload)
            if len(out) == n:
                break
    await scanner.close()
    return out


@pytest.mark.parametrize("damage", sorted(DAMAGE))
async def test_torn_tail_is_cut(make_opener: MakeOpener, damage: str) -> None:
    tail, survivors = DAMAGE[damage]
    path = await _write_five(make_opener)
    good_size = path.stat().st_size
    with path.open("ab") as f:
        f.write(tail)
    with capture_logs() as logs:
        wal = await make_opener().open(CH, 1)
    assert path.stat().st_size == good_size
    cut = [e for e in logs if e["event"] == "torn tail cut"]
    assert cut and cut[0]["cut_bytes"] == len(tail) and cut[0]["kept_bytes"] == good_size
    assert wal.last_message_id() == MessageID(survivors)
    assert await _read_all(wal, 5) == [f"payload-{i}".encode() for i in range(1, 6)]
    assert await wal.append([b"after"]) == [MessageID(6)]
    await wal.close()
    wal = await make_opener().open(CH, 1)
    assert (await _read_all(wal, 6))[-1] == b"after"


async def test_bad_crc_on_the_last_record_drops_only_it(make_opener: MakeOpener) -> None:
    path = await _write_five(make_opener)
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF  # the last record's payload
    path.write_bytes(bytes(data))
    wal = await make_opener().open(CH, 1)
    assert wal.last_message_id() == MessageID(4)
    assert await _read_all(wal, 4) == [f"payload-{i}".encode() for i in range(1, 5)]
    assert await wal.append([b"again"]) == [MessageID(5)]


async def test_empty_last_segment_after_a_crash_at_roll(make_opener: MakeOpener) -> None:
    wal = await make_opener(segment_bytes=1024).open(CH, 1)
    ids = await wal.append([b"x" * 100 for _ in range(20)])
    directory = wal.segments[0].path.parent
    await wal.close()
    # The roll created the next file, then the process died before writing to it.
    empty = segment_path(directory, ids[-1].seq + 1, 1)
    empty.touch()
    wal = await make_opener(segment_bytes=1024).open(CH, 1)
    assert wal.segments[-1].path == empty  # the same term goes on in its empty file
    assert wal.last_message_id() == ids[-1]
    more = await wal.append([b"into the empty file"])
    assert more == [MessageID(ids[-1].seq + 1)]
    assert (await _read_all(wal, 21))[-1] == b"into the empty file"
