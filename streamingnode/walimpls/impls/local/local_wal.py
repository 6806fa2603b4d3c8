"""``LocalWAL``: one channel's log in a directory of segment files.

Ownership and lifetime: the opener makes a ``LocalWAL`` after taking the
channel lock and recovering the tail; the WAL owns the lock, the
:class:`SegmentWriter`, its writer task and its scanners until
:meth:`LocalWAL.close`. States only move forward::

    OPEN -> CLOSING (new appends fail, queued ones drain) -> CLOSED

Group commit: ``append`` queues a request and waits for its future; the
writer task takes every queued request, writes them in one worker-thread
call ending in one fsync, then resolves them all. While that thread runs,
new requests queue up and form the next batch, so the fsync rate adapts to
the disk instead of to the number of callers.

Disk faults: a batch whose write or fsync fails with an ``OSError`` (no
space, an I/O error) is answered with ``DiskQuotaExhausted`` or ``IOFailed``
and nothing of it is acknowledged or shown to scanners; its seqs are handed
out again. The next batch first cuts the log back to where the last
acknowledged batch ended (``SegmentWriter.repair``) and then writes, so once
the disk works again the WAL goes on in place: same term, same files, no
reopen. Any other writer error fails the WAL for good (reopen the channel).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import assert_never

import structlog

from common.errors import ChannelFenced, StrataError, WALClosed, disk_error
from common.failpoints import failpoint
from common.tasks import BackgroundTasks
from streamingnode.walimpls.payloads import checked_payloads

from ...wal import DeliverPolicy, DeliverPolicyKind, MessageID
from .lock import ChannelLock
from .record import MAX_PAYLOAD
from .scanner import LocalScanner
from .segment import Segment, fsync_dir
from .writer import RepairResult, SegmentWriter


class _State(Enum):
    OPEN = "open"
    CLOSING = "closing"
    CLOSED = "closed"


@dataclass(slots=True)
class _AppendRequest:
    payloads: list[bytes]
    future: asyncio.Future[list[MessageID]]


class LocalWAL:
    """A :class:`~streamingnode.walimpls.wal.WALImpl` over local segment files.

    Built by ``LocalWALOpener.open``; call :meth:`start` on the event loop
    before use.
    """

    def __init__(
        self,
        *,
        channel: str,
        term: int,
        directory: Path,
        lock: ChannelLock,
        segments: list[Segment],
        writer: SegmentWriter,
        next_seq: int,
    ) -> None:
        self.channel = channel
        self.term = term
        self._dir = directory
        self._lock = lock
        self._segments = segments  # mutated on the loop only
        self._writer = writer
        self._next_seq = next_seq  # next seq to hand out
        self._durable_seq = next_seq - 1  # newest fsync'd seq; readers stop here
        self._state = _State.OPEN
        self._failure: BaseException | None = None
        self._queue: list[_AppendRequest] = []
        self._inflight: list[_AppendRequest] = []
        self._wakeup = asyncio.Event()
        self._waiters: set[asyncio.Future[None]] = set()
        self._scanners: weakref.WeakSet[LocalScanner] = weakref.WeakSet()
        self._writer_task: asyncio.Task[None] | None = None
        self.commit_count = 0
        self._log = structlog.get_logger().bind(component="wal-local", pchannel=channel, term=term)
        self._tasks = BackgroundTasks("wal-local", pchannel=channel, term=term)  # the writer, the close

    def start(self) -> None:
        """Start the writer task (owned here, awaited by :meth:`close`)."""
        assert self._writer_task is None
        self._writer_task = self._tasks.start(self._run_writer(), name=f"wal-local-writer-{self.channel}")

    # -- WALImpl -----------------------------------------------------------

    async def append(self, payloads: Sequence[bytes]) -> list[MessageID]:
        """See :meth:`WALImpl.append`. Waits for the fsync of its batch."""
        self._check_open()
        batch = checked_payloads(payloads, MAX_PAYLOAD, lambda size: f"payload of {size} bytes is too large")
        if not batch:
            return []
        future: asyncio.Future[list[MessageID]] = asyncio.get_running_loop().create_future()
        self._queue.append(_AppendRequest(batch, future))
        self._wakeup.set()
        return await future

    def read(self, policy: DeliverPolicy) -> LocalScanner:
        """See :meth:`WALImpl.read`."""
        self._check_open()
        start: int
        match policy.kind:
            case DeliverPolicyKind.ALL:
                start = 1  # the scanner moves up to the first remaining record
            case DeliverPolicyKind.LATEST:
                # Not _next_seq: the seqs of a batch in flight are handed out again if it fails.
                start = self._durable_seq + 1
            case DeliverPolicyKind.START_FROM:
                assert policy.message_id is not None
                start = policy.message_id.seq
            case DeliverPolicyKind.START_AFTER:
                assert policy.message_id is not None
                start = policy.message_id.seq + 1
            case _:
                assert_never(policy.kind)
        scanner = LocalScanner(self, start, self.channel)
        self._scanners.add(scanner)
        self._log.debug("scanner started", policy=policy.kind.value, start_seq=start)
        return scanner

    async def truncate(self, message_id: MessageID) -> None:
        """Delete segment files whose records are all below ``message_id``.

        The last segment is always kept. Files leave the segment list before
        they are unlinked, so new scanners never look for them; scanners
        inside such a file keep reading it through their open descriptor.
        """
        self._check_open()
        await asyncio.to_thread(self._lock.check)  # a fenced owner deletes nothing
        drop: list[Segment] = []
        while len(self._segments) > 1 and self._segments[1].first_seq <= message_id.seq:
            drop.append(self._segments.pop(0))
        if not drop:
            return
        await asyncio.to_thread(self._delete_segments, drop)
        self._log.info(
            "segments truncated",
            upto=message_id.seq,
            files=len(drop),
            first_kept=self._segments[0].first_seq,
        )

    def last_message_id(self) -> MessageID | None:
        return MessageID(self._durable_seq) if self._durable_seq > 0 else None

    def first_message_id(self) -> MessageID | None:
        first = self._segments[0].first_seq if self._segments else 1
        return MessageID(first) if 0 < first <= self._durable_seq else None

    async def close(self) -> None:
        """See :meth:`WALImpl.close`. Every caller waits for the same close."""
        if self._state is _State.OPEN:
            self._state = _State.CLOSING
            self._wakeup.set()
        # Shielded: a caller that gives up must not leave the lock held and
        # the writer half-stopped; the close task finishes on its own.
        await asyncio.shield(self._tasks.once(f"wal-local-close-{self.channel}", self._close))

    # -- for scanners and tests ---------------------------------------------

    @property
    def durable_seq(self) -> int:
        return self._durable_seq

    @property
    def segments(self) -> tuple[Segment, ...]:
        return tuple(self._segments)

    @property
    def is_closed(self) -> bool:
        return self._state is _State.CLOSED

    @property
    def fsync_count(self) -> int:
        """fsync calls made so far (segment files and the directory)."""
        return self._writer.fsync_count

    def wait_for_commit(self) -> asyncio.Future[None]:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if self._state is _State.CLOSED:
            future.set_result(None)
        else:
            self._waiters.add(future)
        return future

    # -- internals ------------------------------------------------------------

    def _check_open(self) -> None:
        if self._state is not _State.OPEN:
            raise WALClosed(f"wal of channel {self.channel} (term {self.term}) is closed")
        if isinstance(self._failure, ChannelFenced):
            raise ChannelFenced(f"wal of channel {self.channel} (term {self.term}): {self._failure}")
        if self._failure is not None:
            raise StrataError(f"wal of channel {self.channel} failed") from self._failure

    def _notify(self) -> None:
        waiters, self._waiters = self._waiters, set()
        for w in waiters:
            if not w.done():
                w.set_result(None)

    async def _run_writer(self) -> None:
        try:
            while True:
                if not self._queue:
                    if self._state is not _State.OPEN:
                        return  # drained
                    self._wakeup.clear()
                    await self._wakeup.wait()
                    continue
                self._inflight, self._queue = self._queue, []
                await self._commit(self._inflight)
                self._inflight = []
        except asyncio.CancelledError:
            self._fail_pending(WALClosed, "writer cancelled")
            raise
        except Exception as err:  # task boundary: a bug must not leave appends hanging
            self._failure = err
            self._log.exception("writer failed")
            self._fail_pending(StrataError, "writer failed", err)

    async def _commit(self, batch: list[_AppendRequest]) -> None:
        """Write one batch; runs in the writer task, never in a caller's.

        Callers that were cancelled before their seqs were handed out are
        dropped; later cancellations do not stop the write (the records may
        be in the log, as the interface allows).
        """
        live = [r for r in batch if not r.future.done()]
        if not live:
            return
        if self._failure is not None:
            kind = ChannelFenced if isinstance(self._failure, ChannelFenced) else StrataError
            self._fail(live, kind, f"failed earlier: {self._failure}", self._failure)
            return
        if self._writer.broken and not await self._repair(live):
            return
        records: list[tuple[int, bytes]] = []
        ids: list[list[MessageID]] = []
        seq = self._next_seq
        for req in live:
            req_ids = []
            for payload in req.payloads:
                records.append((seq, payload))
                req_ids.append(MessageID(seq))
                seq += 1
            ids.append(req_ids)
        self._next_seq = seq
        try:
            result = await asyncio.to_thread(self._writer.write, records)
        except ChannelFenced as err:
            # A newer term owns the channel: this batch is on disk where no reader looks,
            # and it must not be acknowledged or published. The WAL stays fenced.
            self._failure = err
            self._log.warning("wal fenced", error=str(err), records=len(records))
            self._fail(live, ChannelFenced, str(err), err)
            return
        except OSError as err:
            # The files may hold part of the batch: the next batch repairs before it writes.
            self._next_seq = self._durable_seq + 1
            self._log.error("append failed", error=str(err), errno=err.errno, records=len(records))
            self._fail_disk(live, err)
            return
        except Exception as err:
            # A bug, not the disk: no further write may land after what the file may hold.
            # Reopening cuts the torn part off.
            self._failure = err
            self._log.error("append failed", error=repr(err), records=len(records))
            self._fail(live, StrataError, "append failed", err)
            return
        self._segments.extend(result.new_segments)
        self._durable_seq = seq - 1
        self.commit_count += 1
        for segment in result.new_segments:
            self._log.info("segment created", first_seq=segment.first_seq)
        self._notify()
        for req, req_ids in zip(live, ids, strict=True):
            if not req.future.done():
                req.future.set_result(req_ids)

    async def _repair(self, live: list[_AppendRequest]) -> bool:
        """Cut back what a failed batch left; False (``live`` failed) if that fails too."""
        try:
            result = await asyncio.to_thread(self._repair_blocking)
        except ChannelFenced as err:
            self._failure = err
            self._log.warning("wal fenced", error=str(err))
            self._fail(live, ChannelFenced, str(err), err)
            return False
        except OSError as err:
            self._log.warning("wal repair failed", error=str(err), errno=err.errno)
            self._fail_disk(live, err)
            return False
        self._log.info("wal repaired", cut_bytes=result.cut_bytes, removed_files=result.removed_files,
                       next_seq=self._next_seq)
        return True

    def _repair_blocking(self) -> RepairResult:
        # A newer owner may have recovered this file meanwhile: then it is no longer ours to cut.
        self._lock.check()
        return self._writer.repair()

    def _fail_disk(self, requests: list[_AppendRequest], err: OSError) -> None:
        for req in requests:
            if not req.future.done():
                req.future.set_exception(disk_error(err, f"wal of channel {self.channel} (term {self.term})"))

    def _fail(
        self,
        requests: list[_AppendRequest],
        kind: type[StrataError],
        what: str,
        cause: BaseException | None = None,
    ) -> None:
        for req in requests:
            if not req.future.done():
                error = kind(f"wal of channel {self.channel} (term {self.term}): {what}")
                error.__cause__ = cause
                req.future.set_exception(error)

    def _fail_pending(
        self, kind: type[StrataError], what: str, cause: BaseException | None = None
    ) -> None:
        self._fail(self._inflight + self._queue, kind, what, cause)
        self._inflight, self._queue = [], []

    async def _close(self) -> None:
        assert self._writer_task is not None
        try:
            await self._writer_task
        finally:
            self._state = _State.CLOSED
            self._notify()
            for scanner in list(self._scanners):
                await scanner.close()
            await asyncio.to_thread(self._release)
            self._log.info("wal closed", last_seq=self._durable_seq)

    def _release(self) -> None:
        if self._writer.broken and self._failure is None:
            # Leave no part of a failed batch behind for the next owner if the disk lets us.
            try:
                self._repair_blocking()
            except (OSError, ChannelFenced) as err:
                self._log.warning("wal not repaired before close", error=str(err))
        try:
            self._writer.close()
        finally:
            self._lock.release()

    def _delete_segments(self, segments: list[Segment]) -> None:
        for i, segment in enumerate(segments):  # oldest first: a crash leaves a suffix of the log
            if i:
                failpoint("wal.truncate.between_files")
            with contextlib.suppress(FileNotFoundError):
                os.unlink(segment.path)
        fsync_dir(self._dir)
