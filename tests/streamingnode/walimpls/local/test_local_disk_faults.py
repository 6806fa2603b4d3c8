"""Disk faults under the local WAL: a failed write or fsync is never acknowledged, never seen
by a reader, and once the disk works again the same WAL appends again (no reopen).

Faults come from failpoints (``wal.local.write`` / ``wal.local.fsync`` raising ``OSError``)
and, in the last test, from a real tmpfs that fills up (real short writes, real ``ENOSPC``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from common import failpoints
from common.errors import DiskQuotaExhausted, ErrorCode, IOFailed, StrataError
from streamingnode.walimpls import DeliverPolicy, LogEntry, MessageID, Scanner
from streamingnode.walimpls.impls.local import LocalWAL, LocalWALOpener, local_opener
from streamingnode.walimpls.impls.local.segment import SEGMENT_SUFFIX
from tests.tmpfs import fill, tmpfs

pytestmark = pytest.mark.usefixtures("disarmed")

MakeOpener = Callable[..., LocalWALOpener]
CH = "disk"
EXPECTED: dict[str, tuple[type[StrataError], ErrorCode, str]] = {
    "ENOSPC": (DiskQuotaExhausted, ErrorCode.DISK_QUOTA_EXHAUSTED, "disk quota exceeded"),
    "EIO": (IOFailed, ErrorCode.IO_FAILED, "IO failed"),
}


async def _take(scanner: Scanner, n: int, timeout: float = 5.0) -> list[LogEntry]:
    out: list[LogEntry] = []
    async with asyncio.timeout(timeout):
        while len(out) < n:
            out.append(await anext(scanner))
    return out


async def _nothing_within(scanner: Scanner, seconds: float = 0.3) -> bool:
    try:
        async with asyncio.timeout(seconds):
            await anext(scanner)
    except TimeoutError:
        return True
    return False


async def _log_of(wal: LocalWAL) -> list[bytes]:
    """Every record of ``wal``, read from the start."""
    last = wal.last_message_id()
    if last is None:
        return []
    scanner = wal.read(DeliverPolicy.all())
    try:
        return [e.payload for e in await _take(scanner, last.seq)]
    finally:
        await scanner.close()


def _segment_files(wal: LocalWAL) -> list[Path]:
    directory = wal.segments[0].path.parent
    return sorted(p for p in directory.iterdir() if p.name.endswith(SEGMENT_SUFFIX))


@pytest.mark.parametrize("point", ["write", "fsync"])
@pytest.mark.parametrize("code", sorted(EXPECTED))
async def test_a_failed_batch_is_refused_and_the_wal_goes_on_in_place(
    make_opener: MakeOpener, point: str, code: str
) -> None:
    cls, error_code, wording = EXPECTED[code]
    wal = await make_opener().open(CH, 1)
    acked = [f"acked-{i}".encode() for i in range(5)]
    await wal.append(acked)
    scanner = wal.read(DeliverPolicy.all())
    assert [e.payload for e in await _take(scanner, 5)] == acked

    failpoints.arm(f"wal.local.{point}={code}")
    for attempt in range(3):
        with pytest.raises(cls) as refused:
            await wal.append([f"refused-{attempt}".encode() * 50, b"second"])
        assert refused.value.code == error_code
        assert wording in refused.value.message and f"wal of channel {CH} (term 1)" in refused.value.message
    assert await _nothing_within(scanner), "a reader saw a record that was not acknowledged"
    assert wal.last_message_id() == MessageID(5)

    failpoints.arm("")
    assert await wal.append([b"after-1", b"after-2"]) == [MessageID(6), MessageID(7)]
    assert [(e.message_id.seq, e.payload) for e in await _take(scanner, 2)] == [(6, b"after-1"), (7, b"after-2")]
    await scanner.close()
    await wal.close()

    with capture_logs() as logs:
        wal = await make_opener().open(CH, 2)
    assert not [e for e in logs if e["event"] == "torn tail cut"], "the repair left a torn tail behind"
    assert await _log_of(wal) == [*acked, b"after-1", b"after-2"]
    assert await wal.append([b"term-2"]) == [MessageID(8)]


async def test_a_failed_batch_that_rolled_to_a_new_file_leaves_nothing_behind(make_opener: MakeOpener) -> None:
    # Records of 116 bytes in files of 256: the second record of a batch starts a new file.
    wal = await make_opener(segment_bytes=256).open(CH, 1)
    acked = [b"a" * 100]
    await wal.append(acked)
    files_before = _segment_files(wal)
    # The batch's first fsync (the old file, one record of it) works, the second (the new file) fails.
    failpoints.arm("wal.local.fsync@2=EIO")
    with pytest.raises(IOFailed):
        await wal.append([b"b" * 100, b"c" * 100, b"d" * 100])
    failpoints.arm("")
    assert len(_segment_files(wal)) > len(files_before)  # the failed batch's file exists until the repair
    assert await wal.append([b"e" * 100]) == [MessageID(2)]
    assert await _log_of(wal) == [*acked, b"e" * 100]
    assert _segment_files(wal) == [s.path for s in wal.segments]
    await wal.close()
    wal = await make_opener(segment_bytes=256).open(CH, 2)
    assert await _log_of(wal) == [*acked, b"e" * 100]


async def test_a_wal_closed_while_broken_is_repaired_by_its_close(make_opener: MakeOpener) -> None:
    wal = await make_opener().open(CH, 1)
    await wal.append([b"acked"])
    # The bytes reach the file, their fsync fails: they must not come back after a reopen.
    failpoints.arm("wal.local.fsync=EIO")
    with pytest.raises(IOFailed):
        await wal.append([b"not durable"])
    failpoints.arm("")
    await wal.close()
    wal = await make_opener().open(CH, 2)
    assert await _log_of(wal) == [b"acked"]


async def test_a_wal_closed_while_the_disk_still_fails_keeps_every_acknowledged_record(
    make_opener: MakeOpener,
) -> None:
    wal = await make_opener().open(CH, 1)
    acked = [b"one", b"two"]
    await wal.append(acked)
    failpoints.arm("wal.local.fsync=EIO")
    with pytest.raises(IOFailed):
        await wal.append([b"unacknowledged"])
    with capture_logs() as logs:
        await wal.close()  # its repair fails too
    assert [e for e in logs if e["event"] == "wal not repaired before close"]
    failpoints.arm("")
    wal = await make_opener().open(CH, 2)
    log = await _log_of(wal)
    # The unacknowledged record may or may not be there (its bytes are whole); nothing else may.
    assert log in ([*acked], [*acked, b"unacknowledged"])
    assert await wal.append([b"next"]) == [MessageID(len(log) + 1)]


@pytest.mark.needs_root
async def test_a_real_full_disk_refuses_appends_and_they_work_again_once_space_is_freed(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "disk", "2m") as disk:
        filler = disk / "filler"
        filler.write_bytes(b"\0" * (640 * 1024))  # freed later: room for the appends after the fault
        opener = local_opener(disk / "wal")
        try:
            wal = await opener.open(CH, 1)
            scanner = wal.read(DeliverPolicy.all())
            acked: list[bytes] = []
            record = 20 * 1024
            refused: DiskQuotaExhausted | None = None
            for i in range(200):  # 4 MiB: more than the disk holds
                payload = bytes([i % 251]) * record
                try:
                    await wal.append([payload])
                except DiskQuotaExhausted as err:
                    refused = err
                    break
                acked.append(payload)
            assert refused is not None and acked, "the disk never filled up"
            assert refused.code == ErrorCode.DISK_QUOTA_EXHAUSTED
            assert "disk quota exceeded" in refused.message and "No space left on device" in refused.message
            fill(disk, "rest")  # whatever the WAL's last short write left
            for _ in range(3):
                with pytest.raises(DiskQuotaExhausted):
                    await wal.append([b"x" * record])
            assert [e.payload for e in await _take(scanner, len(acked))] == acked
            assert await _nothing_within(scanner), "a reader saw a record that was not acknowledged"

            filler.unlink()
            more = [bytes([200 + i]) * record for i in range(10)]
            for payload in more:
                await wal.append([payload])
            assert [e.payload for e in await _take(scanner, len(more))] == more
            await scanner.close()
            await wal.close()
            with capture_logs() as logs:
                wal = await opener.open(CH, 2)
            assert not [e for e in logs if e["event"] == "torn tail cut"], "the repair left a torn tail behind"
            assert await _log_of(wal) == acked + more
        finally:
            await opener.close()
