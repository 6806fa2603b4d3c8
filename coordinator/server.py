"""Composition root of the coordinator."""

from __future__ import annotations

import asyncio
import contextlib

import grpc
import structlog

from coordinator.catalog import Catalog
from coordinator.ddl import DDL
from coordinator.idalloc import IDAllocator
from coordinator.query.coord import QueryCoordinator
from coordinator.service import CoordinatorService
from coordinator.streaming.balancer import StreamingBalancer
from coordinator.streaming.local_source import BalancerAssignmentSource
from coordinator.tso import TimestampOracle
from protos import coordinator_pb2_grpc
from services.config import CoordinatorConfig
from services.coordclient import COORDINATOR_ROLE
from services.etcd.metastore import MetaStore
from services.etcd.session import Session
from services.grpcutil import start_server
from streamingnode.client.producer import Producer


def pchannel_names(cluster: str, count: int) -> list[str]:
    return [f"{cluster}-dml_{i}" for i in range(count)]


class Coordinator:
    def __init__(self, config: CoordinatorConfig) -> None:
        config.validate()
        self.config = config
        self.address = ""

    async def start(self) -> None:
        c = self.config
        self._store = await MetaStore.connect(c.common.etcd, c.common.etcd_root)
        self.tso = TimestampOracle(self._store)
        await self.tso.start()
        self.ids = IDAllocator(self._store)
        await self.ids.start()
        self.catalog = Catalog(self._store)
        names = pchannel_names(c.cluster_name, c.pchannel_count)
        self.balancer = StreamingBalancer(self._store, names)
        self.query = QueryCoordinator(self._store, self.catalog, self.tso)
        self._producer = Producer(BalancerAssignmentSource(self.balancer))
        self.ddl = DDL(self.catalog, self.ids, self.tso, self._producer, names, self.query.release)
        service = CoordinatorService(
            tso=self.tso, ids=self.ids, catalog=self.catalog, ddl=self.ddl, balancer=self.balancer, query=self.query
        )

        def add(server: grpc.aio.Server) -> None:
            coordinator_pb2_grpc.add_CoordinatorServicer_to_server(service, server)

        self._server, port = await start_server(add, host=c.common.host, port=c.common.port)
        self.address = f"{c.common.host}:{port}"
        # Other roles find us through this session; streaming nodes need it for timestamps
        # before they can open a WAL, so register before balancing.
        self._session = Session(self._store, COORDINATOR_ROLE, self.address, ttl_seconds=c.common.session_ttl_seconds)
        await self._session.start()
        await self.balancer.start()
        await self.query.start()
        self._recovery = asyncio.create_task(self._recover(), name="ddl-recovery")

    async def _recover(self) -> None:
        # Finishing half-done DDL needs streaming nodes, which may come up after us: retry.
        log = structlog.get_logger().bind(component="coordinator")
        while True:
            try:
                await self.ddl.recover()
                return
            except asyncio.CancelledError:
                raise
            except Exception as err:  # task boundary
                log.warning("ddl recovery failed, retrying", error=str(err))
                await asyncio.sleep(1)

    async def stop(self) -> None:
        self._recovery.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._recovery
        await self.query.stop()
        await self.balancer.stop()
        await self._producer.close()
        await self._session.stop()
        await self._server.stop(grace=1)
        await self._store.close()
