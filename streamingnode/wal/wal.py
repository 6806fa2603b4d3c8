"""One open WAL: a backend plus timetick ordering, group commit and readers.

A single writer task takes every queued append, allocates one timestamp per
message from the TSO, appends the whole batch to the backend (one fsync) and
answers. Because allocation and writing happen in that one task, log order is
timetick order, and a TimeTick(T) written after a batch means every message
with timetick <= T is persisted. Each batch is followed by a persisted
TimeTick. An idle WAL publishes a *volatile* TimeTick every ``tick_interval``
seconds instead: readers receive it (once they have delivered everything
persisted before it) so tsafe keeps moving, but nothing is written or fsync'd,
and an idle WAL does not grow.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import defaultdict
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

import structlog

from protos.common_pb2 import Message, MessageType
from services.errors import WALClosed
from streamingnode.message import header, new_time_tick
from streamingnode.wal.timestamps import TimestampSource
from streamingnode.walimpls.wal import DeliverPolicy, DeliverPolicyKind, LogEntry, MessageID, WALImpl


@dataclass(frozen=True, slots=True)
class Appended:
    message_id: MessageID
    timetick: int


@dataclass(slots=True)
class _Pending:
    messages: Sequence[Message]
    future: asyncio.Future[list[Appended]]


class WAL:
    def __init__(self, impl: WALImpl, timestamps: TimestampSource, *, tick_interval: float = 0.2) -> None:
        self.impl = impl
        self.channel = impl.channel
        self.term = impl.term
        self._ts = timestamps
        self._tick_interval = tick_interval
        self._queue: asyncio.Queue[_Pending] = asyncio.Queue()
        self._closing = False
        self._writer: asyncio.Task[None] | None = None
        self._last_tick_id: MessageID | None = None
        # The newest volatile TimeTick: (timetick, id of the last persisted message before it).
        self._volatile: tuple[int, MessageID | None] | None = None
        self._volatile_signal = asyncio.Event()
        self._rows: dict[int, int] = defaultdict(int)
        self._log = structlog.get_logger().bind(component="wal", pchannel=self.channel, term=self.term)

    async def start(self) -> None:
        """Rebuild per-collection counters, write the first TimeTick of this term, start writing."""
        await self._replay()
        ts = await self._ts.allocate(1)
        tick = new_time_tick(ts)
        tick.wal_term = self.term
        (tick_id,) = await self.impl.append([tick.SerializeToString()])
        self._last_tick_id = tick_id
        self._writer = asyncio.create_task(self._write_loop(), name=f"wal-writer-{self.channel}")
        self._log.info("wal open", first_timetick=ts)

    async def _replay(self) -> None:
        last = self.impl.last_message_id()
        if last is None:
            return
        scanner = self.impl.read(DeliverPolicy.all())
        try:
            async for entry in scanner:
                self._observe(Message.FromString(entry.payload))
                if entry.message_id >= last:
                    break
        finally:
            await scanner.close()

    def _observe(self, msg: Message) -> None:
        if msg.type == MessageType.INSERT:
            h = header(msg)
            self._rows[h["collection_id"]] += h["rows"]
        elif msg.type == MessageType.DROP_COLLECTION:
            self._rows.pop(header(msg)["collection_id"], None)

    def collection_rows(self, collection_id: int) -> int:
        return self._rows.get(collection_id, 0)

    async def append(self, messages: Sequence[Message]) -> list[Appended]:
        """Persist ``messages`` in order; returns ids and timeticks once fsync'd."""
        if self._closing:
            raise WALClosed(f"wal {self.channel} (term {self.term}) is closing")
        fut: asyncio.Future[list[Appended]] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait(_Pending(messages, fut))
        return await fut

    async def _write_loop(self) -> None:
        while True:
            try:
                first = await asyncio.wait_for(self._queue.get(), self._tick_interval)
            except TimeoutError:
                first = None
            batch = [first] if first is not None else []
            while not self._queue.empty():
                batch.append(self._queue.get_nowait())
            try:
                if batch:
                    await self._write(batch)
                else:
                    await self._volatile_tick()
            except asyncio.CancelledError:
                for p in batch:
                    if not p.future.done():
                        p.future.set_exception(WALClosed(f"wal {self.channel} closed"))
                raise
            except Exception as err:  # fail this batch's callers, keep the WAL running
                self._log.exception("wal append failed")
                for p in batch:
                    if not p.future.done():
                        p.future.set_exception(err)
            if self._closing and self._queue.empty():
                return

    async def _volatile_tick(self) -> None:
        ts = await self._ts.allocate(1)
        self._volatile = (ts, self.impl.last_message_id())
        signal, self._volatile_signal = self._volatile_signal, asyncio.Event()
        signal.set()

    async def _write(self, batch: list[_Pending]) -> None:
        n = sum(len(p.messages) for p in batch)
        ts = await self._ts.allocate(n + 1)
        last_confirmed = self._last_tick_id.to_bytes() if self._last_tick_id else b""
        payloads: list[bytes] = []
        stamped: list[Message] = []
        i = 0
        for p in batch:
            for m in p.messages:
                msg = Message()
                msg.CopyFrom(m)
                msg.timetick = ts + i
                msg.wal_term = self.term
                msg.last_confirmed = last_confirmed
                payloads.append(msg.SerializeToString())
                stamped.append(msg)
                i += 1
        tick = new_time_tick(ts + n)
        tick.wal_term = self.term
        tick.last_confirmed = last_confirmed
        payloads.append(tick.SerializeToString())
        ids = await self.impl.append(payloads)
        self._last_tick_id = ids[-1]
        for msg in stamped:
            self._observe(msg)
        i = 0
        for p in batch:
            k = len(p.messages)
            if not p.future.done():
                p.future.set_result([Appended(ids[i + j], ts + i + j) for j in range(k)])
            i += k

    async def read(self, policy: DeliverPolicy, vchannel: str = "") -> AsyncIterator[tuple[MessageID, Message]]:
        """Messages of ``vchannel`` (all when empty) plus every TimeTick, in log order.

        Messages whose timetick is below the last delivered TimeTick (a stale owner's late
        writes) are dropped. Volatile TimeTicks are delivered with the id of the last
        persisted message, so a consumer resuming after that id misses nothing.
        """
        scanner = self.impl.read(policy)
        entries = aiter(scanner)
        last_tick = 0
        last_id = policy.message_id if policy.kind == DeliverPolicyKind.START_AFTER else None
        next_entry: asyncio.Task[LogEntry] = asyncio.ensure_future(anext(entries))
        try:
            while True:
                signal = asyncio.ensure_future(self._volatile_signal.wait())
                try:
                    await asyncio.wait({next_entry, signal}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    signal.cancel()
                if next_entry.done():
                    try:
                        entry = next_entry.result()
                    except StopAsyncIteration:
                        return
                    next_entry = asyncio.ensure_future(anext(entries))
                    last_id = entry.message_id
                    msg = Message.FromString(entry.payload)
                    if msg.timetick < last_tick:
                        continue
                    if msg.type == MessageType.TIME_TICK:
                        last_tick = msg.timetick
                    elif vchannel and msg.vchannel != vchannel:
                        continue
                    yield entry.message_id, msg
                volatile = self._volatile
                if volatile is None or volatile[0] <= last_tick or last_id is None:
                    continue
                ts, persisted = volatile
                if persisted is None or last_id >= persisted:
                    last_tick = ts
                    tick = new_time_tick(ts)
                    tick.wal_term = self.term
                    yield last_id, tick
        finally:
            next_entry.cancel()
            with contextlib.suppress(BaseException):
                await next_entry
            await scanner.close()

    async def close(self) -> None:
        """New appends fail fast, queued ones are written, then the backend closes."""
        self._closing = True
        if self._writer is not None:
            # Let the writer finish what was accepted (it exits once the queue is empty).
            try:
                await asyncio.wait_for(asyncio.shield(self._writer), 10 * self._tick_interval + 5)
            except TimeoutError:
                self._writer.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._writer
        await self.impl.close()
        self._log.info("wal closed")
