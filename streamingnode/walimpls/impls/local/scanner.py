"""Readers of the ``local`` WAL: catch up from the files, then tail.

A :class:`LocalScanner` reads batches of durable records from the segment
files in a worker thread (so the loop stays responsive), then waits on the
WAL's commit notification for more. It only reads records up to the WAL's
durable seq, so it never sees a record that is not fsync'd yet. It keeps its
own descriptor of the segment it is in, so truncate deleting that file does
not disturb it (POSIX keeps unlinked open files readable); when its start
has been truncated away it starts at the first remaining segment.
"""

from __future__ import annotations

import asyncio
import os
from bisect import bisect_right
from collections import deque
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Protocol

import structlog

from ...wal import LogEntry, MessageID
from .record import HEADER, HEADER_SIZE, Decoded, decode_at
from .segment import Segment, corruption

_READ_CHUNK = 256 * 1024  # bytes per pread
_BATCH_BYTES = 1024 * 1024  # payload bytes handed back per thread hop


class LogSource(Protocol):
    """What a scanner needs from its WAL; read on the event loop only."""

    @property
    def durable_seq(self) -> int:
        """Seq of the newest fsync'd record (0 if none)."""
        ...

    @property
    def segments(self) -> tuple[Segment, ...]:
        """The segments in log order, consistent with ``durable_seq``."""
        ...

    @property
    def is_closed(self) -> bool: ...

    def wait_for_commit(self) -> asyncio.Future[None]:
        """A future resolved at the next commit or when the WAL closes."""
        ...


class _Cursor:
    """A position in the segment files; used by one worker thread at a time."""

    def __init__(self, next_seq: int) -> None:
        self.next_seq = next_seq  # the next record to deliver
        self.segment: Segment | None = None
        self.fd: int | None = None
        self.offset = 0  # file offset of the record carrying pos_seq
        self.pos_seq = 0
        self._buf = b""
        self._buf_off = 0
        self.missing: Path | None = None  # a file of the snapshot that was gone
        self._end_seq: int | None = None  # where the current file ends (next file's first seq)

    def read(self, segments: tuple[Segment, ...], upto: int) -> list[LogEntry]:
        """Records from ``next_seq`` to at most ``upto``, about ``_BATCH_BYTES`` of them."""
        # Bytes buffered by an earlier call may predate records made durable
        # since, so never reuse them.
        self._buf = b""
        self.missing = None
        out: list[LogEntry] = []
        budget = _BATCH_BYTES
        while self.next_seq <= upto and budget > 0:
            if self.fd is None and not self._locate(segments):
                break
            # A file ends where the next live one starts; bytes past that (a fenced
            # owner's late writes) are never read.
            header = b"" if self.pos_seq == self._end(segments) else self._bytes(HEADER_SIZE)
            if not header:
                if not self._next_segment(segments, upto):
                    break
                continue
            seg = self.segment
            assert seg is not None
            if len(header) < HEADER_SIZE:
                raise corruption(f"{seg.path}: short header at offset {self.offset}")
            length, _, seq = HEADER.unpack(header)
            if seq != self.pos_seq:
                raise corruption(
                    f"{seg.path}: seq {seq} at offset {self.offset}, expected {self.pos_seq}"
                )
            size = HEADER_SIZE + length
            if seq >= self.next_seq:
                body = self._bytes(size)
                status, rec = decode_at(body, 0)
                if status is not Decoded.OK or rec is None:
                    raise corruption(f"{seg.path}: {status.value} record at offset {self.offset}")
                out.append(LogEntry(MessageID(seq), bytes(rec.payload)))
                budget -= size
                self.next_seq = seq + 1
            self.offset += size
            self.pos_seq += 1
        return out

    def close(self) -> None:
        if self.fd is not None:
            fd, self.fd = self.fd, None
            os.close(fd)
        self._buf = b""

    def _locate(self, segments: tuple[Segment, ...]) -> bool:
        """Open the segment holding ``next_seq``; False if the snapshot is stale."""
        if not segments:
            raise corruption(f"no segment file holds durable seq {self.next_seq}")
        i = bisect_right([s.first_seq for s in segments], self.next_seq) - 1
        if i < 0:  # truncated away: start at the first remaining record
            self.next_seq, i = segments[0].first_seq, 0
        return self._open(segments[i])

    def _end(self, segments: tuple[Segment, ...]) -> int | None:
        """The first seq of the live file after the current one, if there is one yet.

        Cached once known: a later file, once it exists, never changes its first seq.
        """
        if self._end_seq is None and segments and segments[-1] != self.segment:
            seg = self.segment
            assert seg is not None
            i = bisect_right([s.first_seq for s in segments], seg.first_seq)
            if i < len(segments):
                self._end_seq = segments[i].first_seq
        return self._end_seq

    def _next_segment(self, segments: tuple[Segment, ...], upto: int) -> bool:
        """At the end of a segment file: move on to the one after it."""
        seg = self.segment
        assert seg is not None
        if seg not in segments:
            # Truncated while we read it (through our descriptor); the files
            # after it may be gone too: go on at the first remaining record.
            self.close()
            return self._locate(segments)
        following = [s for s in segments if s.first_seq > seg.first_seq]
        if not following:
            raise corruption(f"{seg.path}: ends before seq {self.pos_seq}, seq {upto} is durable")
        if following[0].first_seq != self.pos_seq:
            raise corruption(
                f"{seg.path}: ends before seq {self.pos_seq}, next segment starts at "
                f"{following[0].first_seq}"
            )
        self.close()
        return self._open(following[0])

    def _open(self, segment: Segment) -> bool:
        self.close()
        try:
            self.fd = os.open(segment.path, os.O_RDONLY)
        except FileNotFoundError:
            self.missing = segment.path
            return False
        self.segment, self.offset, self.pos_seq = segment, 0, segment.first_seq
        self._end_seq = None
        return True

    def _bytes(self, n: int) -> memoryview:
        """``n`` bytes at ``offset`` (fewer at the end of the file)."""
        assert self.fd is not None
        start = self.offset - self._buf_off
        if start < 0 or start + n > len(self._buf) or not self._buf:
            self._buf = os.pread(self.fd, max(n, _READ_CHUNK), self.offset)
            self._buf_off, start = self.offset, 0
        return memoryview(self._buf)[start : start + n]


class LocalScanner:
    """A :class:`~streamingnode.walimpls.wal.Scanner` over one local WAL.

    Made by ``LocalWAL.read``; consumed by one task at a time. A cancelled
    ``__anext__`` loses nothing: the batch being read is kept for the next
    call.
    """

    def __init__(self, source: LogSource, start_seq: int, channel: str) -> None:
        self._source = source
        self._cursor = _Cursor(start_seq)
        self._buffer: deque[LogEntry] = deque()
        self._pending: asyncio.Future[list[LogEntry]] | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._closed = False
        self._log = structlog.get_logger().bind(component="wal-local", pchannel=channel)

    def __aiter__(self) -> AsyncIterator[LogEntry]:
        return self

    async def __anext__(self) -> LogEntry:
        while True:
            if self._buffer:
                return self._buffer.popleft()
            if self._closed or self._source.is_closed:
                self._close_now()
                raise StopAsyncIteration
            if self._pending is None:
                upto = self._source.durable_seq
                if self._cursor.next_seq > upto:
                    await self._wait()
                    continue
                segments = self._source.segments
                loop = asyncio.get_running_loop()
                self._pending = loop.run_in_executor(None, self._cursor.read, segments, upto)
            # Shielded: the read goes on in its thread if we are cancelled and
            # the next call collects it, so the cursor is never used twice.
            try:
                entries = await asyncio.shield(self._pending)
            except asyncio.CancelledError:
                raise
            except Exception:
                self._pending = None
                self._close_now()
                raise
            self._pending = None
            if self._closed:
                raise StopAsyncIteration
            self._buffer.extend(entries)
            if not entries:
                try:
                    self._check_stale()
                except BaseException:
                    self._close_now()
                    raise

    async def close(self) -> None:
        """End iteration; releases the file descriptor once no read is running."""
        self._close_now()

    def _close_now(self) -> None:
        already, self._closed = self._closed, True
        self._buffer.clear()
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)
        if self._pending is not None and not self._pending.done():
            if not already:
                self._pending.add_done_callback(self._close_after_read)
        else:
            self._pending = None
            self._cursor.close()

    def _close_after_read(self, fut: asyncio.Future[list[LogEntry]]) -> None:
        if not fut.cancelled():
            fut.exception()  # retrieved: nobody will read this batch
        self._cursor.close()

    async def _wait(self) -> None:
        self._waiter = self._source.wait_for_commit()
        try:
            await self._waiter
        finally:
            self._waiter = None

    def _check_stale(self) -> None:
        # A file of the snapshot was gone. Fine if truncate removed it: it is
        # gone from the list as well and the next snapshot skips it.
        missing = self._cursor.missing
        if missing is not None and missing in {s.path for s in self._source.segments}:
            self._log.error("segment file missing", path=str(missing))
            raise corruption(f"segment file {missing} is missing")
