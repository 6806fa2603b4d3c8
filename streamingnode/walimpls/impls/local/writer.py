"""The blocking half of group commit: write one batch of records, then fsync.

``SegmentWriter`` owns the descriptor of the active (last) segment. It is
driven by the caller leading :class:`LocalWAL`'s current commit
(``turns.py``), one batch at a time, in a worker thread; it never touches the
event loop or the WAL's segment list, it reports the segments it created
instead.

A failed write or fsync (``ENOSPC``, ``EIO``, ...) leaves the writer *broken*:
the files may hold part of the batch. :meth:`SegmentWriter.repair` cuts the
log back to where the last completed batch ended, so that writing can go on
in place once the disk works again. After a failed ``fsync`` the state of the
page cache is unknown (Linux may have dropped the dirty pages, or marked them
clean while the disk never got them), so nothing written since the last
successful fsync is trusted: repair does not re-read the file to keep the
records that look valid, it truncates to the size that the last successful
fsync made durable, and fsyncs that truncation before any new write.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from common.failpoints import failpoint

from .record import encode
from .segment import Segment, fsync_dir, segment_path


@dataclass(frozen=True, slots=True)
class WriteResult:
    new_segments: list[Segment]
    fsyncs: int


@dataclass(frozen=True, slots=True)
class RepairResult:
    """What :meth:`SegmentWriter.repair` cut off."""

    cut_bytes: int  # bytes of the failed batch removed from the active segment
    removed_files: int  # segment files the failed batch had created


class SegmentWriter:
    """Appends records to the active segment and rolls past ``segment_bytes``.

    A record goes to a fresh segment when the active one is not empty and
    the record would push it past ``segment_bytes``; a single record larger
    than that gets a segment of its own. Not thread-safe: one batch at a time.
    """

    def __init__(
        self,
        directory: Path,
        active: Segment | None,
        active_size: int,
        segment_bytes: int,
        sync: bool,
        *,
        term: int,
        check_owner: Callable[[], None],
    ) -> None:
        self._dir = directory
        self._term = term
        self._check_owner = check_owner
        self._segment_bytes = segment_bytes
        self._sync = sync
        self._fd: int | None = None
        self._active = active
        self._size = active_size
        # Where the last completed batch ended: the log is cut back to here after a failure.
        self._durable: tuple[Segment | None, int] = (active, active_size)
        self._created: list[Segment] = []  # files made by the batch in progress
        self._broken = False
        if active is not None:
            self._fd = os.open(active.path, os.O_WRONLY | os.O_APPEND)
        self.fsync_count = 0

    @property
    def broken(self) -> bool:
        """True after a failed :meth:`write` until a :meth:`repair` succeeds."""
        return self._broken

    def write(self, records: Sequence[tuple[int, bytes]]) -> WriteResult:
        """Write ``(seq, payload)`` records in order; durable when it returns.

        Raises ``OSError`` on any I/O failure; the files may then hold part of
        the batch and the writer is broken until :meth:`repair`. Raises
        ``ChannelFenced`` (from ``check_owner``, called once the batch is
        durable) when a newer term took the channel over meanwhile: the batch
        must then be neither acknowledged nor shown to readers.
        """
        assert not self._broken, "repair() a broken writer before writing"
        try:
            result = self._write(records)
        except OSError:
            self._broken = True
            raise
        self._durable = (self._active, self._size)
        self._created = []
        return result

    def repair(self) -> RepairResult:
        """Cut the log back to the end of the last completed batch; fsync'd when it returns.

        Deletes the files the failed batch created and truncates the active
        segment to its size after the last completed batch (whatever the failed
        batch left there, whole records included, was never acknowledged).
        Raises ``OSError`` if the disk still fails; the writer stays broken and
        ``repair`` may be called again. A no-op on a writer that is not broken.
        """
        if not self._broken:
            return RepairResult(cut_bytes=0, removed_files=0)
        self.close()
        for created in reversed(self._created):
            created.path.unlink(missing_ok=True)
        removed = len(self._created)
        if removed:
            fsync_dir(self._dir)
        self._created = []
        segment, size = self._durable
        cut = 0
        if segment is not None:
            fd = os.open(segment.path, os.O_WRONLY | os.O_APPEND)
            try:
                cut = os.fstat(fd).st_size - size
                os.ftruncate(fd, size)
                if self._sync:
                    failpoint("wal.local.fsync")
                    os.fsync(fd)
                    self.fsync_count += 1
            except BaseException:
                os.close(fd)
                raise
            self._fd = fd
        self._active, self._size = segment, size
        self._broken = False
        return RepairResult(cut_bytes=cut, removed_files=removed)

    def close(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)

    def _write(self, records: Sequence[tuple[int, bytes]]) -> WriteResult:
        new_segments: list[Segment] = []
        fsyncs_before = self.fsync_count
        chunks: list[bytes] = []
        pending = 0
        for seq, payload in records:
            record = encode(seq, payload)
            over = self._size + pending + len(record) > self._segment_bytes
            if self._fd is None or (over and self._size + pending > 0):
                self._flush(chunks)
                chunks, pending = [], 0
                new_segments.append(self._roll(seq))
            chunks.append(record)
            pending += len(record)
        self._flush(chunks)
        if new_segments:
            self._fsync_dir()
        self._check_owner()
        return WriteResult(new_segments=new_segments, fsyncs=self.fsync_count - fsyncs_before)

    def _flush(self, chunks: list[bytes]) -> None:
        """Write ``chunks`` to the active segment and fsync it."""
        if not chunks:
            return
        assert self._fd is not None  # _roll opened one before the first chunk
        data = memoryview(b"".join(chunks))
        while data:
            failpoint("wal.local.write")
            written = os.write(self._fd, data)
            data = data[written:]
            self._size += written
        if self._sync:
            failpoint("wal.local.fsync")
            os.fsync(self._fd)
            self.fsync_count += 1

    def _roll(self, first_seq: int) -> Segment:
        """Seal the active segment (already fsync'd) and start a new one."""
        self.close()
        path = segment_path(self._dir, first_seq, self._term)
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL, 0o644)
        segment = Segment(first_seq=first_seq, term=self._term, path=path)
        self._created.append(segment)
        self._active, self._size = segment, 0
        return segment

    def _fsync_dir(self) -> None:
        # A record in a new file is only durable once the file's name is.
        if self._sync:
            fsync_dir(self._dir)
            self.fsync_count += 1
