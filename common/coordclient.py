"""How every role finds and calls the active coordinator: the leader key in etcd, never a fixed address.

Several coordinators may run; one is active (see ``coordinator.election``) and
holds ``<root>/session/coordinator`` (``LEADER_KEY``), whose value carries its gRPC address once
it serves. Standbys register nothing clients could call.

The client caches one stub per service (``stub_of``). It forgets them when

* a unary call finds the coordinator unreachable (gRPC ``UNAVAILABLE``), or the caller says so
  with :meth:`CoordinatorClient.reset` (after a broken stream), or
* the leader key changes: a background watch, started by the first
  :meth:`CoordinatorClient.stub_of` call and stopped by ``close()``, follows it,
  so callers that never reset still move to a new leader after a failover.
  A broken watch alone (etcd away) does not forget it: see ``_follow_leader``.

Channels are kept per address and reused rather than closed on ``reset()``:
closing a gRPC channel cancels every call in flight on it, including other
callers' calls, and a channel reconnects by itself. They close in ``close()``;
there is one per coordinator address ever seen, i.e. per failover.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar, cast

import grpc
import structlog

from common.errors import NotReady
from common.etcd.metastore import MetaStore
from common.etcd.watch import EtcdWatch
from common.grpcutil import internal_channel
from common.rpcstatus import checked_stub
from common.tasks import BackgroundTasks
from protos import coordinator_pb2_grpc

COORDINATOR_ROLE = "coordinator"
# Held by the active coordinator under its election lease (``coordinator.election``). As in
# Milvus, the active key is the role's session name without a server id: it lives with the
# sessions (``session/coordinator-<id>``), so whatever clears stale sessions (the standalone
# launcher after a kill) clears a dead leader too, and no ``session/<role>-`` scan matches it.
LEADER_KEY = "session/coordinator"

S = TypeVar("S")


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderInfo:
    """Who leads: its server id, and its gRPC address once it serves ("" before)."""

    server_id: int
    address: str = ""

    def to_json(self) -> bytes:
        return json.dumps({"server_id": self.server_id, "address": self.address}).encode()

    @staticmethod
    def from_json(raw: bytes) -> LeaderInfo:
        d = json.loads(raw)
        return LeaderInfo(server_id=int(d["server_id"]), address=str(d.get("address", "")))


async def read_leader(store: MetaStore) -> LeaderInfo | None:
    """The active coordinator, or None if none holds the leader key."""
    raw = await store.get(LEADER_KEY)
    return None if raw is None else LeaderInfo.from_json(raw)


class CoordinatorClient:
    """Stubs to the active coordinator that follow the leader key in etcd.

    The stubs are checked (``common.rpcstatus.checked_stub``): a unary call answered with a
    non-OK status raises its typed error, and one that cannot reach the coordinator forgets it.
    """

    def __init__(self, store: MetaStore) -> None:
        self._store = store
        self._address: str | None = None
        self._channels: dict[str, grpc.aio.Channel] = {}
        self._stubs: dict[object, object] = {}  # stub class -> checked stub on the channel of ``_address``
        self._lock = asyncio.Lock()
        self._watch_task: asyncio.Task[None] | None = None
        self._closed = False
        self._log = structlog.get_logger().bind(component="coordinator-client")
        self._tasks = BackgroundTasks("coordinator-client")

    @property
    def address(self) -> str | None:
        """The address of the coordinator the cached stubs talk to, if any."""
        return self._address

    async def stub(self, *, timeout: float = 30.0) -> coordinator_pb2_grpc.CoordinatorStub:
        """The active coordinator's ``Coordinator`` stub: ``stub_of(CoordinatorStub)``."""
        return await self.stub_of(coordinator_pb2_grpc.CoordinatorStub, timeout=timeout)

    async def stub_of(self, stub_class: Callable[[grpc.aio.Channel], S], *, timeout: float = 30.0) -> S:
        """A checked stub of ``stub_class`` (any service the coordinator serves) on the active coordinator.

        Waits up to ``timeout`` for a leader that serves; raises ``NotReady`` if none does. A unary
        call answered with a non-OK status raises its typed error; one that cannot reach the
        coordinator (gRPC UNAVAILABLE) makes this client forget the address, so the next call reads
        the leader key again, and raises ``StrataError`` UNAVAILABLE
        (``common.rpcstatus.checked_stub``). Stubs are kept per address and class.
        """
        stub = self._stubs.get(stub_class)
        if stub is not None:
            return cast(S, stub)
        async with self._lock:
            if self._closed:
                raise NotReady("coordinator client is closed")
            if self._watch_task is None:
                self._watch_task = self._tasks.start(self._follow_leader(), name="coordinator-leader-watch")
            loop = asyncio.get_running_loop()
            deadline = loop.time() + timeout
            while self._address is None:
                leader = await read_leader(self._store)
                if leader is not None and leader.address:
                    self._use(leader.address)
                    break
                if loop.time() > deadline:
                    raise NotReady("no active coordinator in etcd")
                await asyncio.sleep(0.1)
            address = self._address
            assert address is not None
            stub = self._stubs[stub_class] = checked_stub(
                stub_class(self._channels[address]), unreachable=lambda: self._forget(address), peer="coordinator"
            )
            return cast(S, stub)

    def _use(self, address: str) -> None:
        if address not in self._channels:
            self._channels[address] = internal_channel(address)
        self._address = address
        self._stubs = {}
        self._log.info("coordinator found", address=address)

    def _forget(self, address: str) -> None:
        """Forget the stubs if they still talk to ``address`` (a call to it found it unreachable)."""
        if self._address == address:
            self._stubs, self._address = {}, None

    async def reset(self) -> None:
        """Forget the cached stubs (after a connection error) so the next call reads the leader key again."""
        self._stubs, self._address = {}, None

    async def _follow_leader(self) -> None:
        """Forget the stub whenever the leader key names another address (or disappears).

        A broken watch (etcd restarting or unreachable) keeps the stub: the coordinator it
        names is most likely still serving, and nothing a caller asks it needs etcd on this
        side. Dropping it made every call wait for etcd to find the very same coordinator
        again. It is still safe: a coordinator that loses its lease exits before another can
        be elected (``coordinator.election``), so a stale stub fails fast and callers reset.
        Each new watch is followed by one read of the key, so a change while no watch was
        open is not missed.
        """
        while True:
            try:
                async with EtcdWatch(self._store.client, self._store.full_key(LEADER_KEY)) as watch:
                    # Read only once the watch exists: later changes arrive as its events.
                    self._follow(await read_leader(self._store))
                    async for batch in watch.events():
                        for ev in batch:
                            self._follow(None if ev.value is None else LeaderInfo.from_json(ev.value))
            except asyncio.CancelledError:
                raise
            except Exception as err:  # task boundary: the watch must outlive etcd hiccups
                self._log.warning("leader watch failed, re-watching", error=str(err))
            await asyncio.sleep(0.5)

    def _follow(self, leader: LeaderInfo | None) -> None:
        address = "" if leader is None else leader.address
        if self._address is not None and address != self._address:
            self._log.info("coordinator leader changed", address=address or None)
            self._stubs, self._address = {}, None

    async def close(self) -> None:
        """Stop following the leader and close every channel; later ``stub()`` calls raise ``NotReady``."""
        async with self._lock:
            self._closed = True
            await self._tasks.stop()
            self._watch_task = None
            self._stubs, self._address = {}, None
            channels, self._channels = list(self._channels.values()), {}
        for channel in channels:
            await channel.close()
