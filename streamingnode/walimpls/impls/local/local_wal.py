"""``LocalWAL``: one channel's log in a directory of segment files.

Ownership and lifetime: the opener makes a ``LocalWAL`` after taking the
channel lock and recovering the tail; the WAL owns the lock, the
:class:`SegmentWriter` and its scanners until :meth:`LocalWAL.close`. States
only move forward::

    OPEN -> CLOSING (new appends fail, waiting ones drain) -> CLOSED

Group commit, in the callers' tasks (no writer task, see ``turns.py``): the
caller of ``append`` that finds no commit running *leads*: it takes every
queued request and writes them in one worker-thread call ending in one fsync,
answers them all, then hands the lead to the first caller that queued
meanwhile, which commits everything queued by then as the next batch. With one
appender (the WAL's own writer) no commit is ever running when it calls:
``append`` writes its batch directly, without a hand-off to another task.

Cancellation: a caller cancelled while its request waits drops it (no seq was
handed out, nothing is written). A leader cancelled while its batch is in the
worker thread stays the leader until the thread returns, answers the batch
(the other callers in it get their ids or errors), and then raises
``CancelledError``: the write is never abandoned half-way, and the next
append sees the state it left.

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
import contextvars
import os
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import TypeVar, assert_never

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
from .turns import Request, Turns
from .writer import RepairResult, SegmentWriter

T = TypeVar("T")


class _State(Enum):
    OPEN = "open"
    CLOSING = "closing"
    CLOSED = "closed"


@dataclass(slots=True)
class _Deferred:
    """Whether the leader's task was cancelled while a worker thread ran."""

    cancelled: bool = False


class LocalWAL:
    """A :class:`~streamingnode.walimpls.wal.WALImpl` over local segment files.

    Built by ``LocalWALOpener.open``; ready to use, it starts no task.
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
        self._writer = writer  # used by the leading caller only (see turns.py)
        self._next_seq = next_seq  # next seq to hand out
        self._durable_seq = next_seq - 1  # newest fsync'd seq; readers stop here
        self._state = _State.OPEN
        self._failure: BaseException | None = None
        self._turns = Turns()  # the queued appends and who commits next
        self._waiters: set[asyncio.Future[None]] = set()
        self._scanners: weakref.WeakSet[LocalScanner] = weakref.WeakSet()
        self.commit_count = 0
        self._log = structlog.get_logger().bind(component="wal-local", pchannel=channel, term=term)
        self._tasks = BackgroundTasks("wal-local", pchannel=channel, term=term)  # the close

    # -- WALImpl -----------------------------------------------------------

    async def append(self, payloads: Sequence[bytes]) -> list[MessageID]:
        """See :meth:`WALImpl.append`. Waits for the fsync of its batch."""
        self._check_open()
        batch = checked_payloads(payloads, MAX_PAYLOAD, lambda size: f"payload of {size} bytes is too large")
        if not batch:
            return []
        request = Request(batch)
        if await self._turns.enter(request):
            committed = self._turns.take()
            try:
                await self._commit_batch(committed)
            finally:
                self._turns.leave(committed)
        if request.error is not None:
            raise request.error
        assert request.ids is not None
        return request.ids

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
        # Shielded: a caller that gives up must not leave the lock held and
        # the log half-closed; the close task finishes on its own.
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

    async def _commit_batch(self, batch: list[Request]) -> None:
        """Commit ``batch``; runs in the leading caller's task.

        Runs to its end even if that task is cancelled meanwhile (the worker
        thread cannot be stopped, and the batch must be answered and the state
        updated before the next leader writes); the cancellation is raised once
        the batch is answered.
        """
        deferred = _Deferred()
        try:
            await self._commit(batch, deferred)
        except Exception as err:  # a bug, not the disk: no further write may land after it
            self._failure = err
            self._log.exception("writer failed")
            self._fail(batch, StrataError, "writer failed", err)
        finally:
            self._fail(batch, StrataError, "writer stopped")  # only if a bug left some unanswered
        if deferred.cancelled:
            raise asyncio.CancelledError

    async def _in_thread(self, fn: Callable[[], T], deferred: _Deferred) -> T:
        """``fn()`` in a worker thread; a cancellation waits for it and is noted in ``deferred``."""
        done = asyncio.get_running_loop().run_in_executor(None, contextvars.copy_context().run, fn)
        while True:
            try:
                return await asyncio.shield(done)  # shielding a future starts no task
            except asyncio.CancelledError:
                if done.cancelled():  # the executor dropped the call before it ran (shut down)
                    deferred.cancelled = True
                    raise StrataError(f"wal of channel {self.channel}: worker thread call dropped") from None
                deferred.cancelled = True

    async def _commit(self, batch: list[Request], deferred: _Deferred) -> None:
        """Write one batch and answer its requests; runs in the leader's task."""
        if not batch:
            return
        if self._failure is not None:
            kind = ChannelFenced if isinstance(self._failure, ChannelFenced) else StrataError
            self._fail(batch, kind, f"failed earlier: {self._failure}", self._failure)
            return
        if self._writer.broken and not await self._repair(batch, deferred):
            return
        records: list[tuple[int, bytes]] = []
        ids: list[list[MessageID]] = []
        seq = self._next_seq
        for req in batch:
            req_ids = []
            for payload in req.payloads:
                records.append((seq, payload))
                req_ids.append(MessageID(seq))
                seq += 1
            ids.append(req_ids)
        self._next_seq = seq
        try:
            result = await self._in_thread(lambda: self._writer.write(records), deferred)
        except ChannelFenced as err:
            # A newer term owns the channel: this batch is on disk where no reader looks,
            # and it must not be acknowledged or published. The WAL stays fenced.
            self._failure = err
            self._log.warning("wal fenced", error=str(err), records=len(records))
            self._fail(batch, ChannelFenced, str(err), err)
            return
        except OSError as err:
            # The files may hold part of the batch: the next batch repairs before it writes.
            self._next_seq = self._durable_seq + 1
            self._log.error("append failed", error=str(err), errno=err.errno, records=len(records))
            self._fail_disk(batch, err)
            return
        except Exception as err:
            # A bug, not the disk: no further write may land after what the file may hold.
            # Reopening cuts the torn part off.
            self._failure = err
            self._log.error("append failed", error=repr(err), records=len(records))
            self._fail(batch, StrataError, "append failed", err)
            return
        self._segments.extend(result.new_segments)
        self._durable_seq = seq - 1
        self.commit_count += 1
        for segment in result.new_segments:
            self._log.info("segment created", first_seq=segment.first_seq)
        self._notify()
        for req, req_ids in zip(batch, ids, strict=True):
            req.ids = req_ids

    async def _repair(self, batch: list[Request], deferred: _Deferred) -> bool:
        """Cut back what a failed batch left; False (``batch`` failed) if that fails too."""
        try:
            result = await self._in_thread(self._repair_blocking, deferred)
        except ChannelFenced as err:
            self._failure = err
            self._log.warning("wal fenced", error=str(err))
            self._fail(batch, ChannelFenced, str(err), err)
            return False
        except OSError as err:
            self._log.warning("wal repair failed", error=str(err), errno=err.errno)
            self._fail_disk(batch, err)
            return False
        self._log.info("wal repaired", cut_bytes=result.cut_bytes, removed_files=result.removed_files,
                       next_seq=self._next_seq)
        return True

    def _repair_blocking(self) -> RepairResult:
        # A newer owner may have recovered this file meanwhile: then it is no longer ours to cut.
        self._lock.check()
        return self._writer.repair()

    def _fail_disk(self, requests: list[Request], err: OSError) -> None:
        for req in requests:
            if not req.answered:
                req.error = disk_error(err, f"wal of channel {self.channel} (term {self.term})")

    def _fail(
        self,
        requests: list[Request],
        kind: type[StrataError],
        what: str,
        cause: BaseException | None = None,
    ) -> None:
        for req in requests:
            if not req.answered:
                error = kind(f"wal of channel {self.channel} (term {self.term}): {what}")
                error.__cause__ = cause
                req.error = error

    async def _close(self) -> None:
        # The appends waiting when the close began are committed first, and a
        # write in its worker thread finishes; then the close leads for good.
        leftovers = await self._turns.hold()
        try:
            self._fail(leftovers, WALClosed, "closed before the append was written")
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
