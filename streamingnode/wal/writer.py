"""The WAL's writer: one task, one group-commit queue, timeticks in log order.

The writer takes every queued append (typed where it entered the WAL), runs it through the
interceptor chain (``interceptors.py``: segment assignment), stamps one timestamp per message
(one per transaction) from the node's TSO range, appends the batch and a closing TimeTick to the backend in one call,
feeds the write-ahead buffer and the observers (row counts: the typed messages, not decoded
again) and answers. When idle it writes the messages the chain owes (the seal policies'
Flushes), else publishes a volatile TimeTick; a requested TimeTick (``request_tick``) is
published at its next turn; after a failed append it keeps trying to persist a TimeTick
(``_settle``).
"""

from __future__ import annotations

import asyncio
import time

from common.errors import (
    DiskQuotaExhausted,
    ErrorCode,
    IOFailed,
    StrataError,
    WALClosed,
)
from common.message import ManualFlush, TimeTick, TypedMessage
from common.position import Position
from common.tracing import linked_span
from protos.common_pb2 import Message, MessageType
from streamingnode.metrics import observe_append, observe_requested_tick
from streamingnode.wal.interceptors import ChainExpansion, Outgoing
from streamingnode.wal.snapshots import Snapshots
from streamingnode.wal.state import Appended, PendingAppend
from streamingnode.walimpls.wal import MessageID

#: Messages the proxy writes; any other kind comes from the coordinator (DDL, ManualFlush).
_DATA = frozenset({MessageType.INSERT, MessageType.DELETE})
#: At most this many seconds between two tries of the idle duties while they fail (``_back_off``).
_RETRY_MAX_DELAY = 1.0


#: Messages that share one timetick (one message, or a whole transaction) and the append they answer.
_Unit = tuple[list[Outgoing], PendingAppend | None]


def _sealed_by(typed: TypedMessage) -> tuple[int, ...]:
    """The segments a ManualFlush sealed (the chain listed them); () for any other message."""
    return typed.segment_ids if isinstance(typed, ManualFlush) else ()


class GroupCommit(Snapshots):
    """The writer task of the WAL and what it runs."""

    async def _next_items(self, wait: float) -> list[PendingAppend | None]:
        """What is queued, waiting up to ``wait`` seconds for the first item; [] if nothing came."""
        items: list[PendingAppend | None] = []
        if wait > 0 and self._queue.empty():
            try:
                async with asyncio.timeout(wait):
                    items.append(await self._queue.get())
            except TimeoutError:
                return items
        else:
            await asyncio.sleep(0)  # a turn for the other tasks, also when the idle duties are overdue
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
                    if now < self._retry_at:
                        pass  # the idle duties failed lately: wait out the back-off
                    elif self._unsettled_since is not None:
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
                if batch:
                    self._log.exception("wal append failed")
                else:  # an idle Flush or TimeTick (the TSO unreachable): tried again, less and less often
                    self._log.warning("wal idle duty failed", error=str(err) or type(err).__name__,
                                      retry_in=round(self._back_off(), 3))
                for p in batch:
                    if not p.future.done():
                        p.future.set_exception(err)
            if self._closing and self._queue.empty():
                return

    async def _self_flush(self) -> bool:
        """Append the messages the chain owes now (the seal policies' Flushes); False if none."""
        assert self._wab is not None
        now_ms = int(time.time() * 1000)
        ex = self._chain.tick(now_ms)
        if not ex.pre:
            return False
        try:
            await self._persist([([m], None) for m in ex.pre])
        except BaseException:
            self._chain.aborted(ex)
            raise
        finally:
            self._wab.wake_readers()
        self._chain.committed(ex, now_ms)
        return True

    async def _settle(self) -> None:
        """After a failed append, persist what an idle tick owes: due Flushes, else a lone TimeTick.

        A failed append invalidated the buffer, so every reader went back to the
        backend, and there volatile TimeTicks never arrive: tsafe would stand
        still until the next write. A persisted TimeTick lets readers catch up
        and return to the buffer. Tried at idle ticks while it fails, spaced
        out to at most one try a second (``_back_off``).
        """
        assert self._wab is not None and self._unsettled_since is not None
        try:
            if not await self._self_flush():
                await self._persist([], fresh=True)
        except Exception as err:  # still failing: the appenders hear why, a later tick tries again
            self._log.debug("timetick not persisted", error=str(err))
            self._back_off()
        finally:
            self._wab.wake_readers()

    def _back_off(self) -> float:
        """An idle duty failed: the next waits twice as long as the last did (a tick interval at
        first, ``_RETRY_MAX_DELAY`` at most); returns the wait. A persisted batch or a volatile
        TimeTick ends the back-off."""
        self._retry_delay = min(max(self._retry_delay * 2, self._tick_interval), _RETRY_MAX_DELAY)
        self._retry_at = self._clock() + self._retry_delay
        return self._retry_delay

    async def _volatile_tick(self) -> int:
        assert self._wab is not None and self._last_tick_id is not None
        ts = await self._ts.allocate_fresh(1)  # tsafe passes every timestamp issued before this tick
        tick = TimeTick(timetick=ts).encode()
        tick.wal_term = self.term
        tick.last_confirmed = self._last_tick_id.to_bytes()
        self._wab.append_volatile_tick(tick, self._last_tick_id)
        self._ticks.published(ts)
        self._retry_delay = self._retry_at = 0.0  # the TSO answers again
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

    async def _write(self, batch: list[PendingAppend]) -> None:
        assert self._wab is not None and self._last_tick_id is not None
        now_ms = int(time.time() * 1000)
        # Units share one timetick: a self-generated message, a plain message, or a whole transaction.
        units: list[_Unit] = []
        accepted: list[tuple[PendingAppend, ChainExpansion]] = []
        for p in batch:
            try:
                ex = await self._chain.expand(p.messages, now_ms)
            except StrataError as err:  # refused (e.g. unknown collection, malformed message): this caller only
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
        fresh = any(o.msg.type not in _DATA for p, _ in accepted for o in p.messages)
        try:
            ids = await self._persist(units, fresh=fresh)
        except BaseException:
            for _, ex in accepted:
                self._chain.aborted(ex)
            raise
        try:
            for _, ex in accepted:
                self._chain.committed(ex, now_ms)
            results: dict[int, list[Appended]] = {id(p): [] for p, _ in accepted}
            position = iter(ids)
            for outs, owner in units:
                for out in outs:
                    m_id = next(position)
                    if owner is not None:
                        results[id(owner)].append(Appended(m_id, out.msg.timetick, _sealed_by(out.typed)))
            for p, _ in accepted:
                if not p.future.done():
                    p.future.set_result(results[id(p)])
        finally:
            # Writers before readers: the callers resumed above are scheduled first, so their
            # answers leave before the flusher (or a consumer) works through the batch.
            self._wab.wake_readers()

    async def _persist(self, units: list[_Unit], *, fresh: bool = False) -> list[MessageID]:
        """Stamp every unit with its timetick (in place), append them and a TimeTick, feed the buffer
        and the observers.

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
        for k, (outs, _) in enumerate(units):
            for out in outs:
                m = out.msg
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
        self._retry_delay = self._retry_at = 0.0
        self._last_tick_id = ids[-1]
        self._folded = Position(ids[-1].to_bytes(), ts + n)
        self._ticks.published(ts + n)
        for outs, _ in units:
            for out in outs:
                self._observe(out.typed)  # the typed form the append came with: not decoded again
        return ids[:-1]
