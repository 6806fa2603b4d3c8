"""``NatsWAL``: one channel's log in a JetStream stream, owned by one term.

Ownership and lifetime: ``NatsWALOpener.open`` writes this owner's term
marker and hands over the owner-probe subscription; the WAL owns it, its
:class:`Publisher`, one writer task and its scanners until :meth:`close`.
The NATS connection belongs to the opener. States only move forward::

    OPEN -> CLOSING (new appends fail, queued ones drain) -> CLOSED

Group commit: ``append`` queues a request; the writer task takes every queued
request and publishes their records as one frame (``layout.py``; several
frames, one after the other, if they pass ``max_payload``), expecting the
stream's last sequence to be this owner's previous message. The chain starts
at this owner's own marker, so once any other writer got a message in -- a
newer owner's marker --, every frame of this owner is refused by the server:
that is the fence, kept by JetStream, not by this process.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import assert_never

import structlog
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.errors import Error as NatsError
from nats.js.api import Header
from nats.js.errors import NotFoundError
from nats.js.manager import JetStreamManager

from common.errors import ChannelFenced, ErrorCode, StrataError, WALClosed
from common.tasks import BackgroundTasks
from streamingnode.walimpls.payloads import checked_payloads

from ...wal import DeliverPolicy, DeliverPolicyKind, MessageID
from .frames import FrameIndex
from .layout import FIRST_ID, RECORDS, ChannelNames, Frame, TermMarker, encode_frame, frame_size
from .natsutil import settled
from .publish import Publisher, PubStatus
from .scanner import NatsScanner, ScanStart

_HEADER_ROOM = 512  # bytes of a frame's headers (expected sequence, message id, numbering)
_RETRY_MIN, _RETRY_MAX = 0.05, 1.0
_ACK_TIMEOUT_GROWTH = 64  # an attempt waits at most this many times ack_timeout


class _State(Enum):
    OPEN = "open"
    CLOSING = "closing"
    CLOSED = "closed"


@dataclass(slots=True)
class _AppendRequest:
    payloads: list[bytes]
    future: asyncio.Future[list[MessageID]]


@dataclass(frozen=True, slots=True, kw_only=True)
class OwnerState:
    """What the opener learned and wrote while taking the channel."""

    owner: str  # this open's id, also in its marker
    marker_seq: int  # stream sequence of this owner's marker
    first: Frame | None  # the first frame still in the stream
    last: Frame | None  # the newest frame


class NatsWAL:
    """A :class:`~streamingnode.walimpls.wal.WALImpl` over one JetStream stream.

    Built by ``NatsWALOpener.open``; call :meth:`start` on the event loop before use.
    """

    def __init__(
        self,
        *,
        channel: str,
        term: int,
        nc: NATS,
        jsm: JetStreamManager,
        names: ChannelNames,
        state: OwnerState,
        responder: Subscription,
        ack_timeout: float,
        append_timeout: float,
    ) -> None:
        self.channel = channel
        self.term = term
        self._nc = nc
        self._jsm = jsm
        self._names = names
        self._owner = state.owner
        self._frames = FrameIndex(first=state.first, last=state.last)
        self._last_seq = state.marker_seq  # stream seq of this owner's newest stored message
        self._next_id = self._frames.last_id + 1  # id of the next record queued
        self._responder: Subscription | None = responder
        self._ack_timeout = ack_timeout
        self._append_timeout = append_timeout
        self._max_frame = max(nc.max_payload - _HEADER_ROOM, 1)
        self._publisher = Publisher(nc, names.data_subject, channel)
        self._state = _State.OPEN
        self._failure: StrataError | None = None
        self._queue: list[_AppendRequest] = []
        self._inflight: list[_AppendRequest] = []
        self._wakeup = asyncio.Event()
        self._scanners: weakref.WeakSet[NatsScanner] = weakref.WeakSet()
        self._scanner_ids = itertools.count()
        self._writer_task: asyncio.Task[None] | None = None
        self.commit_count = 0  # frames stored
        self.reconciled_count = 0  # frames a retry found stored by an attempt whose ack was lost
        self._log = structlog.get_logger().bind(component="wal-nats", pchannel=channel, term=term)
        self._tasks = BackgroundTasks("wal-nats", pchannel=channel, term=term)  # the writer, the close

    async def start(self) -> None:
        """Subscribe the publisher's reply inbox and start the writer task (awaited by :meth:`close`)."""
        assert self._writer_task is None
        await self._publisher.start()
        self._writer_task = self._tasks.start(self._run_writer(), name=f"wal-nats-writer-{self.channel}")

    # -- WALImpl -----------------------------------------------------------

    async def append(self, payloads: Sequence[bytes]) -> list[MessageID]:
        """See :meth:`WALImpl.append`. Waits for JetStream's acks of its frames."""
        self._check_open()
        batch = checked_payloads(
            payloads,
            self._max_frame,
            lambda size: f"payload of {size} bytes is larger than the nats server allows ({self._max_frame} "
            "bytes after headers): raise max_payload in the nats-server configuration",
        )
        if not batch:
            return []
        future: asyncio.Future[list[MessageID]] = asyncio.get_running_loop().create_future()
        self._queue.append(_AppendRequest(batch, future))
        self._wakeup.set()
        return await future

    def read(self, policy: DeliverPolicy) -> NatsScanner:
        """See :meth:`WALImpl.read`. A start far behind the tail is looked up by the scanner's first ``__anext__``."""
        self._check_open()
        start: ScanStart
        match policy.kind:
            case DeliverPolicyKind.ALL:
                start = ScanStart(seq=1)  # the consumer starts at the first message still stored
            case DeliverPolicyKind.LATEST:
                start = ScanStart(seq=self._last_seq + 1, skip_below=self._next_id)
            case DeliverPolicyKind.START_FROM:
                assert policy.message_id is not None
                start = self._start_at(policy.message_id.seq)
            case DeliverPolicyKind.START_AFTER:
                assert policy.message_id is not None
                start = self._start_at(policy.message_id.seq + 1)
            case _:
                assert_never(policy.kind)
        scanner = NatsScanner(
            nc=self._nc,
            jsm=self._jsm,
            names=self._names,
            start=start,
            max_bytes=max(16 << 20, 2 * self._nc.max_payload),
            name=f"{self._owner}-{next(self._scanner_ids)}",
            wal_closed=lambda: self._state is _State.CLOSED,
        )
        self._scanners.add(scanner)
        self._log.debug("scanner started", policy=policy.kind.value, start_seq=start.seq, skip_below=start.skip_below)
        return scanner

    async def truncate(self, message_id: MessageID) -> None:
        """Purge the frames wholly below ``message_id`` (the frame holding it stays, and markers stay).

        A fenced owner purges nothing: the newest marker is checked first.
        """
        self._check_open()
        first = self._frames.first
        upto = min(message_id.seq, self._frames.last_id)
        if first is None or upto <= first.last_id:
            return
        try:
            newer = await self._newer_owner()
            if newer is not None:
                raise self._fenced_error(newer)
            frame = await self._frames.locate(self._jsm, self._names, upto)
            if frame is None or frame.seq <= first.seq:
                return
            await settled(self._jsm.purge_stream(self._names.stream, seq=frame.seq, subject=self._names.data_subject))
        except NatsError as err:
            raise StrataError(f"truncate of wal {self.channel} failed: {err}", ErrorCode.UNAVAILABLE) from err
        self._frames.truncated(frame)
        self._log.info("wal truncated", upto=upto, first_id=frame.first_id, first_seq=frame.seq)

    def last_message_id(self) -> MessageID | None:
        last = self._frames.last_id
        return MessageID(last) if last else None

    def first_message_id(self) -> MessageID | None:
        first = self._frames.first
        return MessageID(first.first_id) if first is not None else None

    async def close(self) -> None:
        """See :meth:`WALImpl.close`. Every caller waits for the same close."""
        if self._state is _State.OPEN:
            self._state = _State.CLOSING
            self._wakeup.set()
        # Shielded: a caller that gives up must not leave the writer half-stopped
        # and the owner probe answering; the close task finishes on its own.
        await asyncio.shield(self._tasks.once(f"wal-nats-close-{self.channel}", self._close))

    @property
    def is_closed(self) -> bool:
        return self._state is _State.CLOSED

    @property
    def owner(self) -> str:
        return self._owner

    # -- internals ------------------------------------------------------------

    def _start_at(self, message_id: int) -> ScanStart:
        """Where a scanner delivering ids from ``message_id`` on starts; looked up later if not known here."""
        first = self._frames.first
        if message_id > self._frames.last_id:  # still to come (or in flight)
            return ScanStart(seq=self._last_seq + 1, skip_below=message_id)
        assert first is not None
        if message_id <= first.last_id:
            return ScanStart(seq=first.seq, skip_below=message_id)
        frame = self._frames.cached(message_id)
        if frame is not None:
            return ScanStart(seq=frame.seq, skip_below=message_id)
        frames, jsm, names = self._frames, self._jsm, self._names

        async def locate() -> int:
            found = await frames.locate(jsm, names, message_id)
            return found.seq if found is not None else 1

        return ScanStart(seq=0, skip_below=message_id, locate=locate)

    def _check_open(self) -> None:
        if self._state is not _State.OPEN:
            raise WALClosed(f"wal of channel {self.channel} (term {self.term}) is closed")
        if isinstance(self._failure, ChannelFenced):
            raise ChannelFenced(f"wal of channel {self.channel} (term {self.term}): {self._failure}")
        if self._failure is not None:
            raise StrataError(f"wal of channel {self.channel} failed: {self._failure}") from self._failure

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
            self._fail(self._inflight + self._queue, WALClosed("writer cancelled"))
            raise
        except Exception as err:  # task boundary: a bug must not leave appends hanging
            self._failure = StrataError(f"writer failed: {err!r}")
            self._log.exception("writer failed")
            self._fail(self._inflight + self._queue, self._failure)

    async def _commit(self, batch: list[_AppendRequest]) -> None:
        """Store one batch as frames; runs in the writer task, never in a caller's.

        Requests whose records all landed in stored frames succeed even if a
        later frame failed; the others fail with the error, which also fails
        the WAL (fenced, or its position in the stream unknown).
        """
        live = [r for r in batch if not r.future.done()]
        if not live:
            return
        if self._failure is not None:
            self._fail(live, self._failure)
            return
        payloads = [p for r in live for p in r.payloads]
        first_id = self._next_id
        self._next_id += len(payloads)
        stored, error = await self._store(payloads, first_id)
        if error is not None:
            self._failure = error
            if isinstance(error, ChannelFenced):
                self._log.warning("wal fenced", error=str(error), stored=stored, refused=len(payloads) - stored)
                await self._stop_answering()  # before anyone hears of it: the probe finds nobody
            else:
                self._log.error("append failed", error=str(error), stored=stored, records=len(payloads))
        done = 0
        for req in live:
            n = len(req.payloads)
            if done + n <= stored:
                if not req.future.done():
                    req.future.set_result([MessageID(first_id + done + k) for k in range(n)])
            else:
                self._fail([req], error or StrataError("append failed"))
            done += n

    async def _store(self, payloads: list[bytes], first_id: int) -> tuple[int, StrataError | None]:
        """Store ``payloads`` (ids from ``first_id``) as frames; how many records were stored, and why not more.

        Frames go one after the other, each after the previous one's ack: a
        frame is never sent after one that failed, so none can land behind
        another writer's message.
        """
        deadline = time.monotonic() + self._append_timeout
        i = 0
        while i < len(payloads):
            j = i + 1
            while j < len(payloads) and frame_size([len(p) for p in payloads[i : j + 1]]) <= self._max_frame:
                j += 1
            frame_first = first_id + i
            headers = {Header.MSG_ID.value: f"{self._owner}-{frame_first}", FIRST_ID: str(frame_first)}
            if j - i > 1:
                headers[RECORDS] = str(j - i)
            error = await self._store_frame(encode_frame(payloads[i:j]), headers, deadline)
            if error is not None:
                return i, error
            self._frames.appended(Frame(self._last_seq, frame_first, j - i))
            i = j
        return i, None

    async def _store_frame(self, body: bytes, headers: dict[str, str], deadline: float) -> StrataError | None:
        """Store one frame right after this owner's last message, retrying until ``deadline``; None if stored."""
        expected = self._last_seq
        msg_id = headers[Header.MSG_ID.value]
        backoff = _RETRY_MIN
        ack_timeout = self._ack_timeout
        while True:
            result = await self._publisher.publish(body, headers, expected, ack_timeout)
            try:
                match result.status:
                    case PubStatus.STORED:
                        if result.seq != expected + 1:
                            return StrataError(f"wal diverged: frame stored at {result.seq}, expected {expected + 1}")
                        break
                    case PubStatus.WRONG_LAST_SEQUENCE:
                        # The server checks the sequence before it drops duplicates, so a frame
                        # of an earlier attempt whose ack was lost comes back as this.
                        if await self._landed(expected + 1, msg_id):
                            self.reconciled_count += 1
                            break
                        newer = await self._newer_owner()
                        if newer is not None:
                            return self._fenced_error(newer)
                        return StrataError(
                            f"wal diverged: stream {self._names.stream} holds a message after {expected} "
                            f"that owner {self._owner} did not write ({result.detail})"
                        )
                    case PubStatus.REJECTED:
                        return StrataError(f"append refused by nats: {result.detail}")
                    case PubStatus.UNAVAILABLE:
                        detail = result.detail
                    case _:
                        assert_never(result.status)
            except NatsError as err:  # the checks themselves failed: try again below
                detail = f"check failed: {err!r}"
            if time.monotonic() > deadline:
                # The frame may still be stored later (a proposal in flight), so this WAL
                # no longer knows where its log ends: it fails, a reopen recovers.
                return StrataError(
                    f"append to wal {self.channel} not acknowledged in {self._append_timeout}s: {detail}",
                    ErrorCode.UNAVAILABLE,
                )
            self._log.warning("append not acknowledged, retrying", detail=detail, after=expected, backoff=backoff)
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, _RETRY_MAX)
            # A slow cluster gets more time per attempt: the ack of a stored frame may just be late.
            ack_timeout = min(ack_timeout * 2, self._ack_timeout * _ACK_TIMEOUT_GROWTH)
        self._last_seq = expected + 1
        self.commit_count += 1
        return None

    async def _landed(self, seq: int, msg_id: str) -> bool:
        """Whether the message at ``seq`` is this owner's record ``msg_id``."""
        try:
            msg = await settled(self._jsm.get_msg(self._names.stream, seq=seq))
        except NotFoundError:
            return False
        return msg.subject == self._names.data_subject and (msg.headers or {}).get(Header.MSG_ID.value) == msg_id

    async def _newer_owner(self) -> TermMarker | None:
        """The newest marker if another owner wrote it, else None (this owner still owns the channel)."""
        msg = await settled(self._jsm.get_last_msg(self._names.stream, self._names.term_subject))
        marker = TermMarker.decode(msg.data, f"{self._names.stream} seq {msg.seq}")
        return None if marker.owner == self._owner else marker

    def _fenced_error(self, newer: TermMarker) -> ChannelFenced:
        if newer.term == self.term:
            return ChannelFenced(
                f"channel {self.channel} was taken over by another owner of term {newer.term}; this one is fenced"
            )
        return ChannelFenced(f"channel {self.channel} was taken over by term {newer.term}; term {self.term} is fenced")

    def _fail(self, requests: list[_AppendRequest], error: StrataError) -> None:
        for req in requests:
            if not req.future.done():
                failure = type(error)(f"wal of channel {self.channel} (term {self.term}): {error}", error.code)
                failure.__cause__ = error
                req.future.set_exception(failure)

    async def _stop_answering(self) -> None:
        """Stop answering the owner probe, and make sure the server knows before returning."""
        sub, self._responder = self._responder, None
        if sub is None or self._nc.is_closed:
            return
        with contextlib.suppress(NatsError):
            await settled(sub.unsubscribe())
            await settled(self._nc.flush(timeout=2))

    async def _close(self) -> None:
        assert self._writer_task is not None
        try:
            await self._writer_task
        finally:
            self._state = _State.CLOSED
            for scanner in list(self._scanners):
                await scanner.close()
            await self._publisher.close()
            await self._stop_answering()
            self._log.info("wal closed", last_id=self._frames.last_id, last_seq=self._last_seq)


async def answer_probe(msg: Msg, term: int, owner: str) -> None:
    """The owner's answer to a liveness probe on its owner subject."""
    with contextlib.suppress(NatsError):
        await settled(msg.respond(json.dumps({"term": term, "owner": owner}).encode()))
