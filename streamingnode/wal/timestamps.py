"""Timestamps for a WAL, taken from the coordinator's TSO, one RPC per range rather than per batch.

``BatchedTimestamps`` reserves a range of consecutive timestamps from the TSO
and hands them out locally (MILVUS_NOTES: streaming nodes fetch timestamps in
batches). Two rules keep this as correct as asking the TSO every time:

* **Bounded age.** A range is used for at most ``TIMESTAMP_RANGE_MAX_AGE_S``,
  counted from when it was *requested*, so a timestamp handed out at real time
  t was issued by the TSO after t - max_age, or after the call that got it
  began (the call that refilled the range). Readers waiting for a fresh
  guarantee timestamp (a load's first tsafe) wait at most that much longer
  (a Strong read asks for a TimeTick instead, ``tick_requests.py``), and the coordinator can wait out the bound where it needs every later
  write above a timestamp it issued (an import's, ``coordinator/data/importer.py``).
* **Fresh when it matters.** ``allocate_fresh`` asks the TSO (and starts a new
  range from its answer). The WAL uses it for the first TimeTick of a term
  (larger than anything an older owner reserved), for the volatile TimeTicks of
  an idle WAL (so tsafe passes any timestamp issued before it) and for batches
  carrying a coordinator's message (DDL, ManualFlush: they are stamped above the
  timestamps the coordinator issued before sending them, and so is every later
  message of the pchannel).

Within one process the values only grow: a new range always starts above the
old one, because the TSO is monotonic and ranges are replaced under a lock.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Protocol

from common.coordclient import CoordinatorClient
from common.tsoutil import TIMESTAMP_RANGE_MAX_AGE_S
from protos import coordinator_pb2


class TimestampSource(Protocol):
    async def allocate(self, count: int) -> int:
        """First of ``count`` consecutive timestamps, issued by the TSO at most the range age ago."""
        ...

    async def allocate_fresh(self, count: int) -> int:
        """First of ``count`` consecutive timestamps issued by the TSO after this call began."""
        ...


class CoordinatorTimestamps:
    """Fresh timestamps per call: one ``AllocTimestamp`` RPC each."""

    def __init__(self, coord: CoordinatorClient) -> None:
        self._coord = coord

    async def allocate(self, count: int) -> int:
        stub = await self._coord.stub()
        resp = await stub.AllocTimestamp(coordinator_pb2.AllocTimestampRequest(count=count), timeout=10)
        return int(resp.timestamp)

    async def allocate_fresh(self, count: int) -> int:
        return await self.allocate(count)


class BatchedTimestamps:
    """Ranges of ``batch`` timestamps from ``remote``, each used for at most ``max_age`` seconds.

    Shared by every WAL of a node; see the module docstring for why that is safe.
    """

    def __init__(
        self,
        remote: TimestampSource,
        *,
        batch: int = 1000,
        max_age: float = TIMESTAMP_RANGE_MAX_AGE_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if batch < 1:
            raise ValueError(f"batch must be >= 1, got {batch}")
        if not 0 <= max_age <= TIMESTAMP_RANGE_MAX_AGE_S:
            raise ValueError(f"max_age must be in [0, {TIMESTAMP_RANGE_MAX_AGE_S}] s, got {max_age}")
        self._remote = remote
        self._batch = batch
        self._max_age = max_age
        self._clock = clock
        self._lock = asyncio.Lock()
        self._next = 0  # the range is [_next, _end)
        self._end = 0
        self._requested_at = 0.0
        self.remote_calls = 0

    def _take(self, count: int) -> int | None:
        if self._end - self._next < count or self._clock() - self._requested_at >= self._max_age:
            return None
        first = self._next
        self._next += count
        return first

    async def _refill(self, count: int) -> int:
        """Ask the TSO for a new range holding ``count`` for the caller; returns the caller's first (lock held)."""
        requested_at = self._clock()
        n = max(self._batch, count)
        first = await self._remote.allocate(n)
        self.remote_calls += 1
        if first < self._end:
            raise RuntimeError(f"the TSO went backwards: range at {first}, the previous one ended at {self._end}")
        self._next, self._end, self._requested_at = first + count, first + n, requested_at
        return first

    async def allocate(self, count: int) -> int:
        first = self._take(count)
        if first is not None:
            return first
        async with self._lock:
            first = self._take(count)  # another caller may have refilled while this one waited
            return first if first is not None else await self._refill(count)

    async def allocate_fresh(self, count: int) -> int:
        async with self._lock:
            return await self._refill(count)
