"""One open WAL: a backend plus timetick ordering, group commit and readers.

A single writer task takes every queued append, allocates one timestamp per
message (from the node's range of TSO timestamps, ``timestamps.py``), appends
the whole batch to the backend (one fsync) and answers. Because allocation and writing happen in that one task, log order is
timetick order, and a TimeTick(T) written after a batch means every message
with timetick <= T is persisted. Each batch is followed by a persisted
TimeTick. An idle WAL publishes a *volatile* TimeTick every ``tick_interval``
seconds instead: readers receive it so tsafe keeps moving, but nothing is
written or fsync'd, and an idle WAL does not grow. A reader that needs a
TimeTick at or above a timestamp sooner (a Strong read) asks for one
(``request_tick``): the writer publishes a volatile TimeTick taken fresh from
the TSO at its next turn, one for every request waiting then
(``tick_requests.py``).

Every persisted batch (with its TimeTick) and every volatile TimeTick also
goes into the write-ahead buffer (``wab.py``), from which readers at the tail
are served without touching the backend; readers that fall behind read the
backend (``scanner.py``).

Lifetime: ``start()`` restores the newest recovery snapshot (``recovery.py``)
and replays the log after it, writes the term's first TimeTick, saves a
snapshot (which fences older owners), creates the buffer and starts the
writer; ``close()`` fails new appends, lets the writer drain, closes the
buffer (tailing readers end after what it holds) and then the backend
(catching-up readers end).

Recovery snapshots are captured by the writer between two batches, the only
moments when the folded state (segments, rows) matches a log position exactly,
and saved by a background task. ``truncate`` never passes the last saved
position, and ``read`` refuses a start below the oldest record still in the
log (``PositionTruncated``) rather than skip what was truncated.
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass

import structlog

from common.errors import (
    ChannelFenced,
    DiskQuotaExhausted,
    ErrorCode,
    IOFailed,
    PositionTruncated,
    StrataError,
    WALClosed,
)
from common.failpoints import failpoint
from common.message import DropCollection, Insert, ManualFlush, TimeTick, TypedMessage, decode
from common.position import Position
from common.tasks import BackgroundTasks
from common.tracing import linked_span
from common.tsoutil import physical_ms
from protos.common_pb2 import Message, MessageType
from streamingnode.metrics import observe_append, observe_requested_tick
from streamingnode.shard import ShardManager
from streamingnode.wal.holds import DEFAULT_MAX_AGE_SECONDS, ReadHolds
from streamingnode.wal.recovery import RecoveryHandle, RecoverySnapshot
from streamingnode.wal.scanner import Backoff, SwitchableScanner
from streamingnode.wal.shard_interceptor import Expansion, ShardInterceptor
from streamingnode.wal.tick_requests import DEFAULT_MIN_INTERVAL, TickRequests
from streamingnode.wal.timestamps import TimestampSource
from streamingnode.wal.wab import BufferOptions, WriteAheadBuffer
from streamingnode.walimpls.wal import DeliverPolicy, DeliverPolicyKind, MessageID, WALImpl

#: Messages the proxy writes; any other kind comes from the coordinator (DDL, ManualFlush).
_DATA = frozenset({MessageType.INSERT, MessageType.DELETE})
#: At most this many seconds between two tries to persist a TimeTick after a failed append.
_SETTLE_MAX_DELAY = 1.0


@dataclass(frozen=True, slots=True)
class Appended:
    message_id: MessageID
    timetick: int
    #: A ManualFlush's answer: the growing segments it sealed (Milvus' ManualFlushExtraResponse).
    sealed_segment_ids: tuple[int, ...] = ()


def _sealed_by(msg: Message) -> tuple[int, ...]:
    """The segments a stamped ManualFlush sealed (its header lists them); () for any other message."""
    if msg.type != MessageType.MANUAL_FLUSH:
        return ()
    typed = decode(msg)
    return typed.segment_ids if isinstance(typed, ManualFlush) else ()


@dataclass(slots=True)
class _Pending:
    messages: Sequence[Message]
    future: asyncio.Future[list[Appended]]
    txn: bool = False

    @property
    def timeticks(self) -> int:
        """How many timestamps this append consumes (a transaction uses one)."""
        return 1 if self.txn else len(self.messages)


class WAL:
    """One pchannel's WAL at one term; see the module docstring for the lifetime.

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
        shard: ShardInterceptor | None = None,
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
        self._shard = shard
        self._holds = ReadHolds(impl.channel, max_age=read_hold_seconds, clock=clock)
        # None in the queue wakes the writer for a requested TimeTick (``request_tick``).
        self._queue: asyncio.Queue[_Pending | None] = asyncio.Queue()
        self._ticks = TickRequests(min_interval=tick_request_interval)
        self._closing = False
        self._writer: asyncio.Task[None] | None = None
        self._last_tick_id: MessageID | None = None
        self._wab: WriteAheadBuffer | None = None  # created by start()
        self._rows: dict[int, int] = defaultdict(int)
        self._recovery = recovery
        self._snapshot_interval = snapshot_interval
        self._folded: Position | None = None  # the last persisted TimeTick: state == log up to here
        self._captured: RecoverySnapshot | None = None  # waiting for the saver
        self._captured_at = clock()
        self._snapshot_wake = asyncio.Event()
        self._saved: Position | None = None  # the newest snapshot in the recovery store
        # Set when an append failed: until a TimeTick is persisted again, idle ticks try to persist one.
        self._unsettled_since: float | None = None
        self._settle_delay = 0.0
        self._settle_at = 0.0
        self._log = structlog.get_logger().bind(component="wal", pchannel=self.channel, term=self.term)
        self._tasks = BackgroundTasks("wal", pchannel=self.channel, term=self.term)  # the writer, the snapshot saver

    async def start(self) -> None:
        """Restore and replay, write the first TimeTick of this term, save a snapshot, start writing.

        Raises ``ChannelFenced`` if a newer owner saved a snapshot meanwhile.
        """
        after: MessageID | None = None
        snap = await self._recovery.load() if self._recovery is not None else None
        if snap is not None:
            after = MessageID.from_bytes(snap.position.message_id)
            self._restore(snap)
        await self._replay(after)
        ts = await self._ts.allocate_fresh(1)  # above anything an older owner reserved
        tick = TimeTick(timetick=ts).encode()
        tick.wal_term = self.term
        previous = self.impl.last_message_id()
        if previous is not None:
            # Reading from the record before it re-reads this tick and everything after.
            tick.last_confirmed = previous.to_bytes()
        (tick_id,) = await self.impl.append([tick.SerializeToString()])
        self._last_tick_id = tick_id
        self._folded = Position(tick_id.to_bytes(), ts)
        self._ticks.published(ts)
        if self._recovery is not None:
            # Saved before anything is served: an older owner's snapshots are refused from now on.
            first = self._capture()
            await self._recovery.save(first)
            self._saved = first.position
        self._wab = WriteAheadBuffer(
            start_timetick=ts, start_id=tick_id, options=self._buffer_options, clock=self._clock, channel=self.channel
        )
        self._writer = self._tasks.start(self._write_loop(), name=f"wal-writer-{self.channel}")
        if self._recovery is not None:
            self._tasks.start(self._save_loop(), name=f"wal-snapshots-{self.channel}")
        self._log.info("wal open", first_timetick=ts, restored_from=None if after is None else after.seq)

    def _restore(self, snap: RecoverySnapshot) -> None:
        self._rows = defaultdict(int, snap.rows)
        if self._shard is not None and snap.shard is not None:
            self._shard.manager = ShardManager.from_snapshot(snap.shard, self._shard.manager.policy)

    def _capture(self) -> RecoverySnapshot:
        """The folded state now; only call between two writer batches (no reservation in flight)."""
        assert self._folded is not None
        return RecoverySnapshot(
            position=self._folded,
            term=self.term,
            rows=dict(self._rows),
            shard=None if self._shard is None else self._shard.manager.snapshot(),
        )

    def _maybe_capture(self) -> None:
        if self._recovery is None or self._folded is None or self._folded == self._saved:
            return
        if self._clock() - self._captured_at < self._snapshot_interval:
            return
        self._captured = self._capture()
        self._captured_at = self._clock()
        self._snapshot_wake.set()

    async def _save_loop(self) -> None:
        assert self._recovery is not None
        while True:
            await self._snapshot_wake.wait()
            self._snapshot_wake.clear()
            snap, self._captured = self._captured, None
            if snap is None:
                continue
            try:
                await self._recovery.save(snap)
                self._saved = snap.position
            except asyncio.CancelledError:
                raise
            except ChannelFenced:
                self._log.error("recovery snapshot fenced: a newer owner has this pchannel")
                return
            except Exception as err:  # task boundary: the next capture tries again
                self._log.warning("recovery snapshot not saved", error=str(err))

    @property
    def saved_position(self) -> Position | None:
        """The position of the newest saved recovery snapshot (None without a recovery store)."""
        return self._saved

    async def truncate(self, upto: MessageID) -> MessageID | None:
        """Let the backend drop records below ``upto``, never past the saved snapshot nor a reader's
        hold (``holds.py``); returns the bound used (None: nothing may go)."""
        if self._saved is None:
            return None
        held = self._holds.bound(min(upto, MessageID.from_bytes(self._saved.message_id)))
        if held is None:
            return None  # an open reader needs the whole log
        bound = held
        failpoint("wal.truncate")
        await self.impl.truncate(bound)
        return bound

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

    async def _replay(self, after: MessageID | None) -> None:
        last = self.impl.last_message_id()
        if after is not None and (last is None or after > last):
            raise StrataError(
                f"recovery snapshot of {self.channel} is at {after.seq}, past the end of the log "
                f"({None if last is None else last.seq}): the WAL directory does not match etcd"
            )
        if last is None or (after is not None and after >= last):
            return
        policy = DeliverPolicy.all() if after is None else DeliverPolicy.start_after(after)
        self.check_start(policy)
        scanner = self.impl.read(policy)
        try:
            async for entry in scanner:
                msg = Message.FromString(entry.payload)
                typed = decode(msg)
                self._observe(typed)
                if self._shard is not None:
                    self._shard.observe(typed, physical_ms(msg.timetick))
                if entry.message_id >= last:
                    break
        finally:
            await scanner.close()

    def _observe(self, msg: TypedMessage) -> None:
        match msg:
            case Insert(collection_id=cid, rows=rows):
                self._rows[cid] += rows
            case DropCollection(collection_id=cid):
                self._rows.pop(cid, None)
            case _:
                pass

    @property
    def last_timetick(self) -> int | None:
        """The timetick of the last persisted TimeTick (None before ``start()``)."""
        return self._folded.timetick if self._folded is not None else None

    def collection_rows(self, collection_id: int) -> int:
        return self._rows.get(collection_id, 0)

    @property
    def buffer(self) -> WriteAheadBuffer | None:
        """The write-ahead buffer (None before :meth:`start`)."""
        return self._wab

    async def append(self, messages: Sequence[Message], *, txn: bool = False) -> list[Appended]:
        """Persist ``messages`` in order; returns ids and timeticks once fsync'd.

        With ``txn`` they form one transaction: one timetick for all, written in one batch
        before the next TimeTick, so a reader at any timestamp sees all of them or none.
        The WAL takes the messages over: it stamps them in place (segment, timetick, term)
        and hands them to its readers, so the caller must not use or change them after the
        call, whatever its outcome. Copying a 512 KiB Insert costs more than its fsync's
        share of the CPU (fresh pages). Both callers drop the messages afterwards: the Produce
        handler its request, and a producer in this process (``streamingnode/client/local.py``)
        the messages it built, which it copies before a retry.
        """
        if self._closing:
            raise WALClosed(f"wal {self.channel} (term {self.term}) is closing")
        if not messages:
            return []
        fut: asyncio.Future[list[Appended]] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait(_Pending(messages, fut, txn))
        return await fut

    async def request_tick(self, timestamp: int) -> int:
        """Wait until a TimeTick >= ``timestamp`` has reached this WAL's readers; returns its timetick.

        Returns at once if one has already (the last one published). Otherwise the writer
        publishes one at its next turn (after the batch it is writing, at most one such tick per
        ``tick_request_interval``), taken fresh from the TSO: above any ``timestamp`` the TSO issued
        before this call. Concurrent calls share that tick. A reader tailing the WAL receives the
        tick after every message below it, so once it has applied the tick it has applied all of
        them. While a failed append is being repaired (readers on the backend, where volatile ticks
        never arrive) the answer waits for the next persisted TimeTick. Cancelling the call
        withdraws the request. Raises ``WALClosed`` when the WAL closes first.
        """
        if self._closing:
            raise WALClosed(f"wal {self.channel} (term {self.term}) is closing")
        fut = self._ticks.want(timestamp)
        if fut is None:
            return self._ticks.last
        self._queue.put_nowait(None)  # wake the writer
        return await fut

    @property
    def on_demand_ticks(self) -> int:
        """TimeTicks published because a reader asked for one (``request_tick``)."""
        return self._ticks.on_demand_ticks

    async def _next_items(self, wait: float) -> list[_Pending | None]:
        """What is queued, waiting up to ``wait`` seconds for the first item; [] if nothing came."""
        items: list[_Pending | None] = []
        if wait > 0 and self._queue.empty():
            try:
                async with asyncio.timeout(wait):
                    items.append(await self._queue.get())
            except TimeoutError:
                return items
        while not self._queue.empty():
            items.append(self._queue.get_nowait())
        return items

    async def _write_loop(self) -> None:
        # The idle duties (due Flushes, a volatile TimeTick, repairing after a failed append) run
        # once no batch came for a tick interval; requested TimeTicks do not postpone them.
        next_idle = self._clock() + self._tick_interval
        while True:
            wait = next_idle - self._clock()
            requested = None if self._unsettled_since is not None else self._ticks.delay(self._clock())
            if requested is not None:
                wait = min(wait, requested)
            items = await self._next_items(wait)
            batch = [p for p in items if p is not None]
            try:
                ticked = False
                requested = None if self._unsettled_since is not None else self._ticks.delay(self._clock())
                if requested is not None and requested <= 0:
                    # Before the batch: readers need not wait for its fsync, its messages are stamped above.
                    await self._requested_tick()
                    ticked = True
                now = self._clock()
                if batch:
                    await self._write(batch)
                    next_idle = self._clock() + self._tick_interval
                elif now >= next_idle:
                    next_idle = now + self._tick_interval
                    if self._unsettled_since is not None:
                        await self._settle()
                    elif not await self._self_flush() and not ticked:
                        await self._volatile_tick()
                self._maybe_capture()
            except asyncio.CancelledError:
                for p in batch:
                    if not p.future.done():
                        p.future.set_exception(WALClosed(f"wal {self.channel} closed"))
                raise
            except (DiskQuotaExhausted, IOFailed) as err:  # the disk: the next batch repairs first
                self._log.warning("wal append failed", error=str(err), messages=sum(len(p.messages) for p in batch))
                for p in batch:
                    if not p.future.done():
                        p.future.set_exception(err)
            except Exception as err:  # fail this batch's callers, keep the WAL running
                self._log.exception("wal append failed")
                for p in batch:
                    if not p.future.done():
                        p.future.set_exception(err)
            if self._closing and self._queue.empty():
                return

    async def _self_flush(self) -> bool:
        """Append the Flushes the seal policies owe now (lifetime, idle); False if none."""
        if self._shard is None:
            return False
        assert self._wab is not None
        now_ms = int(time.time() * 1000)
        ex = self._shard.tick(now_ms)
        if not ex.pre:
            return False
        try:
            await self._persist([([m], None) for m in ex.pre])
        finally:
            self._wab.wake_readers()
        self._shard.committed(ex, now_ms)
        return True

    async def _settle(self) -> None:
        """After a failed append, persist what an idle tick owes: due Flushes, else a lone TimeTick.

        A failed append invalidated the buffer, so every reader went back to the
        backend, and there volatile TimeTicks never arrive: tsafe would stand
        still until the next write. A persisted TimeTick lets readers catch up
        and return to the buffer. Tried at idle ticks while it fails, spaced
        out to at most one try a second.
        """
        assert self._wab is not None and self._unsettled_since is not None
        now = self._clock()
        if now < self._settle_at:
            return
        try:
            if not await self._self_flush():
                await self._persist([], fresh=True)
        except Exception as err:  # still failing: the appenders hear why, this tick tries again later
            self._log.debug("timetick not persisted", error=str(err))
            self._settle_delay = min(max(self._settle_delay * 2, self._tick_interval), _SETTLE_MAX_DELAY)
            self._settle_at = now + self._settle_delay
            return
        finally:
            self._wab.wake_readers()

    async def _volatile_tick(self) -> int:
        assert self._wab is not None and self._last_tick_id is not None
        ts = await self._ts.allocate_fresh(1)  # tsafe passes every timestamp issued before this tick
        tick = TimeTick(timetick=ts).encode()
        tick.wal_term = self.term
        tick.last_confirmed = self._last_tick_id.to_bytes()
        self._wab.append_volatile_tick(tick, self._last_tick_id)
        self._ticks.published(ts)
        return ts

    async def _requested_tick(self) -> None:
        """A volatile TimeTick for the readers that asked for one (``request_tick``).

        If it cannot be had (the TSO unreachable), the waiting requests fail instead, and the
        writer goes on with its batch: those readers wait for the next TimeTick as before.
        """
        try:
            ts = await self._volatile_tick()
        except asyncio.CancelledError:
            raise
        except Exception as err:  # task boundary for the requests: they hear why, the writer goes on
            self._log.warning("requested timetick failed", error=str(err))
            self._ticks.fail_all(StrataError(f"timetick of {self.channel} not published: {err}", ErrorCode.UNAVAILABLE))
            return
        self._ticks.ticked(ts, self._clock())
        observe_requested_tick(self.channel)

    async def _expand(self, p: _Pending, now_ms: int) -> Expansion:
        """What ``p`` turns into; raises ``MalformedMessage`` for a message readers could not decode."""
        if self._shard is None:
            for msg in p.messages:
                decode(msg)
            return Expansion(own=list(p.messages))
        return await self._shard.expand(p.messages, now_ms)

    async def _write(self, batch: list[_Pending]) -> None:
        assert self._wab is not None and self._last_tick_id is not None
        now_ms = int(time.time() * 1000)
        # Units share one timetick: a self-generated message, a plain message, or a whole transaction.
        units: list[tuple[list[Message], _Pending | None]] = []
        accepted: list[tuple[_Pending, Expansion]] = []
        for p in batch:
            try:
                ex = await self._expand(p, now_ms)
            except StrataError as err:  # refused (e.g. unknown collection, malformed header): this caller only
                if not p.future.done():
                    p.future.set_exception(err)
                continue
            accepted.append((p, ex))
            units.extend(([m], None) for m in ex.pre)
            if p.txn:
                units.append((ex.own, p))
            else:
                units.extend(([m], p) for m in ex.own)
        if not units:
            return
        # A coordinator's message is stamped above every timestamp the coordinator took before sending it.
        fresh = any(m.type not in _DATA for p, _ in accepted for m in p.messages)
        try:
            ids = await self._persist(units, fresh=fresh)
        except BaseException:
            if self._shard is not None:
                for _, ex in accepted:
                    self._shard.aborted(ex)
            raise
        try:
            if self._shard is not None:
                for _, ex in accepted:
                    self._shard.committed(ex, now_ms)
            results: dict[int, list[Appended]] = {id(p): [] for p, _ in accepted}
            position = iter(ids)
            for msgs, owner in units:
                for m in msgs:
                    m_id = next(position)
                    if owner is not None:
                        results[id(owner)].append(Appended(m_id, m.timetick, _sealed_by(m)))
            for p, _ in accepted:
                if not p.future.done():
                    p.future.set_result(results[id(p)])
        finally:
            # Writers before readers: the callers resumed above are scheduled first, so their
            # answers leave before the flusher (or a consumer) works through the batch.
            self._wab.wake_readers()

    async def _persist(
        self, units: list[tuple[list[Message], _Pending | None]], *, fresh: bool = False
    ) -> list[MessageID]:
        """Stamp every unit with its timetick (in place), append them and a TimeTick, feed the buffer.

        ``fresh`` takes the timestamps straight from the TSO rather than from the node's range.
        Returns the ids of the units' messages in order (the TimeTick's excluded). The buffer's
        readers are not woken: the caller resolves its appenders first, then calls
        ``wake_readers``.
        """
        assert self._wab is not None and self._last_tick_id is not None
        n = len(units)
        ts = await (self._ts.allocate_fresh(n + 1) if fresh else self._ts.allocate(n + 1))
        # The previous TimeTick: reading from it returns every message of this batch and after.
        last_confirmed = self._last_tick_id.to_bytes()
        stamped: list[Message] = []
        for k, (msgs, _) in enumerate(units):
            for m in msgs:
                m.timetick = ts + k  # in place: the WAL owns the messages (see append)
                m.wal_term = self.term
                m.last_confirmed = last_confirmed
                stamped.append(m)
        tick = TimeTick(timetick=ts + n).encode()
        tick.wal_term = self.term
        tick.last_confirmed = last_confirmed
        payloads = [m.SerializeToString() for m in stamped]
        payloads.append(tick.SerializeToString())
        try:
            started = time.perf_counter()
            with linked_span("wal.write", stamped, pchannel=self.channel, message_count=len(payloads)):  # to durable
                ids = await self.impl.append(payloads)
            observe_append(self.channel, time.perf_counter() - started, len(stamped), payloads)
            self._wab.append_batch(list(zip(ids, stamped, strict=False)), (ids[-1], tick), wake=False)
        except BaseException:
            # The batch may or may not be in the log, and it is not in the buffer:
            # tailing readers must go back to the backend.
            self._wab.invalidate(ts + n)
            if self._unsettled_since is None:
                self._unsettled_since = self._clock()
            raise
        if self._unsettled_since is not None:
            self._log.info("wal writes again", after_seconds=round(self._clock() - self._unsettled_since, 3))
        self._unsettled_since = None
        self._settle_delay, self._settle_at = 0.0, 0.0
        self._last_tick_id = ids[-1]
        self._folded = Position(ids[-1].to_bytes(), ts + n)
        self._ticks.published(ts + n)
        for msg in stamped:
            self._observe(decode(msg))
        return ids[:-1]

    def scanner(self, policy: DeliverPolicy, vchannel: str = "") -> SwitchableScanner:
        """A reader of ``vchannel`` (all when empty) plus every TimeTick; see :meth:`read`."""
        return SwitchableScanner(
            impl=self.impl,
            buffer=self._wab,
            policy=policy,
            vchannel=vchannel,
            is_closing=lambda: self._closing,
            backoff=self._backoff,
            holds=self._holds,
        )

    def read(self, policy: DeliverPolicy, vchannel: str = "") -> AsyncIterator[tuple[MessageID, Message]]:
        """Messages of ``vchannel`` (all when empty) plus every TimeTick, in timetick order.

        Each message is delivered once and timeticks strictly increase;
        messages whose timetick is not above one already delivered (a stale
        owner's late writes) are dropped. Volatile TimeTicks are delivered
        with the id of the last persisted message before them, so a consumer
        resuming after any delivered id misses nothing. Iteration ends when
        the WAL closes. Messages may be shared with other readers: do not
        modify them.
        """
        return aiter(self.scanner(policy, vchannel))

    async def close(self) -> None:
        """New appends fail fast, queued ones are written, then the buffer and the backend close."""
        self._closing = True
        self._queue.put_nowait(None)  # wake the writer now rather than at its next idle tick
        if self._writer is not None:
            # Let the writer finish what was accepted (it exits once the queue is empty).
            await asyncio.wait([self._writer], timeout=10 * self._tick_interval + 5)
        await self._tasks.stop()  # the snapshot saver, and a writer that did not finish in time
        self._ticks.fail_all(WALClosed(f"wal {self.channel} closed"))
        if self._wab is not None:
            self._wab.close()
        await self.impl.close()
        self._log.info("wal closed")
