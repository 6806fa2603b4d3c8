"""The blocking half of group commit: write one batch of records, then fsync.

``SegmentWriter`` owns the descriptor of the active (last) segment. It is
driven by exactly one task of :class:`LocalWAL`, one batch at a time, in a
worker thread; it never touches the event loop or the WAL's segment list,
it reports the segments it created instead.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .record import encode
from .segment import Segment, fsync_dir, segment_path


@dataclass(frozen=True, slots=True)
class WriteResult:
    new_segments: list[Segment]
    fsyncs: int


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
        self._size = active_size
        if active is not None:
            self._fd = os.open(active.path, os.O_WRONLY | os.O_APPEND)
        self.fsync_count = 0

    def write(self, records: Sequence[tuple[int, bytes]]) -> WriteResult:
        """Write ``(seq, payload)`` records in order; durable when it returns.

        Raises ``OSError`` on any I/O failure; the file may then hold part of
        the batch, so the caller must stop writing (recovery cuts it off).
        Raises ``ChannelFenced`` (from ``check_owner``, called once the batch
        is durable) when a newer term took the channel over meanwhile: the
        batch must then be neither acknowledged nor shown to readers.
        """
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

    def close(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)

    def _flush(self, chunks: list[bytes]) -> None:
        """Write ``chunks`` to the active segment and fsync it."""
        if not chunks:
            return
        assert self._fd is not None  # _roll opened one before the first chunk
        data = memoryview(b"".join(chunks))
        while data:
            written = os.write(self._fd, data)
            data = data[written:]
            self._size += written
        if self._sync:
            os.fsync(self._fd)
            self.fsync_count += 1

    def _roll(self, first_seq: int) -> Segment:
        """Seal the active segment (already fsync'd) and start a new one."""
        self.close()
        path = segment_path(self._dir, first_seq, self._term)
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL, 0o644)
        self._size = 0
        return Segment(first_seq=first_seq, term=self._term, path=path)

    def _fsync_dir(self) -> None:
        # A record in a new file is only durable once the file's name is.
        if self._sync:
            fsync_dir(self._dir)
            self.fsync_count += 1
