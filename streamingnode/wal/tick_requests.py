"""On-demand TimeTicks: readers asking the writer for a TimeTick at or above a timestamp, coalesced.

A Strong read carries a fresh TSO timestamp ``T`` and may be answered once its
delegator has applied a TimeTick ``>= T``. An idle WAL publishes one only every
``tick_interval``; a writer that is busy stamps its batches from the node's
range of timestamps, which may lie below ``T`` for up to the range's age. So
the delegator asks (``WAL.request_tick``), and the writer publishes a TimeTick
taken fresh from the TSO at its next turn: the TSO is monotonic and ``T`` was
issued before the request, so the tick is above ``T``.

Coalescing: every request waiting when the writer takes its turn is answered
by that one tick (many readers, one tick); a TimeTick the writer publishes
anyway (after a batch, an idle tick) answers those it covers. At most one
on-demand tick per ``min_interval`` seconds: a read-heavy load costs the
pchannel a bounded number of ticks (each one TSO call and one entry in the
write-ahead buffer that every consumer receives), not one per read.

This class decides and keeps the futures; it does no I/O. The WAL's writer
task is its only caller besides ``want`` (all on the event loop).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools

#: Default spacing of on-demand TimeTicks of one pchannel (at most 500 a second).
DEFAULT_MIN_INTERVAL = 0.002


class TickRequests:
    """The outstanding requests for a TimeTick of one WAL.

    Args:
        min_interval: seconds between two on-demand ticks at least.
    """

    def __init__(self, *, min_interval: float = DEFAULT_MIN_INTERVAL) -> None:
        if min_interval < 0:
            raise ValueError(f"min_interval must be >= 0, got {min_interval}")
        self._min_interval = min_interval
        self._waiting: list[tuple[int, int, asyncio.Future[int]]] = []  # heap by timestamp
        self._order = itertools.count()  # ties in the heap never compare futures
        self.last = 0  # the highest TimeTick published so far
        self._ticked_at: float | None = None  # when the last on-demand tick was published
        self.on_demand_ticks = 0  # how many ticks requests caused (tests and metrics read it)

    def want(self, ts: int) -> asyncio.Future[int] | None:
        """A future for the first TimeTick >= ``ts``; None if one was published already (``last`` is it)."""
        if ts <= self.last:
            return None
        fut: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiting, (ts, next(self._order), fut))
        return fut

    @property
    def pending(self) -> bool:
        """Whether a request waits for a TimeTick not published yet."""
        self._drop_cancelled()
        return bool(self._waiting)

    def delay(self, now: float) -> float | None:
        """Seconds until the writer should publish an on-demand tick (0: now); None if nobody waits."""
        if not self.pending:
            return None
        if self._ticked_at is None:
            return 0.0
        return max(0.0, self._ticked_at + self._min_interval - now)

    def ticked(self, timetick: int, now: float) -> None:
        """The writer published an on-demand TimeTick ``timetick``: answer what it covers."""
        self.on_demand_ticks += 1
        self._ticked_at = now
        self.published(timetick)

    def published(self, timetick: int) -> None:
        """A TimeTick ``timetick`` reached the readers: answer every request at or below it."""
        self.last = max(self.last, timetick)
        while self._waiting and self._waiting[0][0] <= timetick:
            _, _, fut = heapq.heappop(self._waiting)
            if not fut.done():
                fut.set_result(timetick)

    def fail_all(self, err: BaseException) -> None:
        """The WAL closes: every waiting request fails with ``err``."""
        waiting, self._waiting = self._waiting, []
        for _, _, fut in waiting:
            if not fut.done():
                fut.set_exception(err)

    def _drop_cancelled(self) -> None:
        """Forget requests whose reader left (a cancelled read cancels its future)."""
        if any(fut.done() for _, _, fut in self._waiting):
            self._waiting = [w for w in self._waiting if not w[2].done()]
            heapq.heapify(self._waiting)
