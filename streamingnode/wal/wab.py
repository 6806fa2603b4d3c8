"""The write-ahead buffer: recent WAL messages in memory, for readers at the tail.

The WAL's writer task appends to it at TimeTick boundaries only: each
persisted batch together with the TimeTick written after it, and each
volatile (idle, never persisted) TimeTick. So the buffer always holds whole
batches in timetick order, and a TimeTick(T) in it means every message with
timetick <= T is in the buffer or older than it.

Readers (:meth:`WriteAheadBuffer.read_from_exclusive_timetick`) serve the
tailing mode of the switchable scanner; a reader that falls behind eviction
gets :class:`Evicted` and its scanner goes back to the backend.

Bounds: total message bytes (``max_bytes``) and age (``max_age``); the oldest
whole batches go first, the newest batch always stays (a reader at the tail
must be able to start even if one batch alone is larger than the bound).

Lifetime: created by ``WAL.start`` after the term's first TimeTick, closed by
``WAL.close`` once the writer has drained; readers then deliver what is left
and end.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass

import structlog

from common.errors import InvalidArgument, StrataError
from common.message import size_bound
from protos.common_pb2 import Message, MessageType
from streamingnode.walimpls.wal import MessageID

Entry = tuple[MessageID, Message]
"""``(message_id, message)``; a volatile TimeTick carries the id of the last persisted message."""


class Evicted(Exception):
    """What a reader asked for is no longer held; read it from the backend instead.

    Deliberately not a ``StrataError``: it is control flow between the buffer
    and the scanner and never crosses a service edge.
    """


@dataclass(frozen=True, slots=True, kw_only=True)
class BufferOptions:
    """Bounds of a :class:`WriteAheadBuffer`.

    Attributes:
        max_bytes: total size of the held messages (``size_bound``); the oldest
            batches are evicted beyond it.
        max_age: seconds a batch stays at most.
    """

    max_bytes: int = 64 * 1024 * 1024
    max_age: float = 30.0

    def validate(self) -> None:
        if self.max_bytes <= 0:
            raise InvalidArgument(f"write-ahead buffer max_bytes must be positive, got {self.max_bytes}")
        if self.max_age <= 0:
            raise InvalidArgument(f"write-ahead buffer max_age must be positive, got {self.max_age}")


@dataclass(slots=True)
class _Batch:
    seq: int  # position in the buffer's sequence of batches, grows by one
    entries: list[Entry]  # messages in timetick order, the TimeTick last
    tick: int  # timetick of the closing TimeTick
    size: int
    appended_at: float
    persisted: bool  # False for a lone volatile TimeTick


class WriteAheadBuffer:
    """Recent batches of one WAL, in timetick order, bounded by bytes and age.

    Used on the event loop only. ``start_timetick``/``start_id`` are the
    term's first TimeTick (written before the buffer exists): the buffer
    holds everything of this term after it.
    """

    def __init__(
        self,
        *,
        start_timetick: int,
        start_id: MessageID,
        options: BufferOptions | None = None,
        clock: Callable[[], float] = time.monotonic,
        channel: str = "",
    ) -> None:
        self._options = options or BufferOptions()
        self._options.validate()
        self._clock = clock
        self._batches: dict[int, _Batch] = {}
        self._first_seq = 0  # oldest held batch
        self._next_seq = 0  # seq of the next batch appended
        self._bytes = 0
        self._last_tick = start_timetick
        # Every message with a timetick above this is still held (or not yet
        # appended): it is the tick of the newest evicted batch that held
        # persisted messages. Evicted lone volatile TimeTicks do not move it:
        # a reader that skips them misses nothing but superseded progress.
        self._covered_after = start_timetick
        self._last_persisted = (start_id, start_timetick)
        self._closed = False
        self._appended = asyncio.Event()
        self.evicted_batches = 0
        self._log = structlog.get_logger().bind(component="wal-wab", pchannel=channel)

    # -- writer side -----------------------------------------------------------

    def append_batch(self, entries: Sequence[Entry], tick: Entry, *, wake: bool = True) -> None:
        """Add persisted ``entries`` and the persisted TimeTick written after them.

        With ``wake=False`` waiting readers are not woken: the writer calls
        :meth:`wake_readers` once it has answered its own callers.
        Raises ``StrataError`` if timeticks do not grow (a bug in the writer).
        """
        tick_id, tick_msg = tick
        self._push(list(entries), tick_id, tick_msg, persisted=True, wake=wake)
        self._last_persisted = (tick_id, tick_msg.timetick)

    def wake_readers(self) -> None:
        """Wake the readers waiting for a batch (after ``append_batch(..., wake=False)``)."""
        self._wake()

    def append_volatile_tick(self, tick: Message, last_persisted: MessageID) -> None:
        """Add a TimeTick that was not written; readers get it with ``last_persisted`` as its id."""
        self._push([], last_persisted, tick, persisted=False)

    def invalidate(self, through_timetick: int) -> None:
        """Forget every batch: an append failed and may or may not be in the log.

        ``through_timetick`` is the highest timetick the failed append used.
        Readers get :class:`Evicted` and re-read the backend; the buffer
        covers again from the next batch appended.
        """
        self._batches.clear()
        self.evicted_batches += self._next_seq - self._first_seq
        # Skip one seq so that readers waiting for the next batch are evicted too.
        self._next_seq += 1
        self._first_seq = self._next_seq
        self._bytes = 0
        self._covered_after = max(self._covered_after, through_timetick)
        self._last_tick = max(self._last_tick, through_timetick)
        self._log.warning("write-ahead buffer invalidated", through_timetick=through_timetick)
        self._wake()

    def close(self) -> None:
        """No more appends; readers deliver what is held and then end."""
        self._closed = True
        self._wake()

    # -- reader side -----------------------------------------------------------

    def read_from_exclusive_timetick(self, timetick: int) -> WriteAheadBufferReader:
        """A reader of every held message with a timetick above ``timetick``, then of new ones.

        It does not block. Lone volatile TimeTicks evicted since may be
        skipped. Raises :class:`Evicted` if persisted messages above
        ``timetick`` were evicted or belong to an earlier term.
        """
        self._evict()
        if timetick < self._covered_after:
            raise Evicted(f"timetick {timetick} is below the held range (after {self._covered_after})")
        # First held batch whose TimeTick is above ``timetick``: every
        # batch before it holds only timeticks <= ``timetick``.
        lo, hi = self._first_seq, self._next_seq
        while lo < hi:
            mid = (lo + hi) // 2
            if self._batches[mid].tick <= timetick:
                lo = mid + 1
            else:
                hi = mid
        return WriteAheadBufferReader(self, lo, timetick)

    @property
    def last_timetick(self) -> int:
        """The newest TimeTick appended (persisted or volatile)."""
        return self._last_tick

    @property
    def last_persisted(self) -> tuple[MessageID, int]:
        """Id and timetick of the newest persisted TimeTick appended (or of the start tick)."""
        return self._last_persisted

    @property
    def first_timetick(self) -> int | None:
        """Timetick of the oldest held message (None when nothing is held)."""
        batch = self._batches.get(self._first_seq)
        return None if batch is None else batch.entries[0][1].timetick

    @property
    def size_bytes(self) -> int:
        return self._bytes

    @property
    def batch_count(self) -> int:
        return self._next_seq - self._first_seq

    @property
    def closed(self) -> bool:
        return self._closed

    def evict(self) -> None:
        """Drop batches past the bounds now (also done on every append)."""
        self._evict()

    # -- internals ------------------------------------------------------------------

    def _push(
        self, entries: list[Entry], tick_id: MessageID, tick: Message, *, persisted: bool, wake: bool = True
    ) -> None:
        if self._closed:
            raise StrataError("write-ahead buffer is closed")
        if tick.type != MessageType.TIME_TICK:
            raise StrataError(f"a batch must end with a TimeTick, got message type {tick.type}")
        if tick.timetick <= self._last_tick:
            raise StrataError(f"timetick went backwards: {tick.timetick} after {self._last_tick}")
        size = size_bound(tick)
        previous = self._last_tick
        first = True
        for _, msg in entries:
            # Messages of one transaction share a timetick, so equal neighbours are allowed.
            low_ok = previous < msg.timetick if first else previous <= msg.timetick
            if not (low_ok and msg.timetick < tick.timetick):
                raise StrataError(
                    f"message timetick {msg.timetick} out of order in batch ({previous}, {tick.timetick})"
                )
            previous, first = msg.timetick, False
            size += size_bound(msg)
        entries.append((tick_id, tick))
        seq = self._next_seq
        self._batches[seq] = _Batch(seq, entries, tick.timetick, size, self._clock(), persisted)
        self._next_seq = seq + 1
        self._bytes += size
        self._last_tick = tick.timetick
        self._evict()
        if wake:
            self._wake()

    def _evict(self) -> None:
        opts = self._options
        too_old = self._clock() - opts.max_age
        while self._next_seq - self._first_seq > 1:
            oldest = self._batches[self._first_seq]
            if self._bytes <= opts.max_bytes and oldest.appended_at >= too_old:
                return
            del self._batches[self._first_seq]
            self._first_seq += 1
            self._bytes -= oldest.size
            self.evicted_batches += 1
            if oldest.persisted:
                self._covered_after = oldest.tick

    def _wake(self) -> None:
        event, self._appended = self._appended, asyncio.Event()
        event.set()

    def _batch(self, seq: int) -> _Batch | None:
        """The batch ``seq``; None if not appended yet; raises :class:`Evicted` if gone."""
        if seq < self._first_seq:
            raise Evicted(f"batch {seq} was evicted (oldest held is {self._first_seq})")
        return self._batches.get(seq)

    async def _wait_append(self) -> None:
        await self._appended.wait()


class WriteAheadBufferReader:
    """Iterates ``(message_id, message)`` of a buffer after a timetick, then tails it.

    ``__anext__`` returns at once when a message is held, otherwise waits for
    the next append (cancelling the wait loses nothing). It raises
    :class:`Evicted` when the next message was evicted before it was read,
    and ends (``StopAsyncIteration``) once the buffer is closed and drained.
    Messages are shared with other readers: do not modify them.
    """

    def __init__(self, buffer: WriteAheadBuffer, seq: int, after_timetick: int) -> None:
        self._buffer = buffer
        self._seq = seq
        self._pos = 0
        self._after = after_timetick

    def __aiter__(self) -> AsyncIterator[Entry]:
        return self

    async def __anext__(self) -> Entry:
        while True:
            batch = self._buffer._batch(self._seq)
            if batch is None:
                if self._buffer.closed:
                    raise StopAsyncIteration
                await self._buffer._wait_append()
                continue
            if self._pos == len(batch.entries):
                self._seq += 1
                self._pos = 0
                continue
            entry = batch.entries[self._pos]
            self._pos += 1
            if entry[1].timetick > self._after:
                return entry

    def take_ready(self, limit: int) -> list[Entry]:
        """Up to ``limit`` held entries without waiting (maybe none); raises :class:`Evicted`."""
        out: list[Entry] = []
        while len(out) < limit:
            batch = self._buffer._batch(self._seq)
            if batch is None:
                break
            entries = batch.entries
            if self._pos == len(entries):
                self._seq += 1
                self._pos = 0
                continue
            end = min(len(entries), self._pos + limit - len(out))
            for entry in entries[self._pos : end]:
                if entry[1].timetick > self._after:
                    out.append(entry)
            self._pos = end
        return out
