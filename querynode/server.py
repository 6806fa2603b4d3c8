"""Composition root of the query node. A proxy in the same process is wired by ``launch/colocated.py``."""

from __future__ import annotations

import asyncio

import grpc

from common.config import QueryNodeConfig
from common.coordclient import CoordinatorClient
from common.etcd.metastore import MetaStore
from common.etcd.session import Session, SessionInfo, allocate_server_id
from common.grpcutil import Health, start_server
from common.readiness import role_reasons
from common.statemetrics import StateMetrics
from common.storage.objectstore import ObjectStore
from protos import querynode_pb2, querynode_pb2_grpc
from querynode.service.service import QueryNodeService
from streamingnode.client.assignment import DiscoverWatcher

ROLE = "querynode"
# Health-check names (grpc.health.v1): SERVING once the session is registered.
HEALTH_SERVICES = [s.full_name for s in querynode_pb2.DESCRIPTOR.services_by_name.values()]


class QueryNode:
    def __init__(self, config: QueryNodeConfig) -> None:
        config.validate()
        self.config = config
        self.address = ""
        self._health = Health(HEALTH_SERVICES)

    async def start(self) -> None:
        c = self.config
        self._store = await MetaStore.connect(c.common.etcd, c.common.etcd_root)
        self._coord = CoordinatorClient(self._store)
        self._watcher = DiscoverWatcher(self._coord)
        await self._watcher.start()
        node_id = await allocate_server_id(self._store)
        storage = await asyncio.to_thread(ObjectStore.from_uri, c.storage)
        self._service = QueryNodeService(node_id, self._watcher, storage)
        service = self._service

        def add(server: grpc.aio.Server) -> None:
            querynode_pb2_grpc.add_QueryNodeServicer_to_server(service, server)

        self._server, port = await start_server(add, host=c.common.host, port=c.common.port, health=self._health)
        self.address = f"{c.common.host}:{port}"
        service.serve_at(self.address)
        # A lost session releases every delegator, and the node comes back under a new id:
        # the coordinator has placed its channels elsewhere meanwhile.
        def registered(info: SessionInfo) -> None:
            service.node_id = info.server_id

        self._session = Session(
            self._store,
            ROLE,
            self.address,
            ttl_seconds=c.common.session_ttl_seconds,
            on_lost=service.release_all,
            on_registered=registered,
        )
        await self._session.start(server_id=node_id)
        self._state_metrics = StateMetrics(service.state_samples)
        self._state_metrics.start()
        await self._health.serving()

    @property
    def service(self) -> QueryNodeService:
        """The gRPC servicer of both roles, once started (a proxy in this process reads through it)."""
        return self._service

    async def health_reasons(self) -> list[str]:
        """Why this node cannot serve reads now (empty: it can): not serving, session lost, a broken delegator."""
        reasons = role_reasons(ROLE, self._health, getattr(self, "_session", None))
        service: QueryNodeService | None = getattr(self, "_service", None)
        for vchannel, d in sorted(service.delegators.items()) if service is not None else []:
            if d.broken:
                reasons.append(f"delegator of {vchannel} is broken (waiting to be watched again)")
        return reasons

    async def stop(self) -> None:
        if hasattr(self, "_state_metrics"):
            self._state_metrics.stop()
        await self._health.stopping()
        await self._session.stop()
        await self._server.stop(grace=1)
        await self._service.close()
        await self._watcher.stop()
        await self._coord.close()
        await self._store.close()
