"""Segment ids for the shard interceptor, from the coordinator's id allocator."""

from __future__ import annotations

from typing import Protocol

from common.coordclient import CoordinatorClient
from protos import coordinator_pb2


class IDSource(Protocol):
    async def allocate(self, count: int) -> int:
        """First of ``count`` fresh cluster-unique ids."""
        ...


class CoordinatorIDs:
    def __init__(self, coord: CoordinatorClient) -> None:
        self._coord = coord

    async def allocate(self, count: int) -> int:
        stub = await self._coord.stub()
        resp = await stub.AllocID(coordinator_pb2.AllocIDRequest(count=count), timeout=10)
        return int(resp.begin)
