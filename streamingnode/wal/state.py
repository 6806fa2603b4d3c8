"""The state of one open WAL, shared by its parts, and the values its appends return.

``WALState`` holds what the writer (``writer.py``), the recovery snapshots (``snapshots.py``)
and the public ``WAL`` (``wal.py``) share: the backend, the TSO, the queue of appends, the
write-ahead buffer, the interceptor chain (``interceptors.py``), the folded state (rows per
collection, ``stats.py``, an observer; the shard interceptor's segments) and the position it matches.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import structlog

from common.errors import PositionTruncated
from common.message import Outgoing, TypedMessage
from common.position import Position
from common.tasks import BackgroundTasks
from streamingnode.wal.holds import DEFAULT_MAX_AGE_SECONDS, ReadHolds
from streamingnode.wal.interceptors import Chain, Interceptor, Observer
from streamingnode.wal.recovery import RecoveryHandle, RecoverySnapshot
from streamingnode.wal.scanner import Backoff
from streamingnode.wal.shard_interceptor import ShardInterceptor
from streamingnode.wal.stats import RowCounts
from streamingnode.wal.tick_requests import DEFAULT_MIN_INTERVAL, TickRequests
from streamingnode.wal.timestamps import TimestampSource
from streamingnode.wal.wab import BufferOptions, WriteAheadBuffer
from streamingnode.walimpls.wal import DeliverPolicy, DeliverPolicyKind, MessageID, WALImpl


@dataclass(frozen=True, slots=True)
class Appended:
    message_id: MessageID
    timetick: int
    #: A ManualFlush's answer: the growing segments it sealed (Milvus' ManualFlushExtraResponse).
    sealed_segment_ids: tuple[int, ...] = ()


@dataclass(slots=True)
class PendingAppend:
    messages: Sequence[Outgoing]
    future: asyncio.Future[list[Appended]]
    txn: bool = False

    @property
    def timeticks(self) -> int:
        """How many timestamps this append consumes (a transaction uses one)."""
        return 1 if self.txn else len(self.messages)


class WALState:
    """One pchannel's WAL at one term: its state (``WAL`` in ``wal.py`` is the whole of it).

    Args:
        impl: the opened backend; closed by :meth:`close`.
        timestamps: the TSO.
        tick_interval: seconds between volatile TimeTicks of an idle WAL.
        buffer: bounds of the write-ahead buffer.
        backoff: retry delays of readers whose backend scanner fails.
        clock: monotonic clock of the buffer's age bound (injectable for tests).
        recovery: where recovery snapshots are loaded from and saved to (None: replay the whole log).
        snapshot_interval: seconds between two snapshot saves while the log grows.
        tick_request_interval: seconds between two on-demand TimeTicks at least (``request_tick``).
        interceptors: the writer's chain, in order (``interceptors.py``); a ``ShardInterceptor``
            among them assigns segments, and the recovery snapshots keep its state.
    """

    def __init__(
        self,
        impl: WALImpl,
        timestamps: TimestampSource,
        *,
        tick_interval: float = 0.2,
        buffer: BufferOptions | None = None,
        backoff: Backoff | None = None,
        clock: Callable[[], float] = time.monotonic,
        interceptors: Sequence[Interceptor[Any]] = (),
        recovery: RecoveryHandle | None = None,
        snapshot_interval: float = 10.0,
        read_hold_seconds: float = DEFAULT_MAX_AGE_SECONDS,
        tick_request_interval: float = DEFAULT_MIN_INTERVAL,
    ) -> None:
        self.impl = impl
        self.channel = impl.channel
        self.term = impl.term
        self._ts = timestamps
        self._tick_interval = tick_interval
        self._buffer_options = buffer or BufferOptions()
        self._buffer_options.validate()
        self._backoff = backoff or Backoff()
        self._backoff.validate()
        self._clock = clock
        self._chain = Chain(interceptors)
        # The link whose segments the recovery snapshots keep (None: no segment assignment).
        self._shard = next((i for i in interceptors if isinstance(i, ShardInterceptor)), None)
        self._holds = ReadHolds(impl.channel, max_age=read_hold_seconds, clock=clock)
        # None in the queue wakes the writer for a requested TimeTick (``request_tick``).
        self._queue: asyncio.Queue[PendingAppend | None] = asyncio.Queue()
        self._ticks = TickRequests(min_interval=tick_request_interval)
        self._closing = False
        self._writer: asyncio.Task[None] | None = None
        self._last_tick_id: MessageID | None = None
        self._wab: WriteAheadBuffer | None = None  # created by start()
        self._rows = RowCounts()  # statistics: rows per collection (stats.py)
        self._observers: tuple[Observer, ...] = (self._rows,)  # fed every persisted and replayed message
        self._recovery = recovery
        self._snapshot_interval = snapshot_interval
        self._folded: Position | None = None  # the last persisted TimeTick: state == log up to here
        self._captured: RecoverySnapshot | None = None  # waiting for the saver
        self._captured_at = clock()
        self._snapshot_wake = asyncio.Event()
        self._saved: Position | None = None  # the newest snapshot in the recovery store
        # Set when an append failed: until a TimeTick is persisted again, idle ticks try to persist one.
        self._unsettled_since: float | None = None
        # While idle duties fail (settling, a due Flush, a volatile TimeTick): the last wait, the next try.
        self._retry_delay = 0.0
        self._retry_at = 0.0
        self._log = structlog.get_logger().bind(component="wal", pchannel=self.channel, term=self.term)
        self._tasks = BackgroundTasks("wal", pchannel=self.channel, term=self.term)  # the writer, the snapshot saver

    def _observe(self, msg: TypedMessage) -> None:
        """Fold one persisted or replayed message into the observers (the statistics)."""
        for observer in self._observers:
            observer.observe(msg)

    @property
    def saved_position(self) -> Position | None:
        """The position of the newest saved recovery snapshot (None without a recovery store)."""
        return self._saved

    @property
    def last_timetick(self) -> int | None:
        """The timetick of the last persisted TimeTick (None before ``start()``)."""
        return self._folded.timetick if self._folded is not None else None

    def collection_rows(self, collection_id: int) -> int:
        return self._rows.of(collection_id)

    @property
    def buffer(self) -> WriteAheadBuffer | None:
        """The write-ahead buffer (None before :meth:`start`)."""
        return self._wab

    def check_start(self, policy: DeliverPolicy) -> None:
        """Raise ``PositionTruncated`` if a reader starting at ``policy`` would miss truncated records."""
        first = self.impl.first_message_id()
        if first is None or policy.message_id is None:
            return
        needed = policy.message_id.seq + (1 if policy.kind == DeliverPolicyKind.START_AFTER else 0)
        if needed < first.seq:
            raise PositionTruncated(
                f"position {policy.message_id.seq} of {self.channel} was truncated; the log starts at {first.seq}"
            )
