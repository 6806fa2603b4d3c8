"""The switchable scanner behind ``WAL.read``: catch up from the backend, tail from memory.

A scanner starts in **catch-up** mode, reading the backend from its deliver
policy. It switches to **tailing** mode, reading the write-ahead buffer,
either

* after delivering a TimeTick(T) when the buffer still holds everything
  after T (``read_from_exclusive_timetick(T)``), or
* as soon as it has consumed the backend up to the newest persisted TimeTick
  the buffer knows of: whatever follows is in the buffer, or will be.

When the tailing reader is evicted it falls back to catch-up, restarting the
backend at the last consumed message's ``last_confirmed`` (START_FROM). One
rule makes every switch exactly-once: a message whose (timetick, id) is not
above the highest one already consumed is dropped (the messages of one
transaction share a timetick and differ by id). It removes the duplicates a
restart re-reads and a stale owner's late writes alike, and it keeps
delivered timeticks strictly increasing.

Transitions (``mode``)::

    CATCH_UP -> TAILING    (TimeTick held by the buffer, or backend consumed up to the buffer)
    TAILING  -> CATCH_UP   (the reader was evicted)
    any      -> ended      (the WAL closed, or the consumer left / was cancelled)

Backend errors back off (100 ms doubling to 5 s) and the backend is reopened
at the same position; only cancellation or the WAL closing ends a scanner.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from enum import Enum

import structlog

from common.errors import InvalidArgument, PositionTruncated, WALClosed
from protos.common_pb2 import Message, MessageType
from streamingnode.wal.holds import ReadHolds
from streamingnode.wal.wab import Entry, Evicted, WriteAheadBuffer, WriteAheadBufferReader
from streamingnode.walimpls.wal import DeliverPolicy, DeliverPolicyKind, LogEntry, MessageID, Scanner, WALImpl


class ScanMode(Enum):
    CATCH_UP = "catch_up"
    TAILING = "tailing"


class _Step(Enum):
    SWITCHED = "switched"  # the mode changed: read again
    END = "end"  # the WAL closed: stop


@dataclass(frozen=True, slots=True, kw_only=True)
class Backoff:
    """Delays between attempts to reopen a failing backend scanner."""

    initial: float = 0.1
    maximum: float = 5.0
    multiplier: float = 2.0

    def validate(self) -> None:
        if not 0 < self.initial <= self.maximum or self.multiplier < 1:
            raise InvalidArgument(f"invalid backoff {self}")

    def next(self, delay: float | None) -> float:
        """The delay after ``delay`` (None: the first one)."""
        return self.initial if delay is None else min(delay * self.multiplier, self.maximum)


@dataclass(slots=True)
class ScannerStats:
    """Counters of one scanner, for tests, benchmarks and logs."""

    to_tailing: int = 0
    to_catch_up: int = 0
    from_backend: int = 0  # entries consumed in catch-up mode
    from_buffer: int = 0  # entries consumed in tailing mode
    dropped: int = 0  # duplicates and stale messages
    backend_errors: int = 0


Sleep = Callable[[float], Awaitable[None]]


class _Restart(Exception):
    """The backend scanner failed or ended while the WAL is open: reopen it."""


class SwitchableScanner:
    """Delivers one WAL's messages exactly once, in timetick order, across mode switches.

    Iterate it once (``async for message_id, message in scanner``). Yields
    the messages of ``vchannel`` (all when empty) and every TimeTick; a
    volatile TimeTick comes with the id of the last persisted message before
    it, so resuming after any delivered id misses nothing. Iteration ends
    when the WAL closes (``is_closing()`` turns true, the backend refuses
    with ``WALClosed`` or the buffer closes); leaving the loop or cancelling
    releases the backend scanner.
    """

    def __init__(
        self,
        *,
        impl: WALImpl,
        buffer: WriteAheadBuffer | None,
        policy: DeliverPolicy,
        vchannel: str = "",
        is_closing: Callable[[], bool] = lambda: False,
        backoff: Backoff | None = None,
        sleep: Sleep = asyncio.sleep,
        holds: ReadHolds | None = None,
    ) -> None:
        self._impl = impl
        self._holds = holds
        self._buffer = buffer
        self._vchannel = vchannel
        self._is_closing = is_closing
        self._backoff = backoff or Backoff()
        self._backoff.validate()
        self._sleep = sleep
        if policy.kind == DeliverPolicyKind.LATEST:
            # Pin "latest" to a position, so that a restart does not skip what came since.
            last = impl.last_message_id()
            policy = DeliverPolicy.start_after(last) if last is not None else DeliverPolicy.all()
        self._start = policy  # where the backend restarts before anything was consumed
        # Highest timetick consumed: anything at or below it is a duplicate or stale.
        self._high = 0
        self._high_id: MessageID | None = None
        # Every persisted message up to this id has been consumed (or is excluded by the policy).
        self._last_id: MessageID | None = policy.message_id if policy.kind == DeliverPolicyKind.START_AFTER else None
        self._mode = ScanMode.CATCH_UP
        self._reader: WriteAheadBufferReader | None = None
        self._backend: Scanner | None = None
        self._entries: AsyncIterator[LogEntry] | None = None
        self._iterated = False
        # What the WAL must not truncate while this scanner exists: where it would restart the backend.
        self._hold = None if holds is None else holds.open(self._start.message_id)
        self.stats = ScannerStats()
        self._log = structlog.get_logger().bind(component="wal-scanner", pchannel=impl.channel, term=impl.term)

    @property
    def mode(self) -> ScanMode:
        return self._mode

    def release(self) -> None:
        """Let the WAL truncate past this scanner (iteration does it when it ends; a scanner that is
        never iterated must be released by its owner)."""
        if self._hold is not None and self._holds is not None:
            self._holds.close(self._hold)

    def __aiter__(self) -> AsyncIterator[tuple[MessageID, Message]]:
        if self._iterated:
            raise RuntimeError("a SwitchableScanner is iterated once")
        self._iterated = True
        return self._run()

    async def _run(self) -> AsyncIterator[tuple[MessageID, Message]]:
        vchannel = self._vchannel
        holds, hold = self._holds, self._hold
        try:
            while True:
                if hold is not None and hold.abandoned:
                    raise PositionTruncated(
                        f"the reader of {self._impl.channel} at {hold.position} was idle too long; the log "
                        "may have been truncated past it"
                    )
                if self._mode is ScanMode.TAILING:
                    entry = await self._next_from_buffer()
                else:
                    entry = await self._next_from_backend()
                if entry is _Step.SWITCHED:
                    continue
                if entry is _Step.END:
                    return
                message_id, msg = entry
                if msg.timetick < self._high or (
                    msg.timetick == self._high and self._high_id is not None and message_id <= self._high_id
                ):
                    self.stats.dropped += 1
                    continue
                # A transaction's messages share one timetick: they are told apart by id.
                self._high, self._high_id = msg.timetick, message_id
                if msg.last_confirmed:
                    self._start = DeliverPolicy.start_from(MessageID.from_bytes(msg.last_confirmed))
                if hold is not None and holds is not None:
                    holds.move(hold, self._start.message_id)
                is_tick = msg.type == MessageType.TIME_TICK
                if is_tick and self._mode is ScanMode.CATCH_UP:
                    await self._try_tail(msg.timetick)
                if is_tick or not vchannel or msg.vchannel == vchannel:
                    yield message_id, msg
        finally:
            self.release()
            await self._close_backend()

    async def _next_from_buffer(self) -> Entry | _Step:
        """The next buffered entry, or how the mode changed."""
        assert self._reader is not None
        try:
            entry = await anext(self._reader)
        except Evicted:
            self._reader = None
            self._mode = ScanMode.CATCH_UP
            self.stats.to_catch_up += 1
            self._log.debug("tailing reader evicted", high=self._high, restart=str(self._start.message_id))
            return _Step.SWITCHED
        except StopAsyncIteration:
            return _Step.END
        self.stats.from_buffer += 1
        self._last_id = entry[0]
        return entry

    async def _next_from_backend(self) -> Entry | _Step:
        """The next backend entry, or how the mode changed."""
        delay: float | None = None
        while True:
            if self._caught_up_with_buffer():
                assert self._buffer is not None
                # Whatever follows is above the buffer's newest persisted TimeTick,
                # which it covers, unless a failed append invalidated it.
                with contextlib.suppress(Evicted):
                    reader = self._buffer.read_from_exclusive_timetick(self._buffer.last_persisted[1])
                    await self._switch_to_tailing(reader)
                    return _Step.SWITCHED
            try:
                entry = await self._read_backend()
            except (WALClosed, StopAsyncIteration):
                return _Step.END
            except _Restart as err:
                await self._close_backend()
                if self._is_closing():
                    return _Step.END
                self.stats.backend_errors += 1
                delay = self._backoff.next(delay)
                self._log.warning("wal scanner failed, retrying", error=repr(err.__cause__ or err), delay=delay)
                await self._sleep(delay)
                continue
            self.stats.from_backend += 1
            if self._last_id is None or entry.message_id > self._last_id:
                self._last_id = entry.message_id  # a restart re-reads older ids
            return entry.message_id, Message.FromString(entry.payload)

    async def _read_backend(self) -> LogEntry:
        """One entry of the backend scanner, opening it if needed.

        Raises WALClosed/StopAsyncIteration when the WAL is closing, ``_Restart`` on other failures.
        """
        try:
            if self._entries is None:
                self._backend = self._impl.read(self._start)
                self._entries = aiter(self._backend)
            return await anext(self._entries)
        except WALClosed:
            raise
        except StopAsyncIteration:
            if self._is_closing():
                raise
            raise _Restart("backend scanner ended while the wal is open") from None
        except Exception as err:  # any backend failure: reopen after a pause
            if self._is_closing():
                raise WALClosed(f"wal {self._impl.channel} closing") from err
            raise _Restart("backend scanner failed") from err

    def _caught_up_with_buffer(self) -> bool:
        """True once every persisted message the buffer knows of has been consumed."""
        if self._buffer is None or self._last_id is None:
            return False
        return self._last_id >= self._buffer.last_persisted[0]

    async def _try_tail(self, timetick: int) -> None:
        if self._buffer is None:
            return
        try:
            reader = self._buffer.read_from_exclusive_timetick(timetick)
        except Evicted:
            return
        await self._switch_to_tailing(reader)

    async def _switch_to_tailing(self, reader: WriteAheadBufferReader) -> None:
        await self._close_backend()
        self._reader = reader
        self._mode = ScanMode.TAILING
        self.stats.to_tailing += 1

    async def _close_backend(self) -> None:
        backend, self._backend, self._entries = self._backend, None, None
        if backend is not None:
            with contextlib.suppress(Exception):  # closing a failed scanner may fail again; it is gone either way
                await backend.close()


