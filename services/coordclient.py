"""How every role finds and calls the active coordinator: its etcd session, never a fixed address."""

from __future__ import annotations

import asyncio

import grpc

from protos import coordinator_pb2_grpc
from services.errors import NotReady
from services.etcd.metastore import MetaStore
from services.etcd.session import list_sessions
from services.grpcutil import insecure_channel

COORDINATOR_ROLE = "coordinator"


class CoordinatorClient:
    """A stub to the coordinator that follows its session in etcd."""

    def __init__(self, store: MetaStore) -> None:
        self._store = store
        self._address: str | None = None
        self._channel: grpc.aio.Channel | None = None
        self._stub: coordinator_pb2_grpc.CoordinatorStub | None = None
        self._lock = asyncio.Lock()

    async def stub(self, *, timeout: float = 30.0) -> coordinator_pb2_grpc.CoordinatorStub:
        """The current coordinator's stub; waits up to ``timeout`` for one to register."""
        if self._stub is not None:
            return self._stub
        async with self._lock:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + timeout
            while self._stub is None:
                sessions = await list_sessions(self._store, COORDINATOR_ROLE)
                if sessions:
                    self._address = max(sessions, key=lambda s: s.server_id).address
                    self._channel = insecure_channel(self._address)
                    self._stub = coordinator_pb2_grpc.CoordinatorStub(self._channel)
                    break
                if loop.time() > deadline:
                    raise NotReady("no coordinator is registered in etcd")
                await asyncio.sleep(0.1)
            return self._stub

    async def reset(self) -> None:
        """Forget the cached address (after a connection error) so the next call looks it up again."""
        async with self._lock:
            if self._channel is not None:
                await self._channel.close()
            self._channel = self._stub = self._address = None

    async def close(self) -> None:
        await self.reset()
