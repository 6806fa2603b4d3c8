"""``LocalWALOpener``: opens channels as directories under one root.

``open`` takes the channel for its term (``lock.py``: possibly over an old
owner that is still running, which is then fenced), deletes the files a newer
term superseded, recovers the last live segment (cutting a torn tail off),
starts a segment file of its own term, and hands the resulting
:class:`LocalWAL` to the caller. The opener keeps the WALs it opened so that
its own ``close`` can close the ones still open.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

import structlog

from common.errors import ChannelFenced, InvalidArgument, WALClosed

from .local_wal import LocalWAL
from .lock import ChannelLock, opening
from .segment import Segment, fsync_dir, recover_tail, scan_segments, segment_path
from .writer import SegmentWriter

DEFAULT_SEGMENT_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True, slots=True, kw_only=True)
class LocalWALOptions:
    """Options of the ``local`` backend.

    Attributes:
        root_dir: holds one directory per channel.
        segment_bytes: a segment file rolls once the next record would take
            it past this size.
        sync: fsync before acknowledging appends; turn off only for tests
            that do not care about durability.
    """

    root_dir: Path
    segment_bytes: int = DEFAULT_SEGMENT_BYTES
    sync: bool = True

    def validate(self) -> None:
        if self.segment_bytes <= 0:
            raise InvalidArgument(f"segment_bytes must be positive, got {self.segment_bytes}")


def _check_channel(channel: str) -> None:
    if not channel or channel in (".", "..") or "/" in channel or "\0" in channel:
        raise InvalidArgument(f"invalid channel name {channel!r}")


@dataclass(frozen=True, slots=True)
class _Recovered:
    directory: Path
    lock: ChannelLock
    segments: list[Segment]
    writer: SegmentWriter
    next_seq: int

    def abandon(self) -> None:
        try:
            self.writer.close()
        finally:
            self.lock.release()


class LocalWALOpener:
    """A :class:`~streamingnode.walimpls.wal.WALOpener` for the ``local`` backend."""

    def __init__(self, options: LocalWALOptions) -> None:
        options.validate()
        self._options = options
        self._wals: list[LocalWAL] = []
        self._closed = False
        self._log = structlog.get_logger().bind(component="wal-local")

    async def open(self, channel: str, term: int) -> LocalWAL:
        """See :meth:`WALOpener.open`. Recovery runs in a worker thread."""
        if self._closed:
            raise WALClosed("local wal opener is closed")
        _check_channel(channel)
        if term < 0:
            raise InvalidArgument(f"term must not be negative, got {term}")
        for wal in self._wals:
            if wal.channel == channel and not wal.is_closed:
                raise ChannelFenced(f"channel {channel} is owned by term {wal.term}, cannot open with term {term}")
        loop = asyncio.get_running_loop()
        recovery = loop.run_in_executor(None, self._recover, channel, term)
        try:
            # Shielded: if the caller leaves, the thread still finishes and
            # must give the lock back instead of holding it until exit.
            rec = await asyncio.shield(recovery)
        except asyncio.CancelledError:
            recovery.add_done_callback(_abandon)
            raise
        wal = LocalWAL(
            channel=channel,
            term=term,
            directory=rec.directory,
            lock=rec.lock,
            segments=rec.segments,
            writer=rec.writer,
            next_seq=rec.next_seq,
        )
        self._wals = [w for w in self._wals if not w.is_closed]
        self._wals.append(wal)
        return wal

    async def close(self) -> None:
        """Close every WAL still open; later ``open`` calls fail. Idempotent."""
        self._closed = True
        wals, self._wals = self._wals, []
        async with asyncio.TaskGroup() as tg:
            for wal in wals:
                tg.create_task(wal.close())

    def _recover(self, channel: str, term: int) -> _Recovered:
        root = Path(self._options.root_dir)
        directory = root / channel
        if not directory.is_dir():
            directory.mkdir(parents=True, exist_ok=True)
            fsync_dir(root)
        log = self._log.bind(pchannel=channel, term=term)
        with opening(directory, channel):
            lock = ChannelLock.acquire(directory, channel, term)
            try:
                return self._recover_locked(directory, lock, log)
            except BaseException:
                lock.release()
                raise

    def _recover_locked(self, directory: Path, lock: ChannelLock, log: structlog.BoundLogger) -> _Recovered:
        term = lock.term
        segments, superseded = scan_segments(directory)
        for seg in superseded:  # written by fenced owners after they lost the channel
            seg.path.unlink(missing_ok=True)
            log.warning("superseded segment deleted", segment=seg.path.name)
        next_seq, size = 1, 0
        if segments:
            tail = recover_tail(segments[-1])
            next_seq, size = tail.next_seq, tail.size
            if tail.torn_bytes:
                log.warning(
                    "torn tail cut",
                    segment=segments[-1].path.name,
                    kept_bytes=tail.size,
                    cut_bytes=tail.torn_bytes,
                )
        if not segments or segments[-1].term != term:
            # Our own file from the next seq on: it hides anything an older owner writes later.
            path = segment_path(directory, next_seq, term)
            with open(path, "xb"):
                pass
            segments.append(Segment(first_seq=next_seq, term=term, path=path))
            size = 0
        fsync_dir(directory)
        writer = SegmentWriter(
            directory,
            segments[-1],
            size,
            self._options.segment_bytes,
            self._options.sync,
            term=term,
            check_owner=lock.check,
        )
        log.info(
            "wal opened",
            segments=len(segments),
            next_seq=next_seq,
            previous_term=lock.previous_term,
            took_over=not lock.holds_flock,
        )
        return _Recovered(directory, lock, segments, writer, next_seq)


def _abandon(fut: asyncio.Future[_Recovered]) -> None:
    if not fut.cancelled() and fut.exception() is None:
        fut.result().abandon()


def local_opener(
    root_dir: str | Path,
    segment_bytes: int = DEFAULT_SEGMENT_BYTES,
    sync: bool = True,
) -> LocalWALOpener:
    """The registry factory of the ``local`` backend."""
    return LocalWALOpener(
        LocalWALOptions(root_dir=Path(root_dir), segment_bytes=segment_bytes, sync=sync)
    )
