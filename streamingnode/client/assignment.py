"""Where each pchannel lives: a cache of the coordinator's assignment, by version."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Protocol

import grpc
import structlog

from common.coordclient import CoordinatorClient
from common.errors import NotReady, StrataError
from common.tasks import BackgroundTasks
from protos import coordinator_pb2


class AssignmentSource(Protocol):
    async def resolve(self, pchannel: str, *, newer_than_term: int = 0, timeout: float = 30.0) -> tuple[str, int]:
        """``(address, term)`` of the pchannel's owner, waiting for a term above ``newer_than_term``."""
        ...

    async def report_error(self, pchannel: str, term: int, error: str) -> None: ...


class AssignmentCache:
    """Holds the latest assignment snapshot; older versions are rejected."""

    def __init__(self) -> None:
        self._version = -1
        self._owners: dict[str, tuple[str, int]] = {}
        self._changed = asyncio.Condition()

    async def update(self, version: int, owners: dict[str, tuple[str, int]]) -> None:
        async with self._changed:
            if version <= self._version:
                return
            self._version = version
            self._owners = owners
            self._changed.notify_all()

    async def resolve(self, pchannel: str, *, newer_than_term: int = 0, timeout: float = 30.0) -> tuple[str, int]:
        def ready() -> bool:
            owner = self._owners.get(pchannel)
            return owner is not None and owner[1] > newer_than_term

        async with self._changed:
            try:
                async with asyncio.timeout(timeout):
                    await self._changed.wait_for(ready)
            except TimeoutError:
                raise NotReady(f"pchannel {pchannel} has no available streaming node") from None
            return self._owners[pchannel]


class DiscoverWatcher:
    """Follows the coordinator's ``AssignmentDiscover`` stream into an :class:`AssignmentCache`."""

    def __init__(self, coord: CoordinatorClient) -> None:
        self._coord = coord
        self._cache = AssignmentCache()
        self._log = structlog.get_logger().bind(component="assignment-watcher")
        self._tasks = BackgroundTasks("assignment-watcher")

    async def start(self) -> None:
        self._tasks.start(self._run(), name="assignment-discover")

    async def stop(self) -> None:
        await self._tasks.stop()

    async def _run(self) -> None:
        while True:
            try:
                stub = await self._coord.stub()
                async for snap in stub.AssignmentDiscover(coordinator_pb2.AssignmentDiscoverRequest()):
                    owners = {
                        ch.pchannel: (node.address, ch.term) for node in snap.nodes for ch in node.channels
                    }
                    await self._cache.update(snap.version, owners)
            except asyncio.CancelledError:
                raise
            except (grpc.aio.AioRpcError, NotReady) as err:
                self._log.info("discover stream broken, retrying", error=str(err))
                await self._coord.reset()
            except Exception:  # task boundary: this loop must outlive any surprise
                self._log.exception("discover stream failed, retrying")
                await self._coord.reset()
            await asyncio.sleep(0.2)

    async def resolve(self, pchannel: str, *, newer_than_term: int = 0, timeout: float = 30.0) -> tuple[str, int]:
        return await self._cache.resolve(pchannel, newer_than_term=newer_than_term, timeout=timeout)

    async def report_error(self, pchannel: str, term: int, error: str) -> None:
        with contextlib.suppress(grpc.aio.AioRpcError, StrataError):  # NotReady, or the report refused
            stub = await self._coord.stub(timeout=5)
            await stub.ReportAssignmentError(
                coordinator_pb2.ReportAssignmentErrorRequest(pchannel=pchannel, term=term, error=error), timeout=5
            )
