"""Timestamps for a WAL, taken from the coordinator's TSO."""

from __future__ import annotations

from typing import Protocol

from protos import coordinator_pb2
from services.coordclient import CoordinatorClient
from services.grpcutil import raise_for_status


class TimestampSource(Protocol):
    async def allocate(self, count: int) -> int:
        """First of ``count`` consecutive fresh timestamps."""
        ...


class CoordinatorTimestamps:
    """Fresh timestamps per call (one RPC per group-commit batch, not per message)."""

    def __init__(self, coord: CoordinatorClient) -> None:
        self._coord = coord

    async def allocate(self, count: int) -> int:
        stub = await self._coord.stub()
        resp = await stub.AllocTimestamp(coordinator_pb2.AllocTimestampRequest(count=count), timeout=10)
        raise_for_status(resp.status)
        return int(resp.timestamp)
