"""Composition root of the streaming node."""

from __future__ import annotations

import grpc

from protos import streaming_pb2_grpc
from services.config import StreamingNodeConfig
from services.coordclient import CoordinatorClient
from services.etcd.metastore import MetaStore
from services.etcd.session import Session
from services.grpcutil import start_server
from streamingnode.service.handler import HandlerService
from streamingnode.service.manager import ManagerService
from streamingnode.wal.ids import CoordinatorIDs
from streamingnode.wal.timestamps import CoordinatorTimestamps
from streamingnode.walimpls.registry import build_opener
from streamingnode.walmanager.manager import WALManager

ROLE = "streamingnode"


class StreamingNode:
    def __init__(self, config: StreamingNodeConfig) -> None:
        config.validate()
        self.config = config
        self.address = ""
        self._store: MetaStore | None = None
        self._coord: CoordinatorClient | None = None
        self._server: grpc.aio.Server | None = None
        self._session: Session | None = None
        self.manager: WALManager | None = None

    async def start(self) -> None:
        c = self.config
        self._store = await MetaStore.connect(c.common.etcd, c.common.etcd_root)
        self._coord = CoordinatorClient(self._store)
        opener = build_opener(c.wal_backend, root_dir=c.wal_dir)
        self.manager = WALManager(
            opener,
            CoordinatorTimestamps(self._coord),
            tick_interval=c.tick_interval_seconds,
            segment_ids=CoordinatorIDs(self._coord),
        )
        manager = self.manager

        def add(server: grpc.aio.Server) -> None:
            streaming_pb2_grpc.add_StreamingNodeManagerServicer_to_server(ManagerService(manager), server)
            streaming_pb2_grpc.add_StreamingNodeHandlerServicer_to_server(HandlerService(manager), server)

        self._server, port = await start_server(add, host=c.common.host, port=c.common.port)
        self.address = f"{c.common.host}:{port}"
        self._opener = opener
        # Register last: the coordinator may call Assign as soon as the session appears.
        # A lost session (etcd away or this process frozen for a TTL) releases every pchannel:
        # the coordinator gives them to other nodes meanwhile.
        self._session = Session(
            self._store, ROLE, self.address, ttl_seconds=c.common.session_ttl_seconds, on_lost=manager.release_all
        )
        await self._session.start()

    async def stop(self) -> None:
        if self._session is not None:
            await self._session.stop()
        if self._server is not None:
            await self._server.stop(grace=1)
        if self.manager is not None:
            await self.manager.close()
        await self._opener.close()
        if self._coord is not None:
            await self._coord.close()
        if self._store is not None:
            await self._store.close()
