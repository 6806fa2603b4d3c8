"""The coordinator's own view of pchannel owners, for its own appends (DDL)."""

from __future__ import annotations

import asyncio

from common.errors import NotReady
from coordinator.streaming.balancer import StreamingBalancer


class BalancerAssignmentSource:
    """An ``AssignmentSource`` read straight from the balancer (no discover stream)."""

    def __init__(self, balancer: StreamingBalancer) -> None:
        self._balancer = balancer

    async def resolve(self, pchannel: str, *, newer_than_term: int = 0, timeout: float = 30.0) -> tuple[str, int]:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        view = self._balancer.view()
        while True:
            owner = view.owner(pchannel)
            if owner is not None and owner[2] > newer_than_term:
                return owner[1], owner[2]
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise NotReady(f"pchannel {pchannel} has no available streaming node")
            try:
                async with asyncio.timeout(remaining):
                    view = await self._balancer.wait_for_version(view.version)
            except TimeoutError:
                raise NotReady(f"pchannel {pchannel} has no available streaming node") from None

    async def report_error(self, pchannel: str, term: int, error: str) -> None:
        await self._balancer.report_error(pchannel, term)
