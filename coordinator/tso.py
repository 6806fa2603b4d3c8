"""The timestamp oracle: hybrid timestamps that never go back.

A timestamp is ``(physical_ms << 18) | logical``. The coordinator persists a
*high-water mark* (a physical time ahead of now) in etcd before it issues any
timestamp below it, so after a restart or failover it starts above every
timestamp it may have handed out.
"""

from __future__ import annotations

import asyncio
import time

from common.etcd.metastore import MetaStore
from common.tsoutil import LOGICAL_BITS, LOGICAL_MASK, compose, physical_ms

__all__ = ["LOGICAL_BITS", "TimestampOracle", "compose", "physical_ms"]

_KEY = "tso/high-water-ms"
_WINDOW_MS = 3_000


class TimestampOracle:
    """Allocates strictly increasing timestamps; safe for concurrent callers."""

    def __init__(self, store: MetaStore) -> None:
        self._store = store
        self._lock = asyncio.Lock()
        self._physical = 0
        self._logical = 0
        self._saved_ms = 0

    async def start(self) -> None:
        raw = await self._store.get(_KEY)
        self._saved_ms = int(raw) if raw else 0
        # Everything below the saved mark may have been issued already.
        self._physical = self._saved_ms
        self._logical = 0
        await self._persist(max(self._now(), self._physical) + _WINDOW_MS)

    @staticmethod
    def _now() -> int:
        return int(time.time() * 1000)

    async def _persist(self, mark: int) -> None:
        await self._store.put(_KEY, str(mark).encode())
        self._saved_ms = mark

    async def allocate(self, count: int = 1) -> int:
        """Return the first of ``count`` consecutive timestamps."""
        if count < 1 or count > LOGICAL_MASK:
            raise ValueError(f"cannot allocate {count} timestamps at once")
        async with self._lock:
            now = self._now()
            if now > self._physical:
                self._physical, self._logical = now, 0
            if self._logical + count > LOGICAL_MASK:
                self._physical, self._logical = self._physical + 1, 0
            if self._physical >= self._saved_ms:
                await self._persist(self._physical + _WINDOW_MS)
            first = compose(self._physical, self._logical)
            self._logical += count
            return first
