"""Cluster-unique int64 ids (collections, partitions, segments, auto_id rows).

Ids are handed out from a range whose end is persisted in etcd before any id
in it is used, so ids never repeat across restarts.
"""

from __future__ import annotations

import asyncio

from common.etcd.metastore import MetaStore

_KEY = "id/high-water"
_BATCH = 100_000
_FIRST_ID = 1_000


class IDAllocator:
    def __init__(self, store: MetaStore) -> None:
        self._store = store
        self._lock = asyncio.Lock()
        self._next = 0
        self._end = 0

    async def start(self) -> None:
        raw = await self._store.get(_KEY)
        self._next = self._end = int(raw) if raw else _FIRST_ID

    async def allocate(self, count: int = 1) -> int:
        """Return the first of ``count`` consecutive ids."""
        if count < 1:
            raise ValueError("count must be positive")
        async with self._lock:
            if self._next + count > self._end:
                self._end = self._next + max(count, _BATCH)
                await self._store.put(_KEY, str(self._end).encode())
            first = self._next
            self._next += count
            return first
