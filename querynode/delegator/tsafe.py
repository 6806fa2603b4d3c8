"""tsafe: the last TimeTick applied, and waiting for it to reach a guarantee timestamp."""

from __future__ import annotations

import asyncio

from common.errors import ReadTimeout
from common.tracing import traced

STALL_TIMEOUT_SECONDS = 3.0


class TSafe:
    def __init__(self) -> None:
        self.value = 0
        self._changed = asyncio.Condition()

    async def advance(self, ts: int) -> None:
        if ts <= self.value:
            return
        async with self._changed:
            self.value = ts
            self._changed.notify_all()

    @traced("delegator.wait_tsafe")
    async def wait(self, guarantee_ts: int, *, timeout: float, what: str) -> int:
        """Wait until tsafe >= ``guarantee_ts``; returns tsafe.

        Fails if tsafe does not move for ``STALL_TIMEOUT_SECONDS`` or the total wait exceeds ``timeout``.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        async with self._changed:
            while self.value < guarantee_ts:
                remaining = min(deadline - loop.time(), STALL_TIMEOUT_SECONDS)
                if remaining <= 0:
                    break
                before = self.value
                try:
                    async with asyncio.timeout(remaining):
                        await self._changed.wait()
                except TimeoutError:
                    if self.value == before:
                        break
            if self.value < guarantee_ts:
                raise ReadTimeout(
                    f"{what}: data is not yet readable at the requested consistency "
                    f"(tsafe {self.value} < guarantee timestamp {guarantee_ts}); "
                    "the streaming node may be unavailable"
                )
            return self.value
