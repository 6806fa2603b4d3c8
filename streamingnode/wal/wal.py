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
from collections.abc import AsyncIterator, Sequence

from common.errors import (
    WALClosed,
)
from common.failpoints import failpoint
from common.message import Outgoing, TimeTick
from common.position import Position
from protos.common_pb2 import Message
from streamingnode.wal.scanner import SwitchableScanner
from streamingnode.wal.state import Appended, PendingAppend
from streamingnode.wal.wab import WriteAheadBuffer
from streamingnode.wal.writer import GroupCommit
from streamingnode.walimpls.wal import DeliverPolicy, MessageID

__all__ = ["WAL", "Appended"]


class WAL(GroupCommit):
    """One pchannel's WAL at one term; see the module docstring, and ``WALState`` for the arguments."""

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

    async def append(self, messages: Sequence[Message], *, txn: bool = False) -> list[Appended]:
        """Persist ``messages`` in order; returns ids and timeticks once fsync'd.

        Each message is decoded here, once (a message Strata cannot read raises
        ``MalformedMessage`` and nothing of the append is written); see :meth:`append_typed`,
        which this is, for the rest.
        """
        return await self.append_typed([Outgoing.decoded(m) for m in messages], txn=txn)

    async def append_typed(self, messages: Sequence[Outgoing], *, txn: bool = False) -> list[Appended]:
        """Persist ``messages`` (envelopes with their typed forms) in order; returns ids and
        timeticks once fsync'd. A producer in this process calls this: what it built is never
        decoded.

        With ``txn`` they form one transaction: one timetick for all, written in one batch
        before the next TimeTick, so a reader at any timestamp sees all of them or none.
        The WAL takes the messages over: it stamps the envelopes in place (segment, timetick,
        term) and hands them to its readers, so the caller must not use or change them after
        the call, whatever its outcome. Copying a 512 KiB Insert costs more than its fsync's
        share of the CPU (fresh pages). Both callers drop the messages afterwards: the Produce
        handler its request, and a producer in this process (``streamingnode/client/local.py``)
        the messages it built, which it encodes again from their typed forms before a retry.
        """
        if self._closing:
            raise WALClosed(f"wal {self.channel} (term {self.term}) is closing")
        if not messages:
            return []
        fut: asyncio.Future[list[Appended]] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait(PendingAppend(messages, fut, txn))
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
