"""Fakes shared by the streaming-node tests."""

from __future__ import annotations

from common.errors import StrataError


class CountingAllocator:
    """Consecutive ints from ``start``: stands in for the coordinator's TSO or id allocator.

    Setting ``fail`` makes every allocation raise, as an unreachable coordinator would.
    """

    def __init__(self, start: int = 1, *, name: str = "allocator") -> None:
        self.next = start
        self.name = name
        self.fail = False

    async def allocate(self, count: int) -> int:
        if self.fail:
            raise StrataError(f"{self.name} unavailable")
        first = self.next
        self.next += count
        return first

    async def allocate_fresh(self, count: int) -> int:
        return await self.allocate(count)
