"""Readers of the ``nats`` WAL: an ephemeral pull consumer per scanner.

A :class:`NatsScanner` creates a JetStream consumer (memory, one replica, no
acks) that starts at its next stream sequence, and pulls batches of up to
``_BATCH`` messages with a long poll (``expires``) and idle heartbeats. A
consumer delivers only stored messages (in a cluster: committed by a quorum),
in stream order, so the scanner catches up and then tails with one loop.

Frames are unpacked into records numbered from their ``Strata-First-Id``;
records below the start id (a start inside a frame) and term markers are
skipped. A start far behind the tail is looked up (``frames.py``) by the
first ``__anext__``, so ``read`` never blocks. A consumer that stops
answering (its server died, a leader moved, it was deleted for inactivity)
is replaced by a new one from the next sequence; transient errors back off
(100 ms doubling to 2 s) and retry until the scanner is closed. Stale
messages of a replaced consumer are told apart by the reply subject's
generation token and dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

import structlog
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.errors import Error as NatsError
from nats.errors import TimeoutError as NatsTimeout
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy, Header
from nats.js.errors import APIError, ServiceUnavailableError
from nats.js.manager import JetStreamManager

from common.errors import StrataError

from ...wal import LogEntry, MessageID
from .layout import ChannelNames, decode_frame, frame_header
from .natsutil import settled

_BATCH = 512  # messages per pull request
_EXPIRES = 5.0  # seconds a pull request waits for messages
_HEARTBEAT = 1.0  # idle heartbeat of a waiting pull request
_SILENCE = 3.5  # no message, status or heartbeat for this long: the consumer is gone
_INACTIVE = 60.0  # the server deletes a consumer nobody pulled from for this long
_API_TIMEOUT = 2.0
_BACKOFF_MIN, _BACKOFF_MAX = 0.1, 2.0


def _transient(err: BaseException) -> bool:
    if isinstance(err, ServiceUnavailableError | NatsTimeout | asyncio.TimeoutError):
        return True
    if isinstance(err, APIError):
        return err.code in (408, 503, 504) or err.code is None
    return isinstance(err, NatsError)  # connection trouble


@dataclass(frozen=True, slots=True)
class ScanStart:
    """Where a scanner starts: a stream sequence (or ``locate`` finds it), and the first id it delivers."""

    seq: int
    skip_below: int = 0
    locate: Callable[[], Awaitable[int]] | None = None


class NatsScanner:
    """A :class:`~streamingnode.walimpls.wal.Scanner` over one channel's stream.

    Made by ``NatsWAL.read``; consumed by one task at a time. A cancelled
    ``__anext__`` loses nothing: messages stay queued for the next call.
    """

    def __init__(
        self,
        *,
        nc: NATS,
        jsm: JetStreamManager,
        names: ChannelNames,
        start: ScanStart,
        max_bytes: int,
        name: str,
        wal_closed: Callable[[], bool],
    ) -> None:
        self._nc = nc
        self._jsm = jsm
        self._names = names
        self._next_seq = start.seq  # next stream sequence to read
        self._skip_below = start.skip_below  # records below this id are not delivered
        self._locate = start.locate
        self._max_bytes = max_bytes
        self._name = name
        self._wal_closed = wal_closed
        self._inbox = nc.new_inbox()
        self._sub: Subscription | None = None
        self._generation = 0
        self._consumer: str | None = None
        self._requested = 0  # messages the outstanding pull request may still bring
        self._last_heard = 0.0
        self._backoff = _BACKOFF_MIN
        self._incoming: deque[Msg] = deque()
        self._arrived = asyncio.Event()
        self._ready: deque[LogEntry] = deque()
        self._closed = False
        self._orphans: list[str] = []
        self._log = structlog.get_logger().bind(component="wal-nats", pchannel=names.stream, scanner=name)

    def __aiter__(self) -> AsyncIterator[LogEntry]:
        return self

    async def __anext__(self) -> LogEntry:
        while True:
            if self._ready:
                return self._ready.popleft()
            if self._closed or self._wal_closed():
                await self.close()
                raise StopAsyncIteration
            if self._locate is not None:
                await self._find_start(self._locate)
                continue
            if self._sub is None:
                self._sub = await settled(self._nc.subscribe(self._inbox + ".*", cb=self._on_message))
            if self._consumer is None:
                await self._create_consumer()
                continue
            if self._requested == 0:
                await self._pull()
            if not self._incoming:
                self._arrived.clear()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(_HEARTBEAT):
                        await self._arrived.wait()
            if self._incoming:
                if not self._handle(self._incoming.popleft()):
                    await self._drop_consumer()
            elif self._consumer is not None and time.monotonic() - self._last_heard > _SILENCE:
                self._log.warning("consumer silent, replacing it", consumer=self._consumer, next_seq=self._next_seq)
                await self._drop_consumer()

    async def close(self) -> None:
        """End iteration; deletes the consumer (best effort: the server drops it after ``_INACTIVE`` s anyway)."""
        self._closed = True
        self._arrived.set()
        self._ready.clear()
        # Shielded: a caller that gives up must not leave the subscription behind. Safe to
        # run again: a consumer created by an __anext__ that was under way is dropped too.
        await asyncio.shield(self._cleanup())

    # -- internals ------------------------------------------------------------

    async def _cleanup(self) -> None:
        await self._drop_consumer()
        orphans, self._orphans = self._orphans, []
        for name in orphans:
            self._consumer = name
            await self._drop_consumer()
        sub, self._sub = self._sub, None
        if sub is not None and not self._nc.is_closed:
            with contextlib.suppress(NatsError):
                await settled(sub.unsubscribe())
        self._incoming.clear()

    async def _on_message(self, msg: Msg) -> None:
        # Status messages come on the pull request's reply subject, which names the
        # consumer generation; records keep their own subject and name their consumer
        # in the ack subject. Either way, what an earlier consumer still sends is dropped.
        if msg.headers and Header.STATUS.value in msg.headers:
            current = msg.subject == f"{self._inbox}.{self._generation}"
        else:
            try:
                current = self._consumer is not None and msg.metadata.consumer == self._consumer
            except (ValueError, IndexError):
                current = False
        if current:
            self._incoming.append(msg)
            self._arrived.set()

    async def _find_start(self, locate: Callable[[], Awaitable[int]]) -> None:
        try:
            self._next_seq = await locate()
        except asyncio.CancelledError:
            raise
        except Exception as err:
            if not _transient(err):
                self._log.error("start not found", error=str(err))
                raise StrataError(f"cannot read wal stream {self._names.stream}: {err}") from err
            self._log.warning("start not found, retrying", error=str(err), backoff=self._backoff)
            await asyncio.sleep(self._backoff)
            self._backoff = min(self._backoff * 2, _BACKOFF_MAX)
            return
        self._locate = None

    async def _create_consumer(self) -> None:
        self._generation += 1
        name = f"{self._name}-{self._generation}"
        config = ConsumerConfig(
            name=name,
            deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
            opt_start_seq=self._next_seq,
            ack_policy=AckPolicy.NONE,
            mem_storage=True,
            num_replicas=1,
            inactive_threshold=_INACTIVE,
        )
        try:
            await settled(self._jsm.add_consumer(self._names.stream, config=config, timeout=_API_TIMEOUT))
        except asyncio.CancelledError:
            self._orphans.append(name)  # it may exist: deleted at close
            raise
        except Exception as err:
            with contextlib.suppress(Exception):  # it may exist even though the answer was lost
                await settled(self._jsm.delete_consumer(self._names.stream, name))
            if not _transient(err):
                self._log.error("consumer not created", error=str(err))
                raise StrataError(f"cannot read wal stream {self._names.stream}: {err}") from err
            self._log.warning("consumer not created, retrying", error=str(err), backoff=self._backoff)
            await asyncio.sleep(self._backoff)
            self._backoff = min(self._backoff * 2, _BACKOFF_MAX)
            return
        self._consumer = name
        self._requested = 0
        self._incoming.clear()
        self._last_heard = time.monotonic()

    async def _drop_consumer(self) -> None:
        name, self._consumer = self._consumer, None
        self._requested = 0
        self._generation += 1  # anything the old one still sends is dropped
        self._incoming.clear()
        if name is None or self._nc.is_closed:
            return
        try:
            await settled(self._jsm.delete_consumer(self._names.stream, name))
        except asyncio.CancelledError:
            raise
        except Exception as err:  # gone already, or its server is down: the server drops it when inactive
            self._log.debug("consumer not deleted", consumer=name, error=str(err))

    async def _pull(self) -> None:
        assert self._consumer is not None
        request = {
            "batch": _BATCH,
            "max_bytes": self._max_bytes,
            "expires": int(_EXPIRES * 1e9),
            "idle_heartbeat": int(_HEARTBEAT * 1e9),
        }
        subject = f"$JS.API.CONSUMER.MSG.NEXT.{self._names.stream}.{self._consumer}"
        try:
            await settled(
                self._nc.publish(subject, json.dumps(request).encode(), reply=f"{self._inbox}.{self._generation}")
            )
        except NatsError as err:  # reconnecting with a full buffer, or closed: try again soon
            self._log.warning("pull request not sent", error=str(err))
            await asyncio.sleep(self._backoff)
            self._backoff = min(self._backoff * 2, _BACKOFF_MAX)
            return
        self._requested = _BATCH
        self._last_heard = time.monotonic()

    def _handle(self, msg: Msg) -> bool:
        """Take one message of the consumer; False if the consumer must be replaced."""
        self._last_heard = time.monotonic()
        headers = msg.headers or {}
        status = headers.get(Header.STATUS.value)
        if status is not None:
            return self._handle_status(status, headers.get(Header.DESCRIPTION.value, ""))
        self._requested = max(self._requested - 1, 0)
        self._backoff = _BACKOFF_MIN
        seq = msg.metadata.sequence.stream
        if seq < self._next_seq:
            return True  # a replaced consumer overlapped
        if msg.subject == self._names.data_subject:
            where = f"{self._names.stream} seq {seq}"
            frame = frame_header(msg.headers, seq, where)
            for k, payload in enumerate(decode_frame(msg.data, frame.count, where)):
                if frame.first_id + k >= self._skip_below:
                    self._ready.append(LogEntry(MessageID(frame.first_id + k), payload))
        self._next_seq = seq + 1  # a term marker is skipped
        return True

    def _handle_status(self, status: str, description: str) -> bool:
        match status:
            case "100":  # idle heartbeat
                return True
            case "404" | "408":  # the pull request ended without filling its batch
                self._requested = 0
                return True
            case _:  # 409 (consumer deleted, leader changed, ...), 503, ...: start a new consumer
                self._log.info("consumer interrupted", status=status, description=description)
                return False
