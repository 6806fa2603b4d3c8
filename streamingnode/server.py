"""Composition root of the streaming node: WAL manager, flushers, gRPC services, session.

Start order: etcd store and coordinator client, object storage, flusher manager,
WAL manager (its lifetimes call the flusher hooks), gRPC server, then the session
(the coordinator assigns pchannels once it appears). Stop is the reverse.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import grpc

from common.config import StreamingNodeConfig
from common.coordclient import CoordinatorClient
from common.errors import InvalidArgument
from common.etcd.metastore import MetaStore
from common.etcd.session import Session
from common.grpcutil import Health, start_server
from common.readiness import role_reasons
from common.statemetrics import GaugeSample, StateMetrics
from common.storage.objectstore import ObjectStore
from protos import streaming_pb2, streaming_pb2_grpc
from streamingnode.flusher.dataclient import CoordinatorDataClient
from streamingnode.flusher.flusher import FlusherManager
from streamingnode.flusher.policy import SyncOptions
from streamingnode.metrics import wal_samples
from streamingnode.service.handler import HandlerService
from streamingnode.service.manager import ManagerService
from streamingnode.shard import SealPolicy
from streamingnode.wal.ids import CoordinatorIDs
from streamingnode.wal.recovery import EtcdRecoveryStore
from streamingnode.wal.timestamps import BatchedTimestamps, CoordinatorTimestamps
from streamingnode.walimpls.registry import build_opener
from streamingnode.walmanager.manager import WALManager

ROLE = "streamingnode"


def wal_options(c: StreamingNodeConfig) -> dict[str, Any]:
    """The options of the configured WAL backend (``walimpls.registry.build_opener``)."""
    match c.wal_backend:
        case "local":
            return {"root_dir": c.wal_dir, "segment_bytes": c.wal_segment_bytes}
        case "nats":
            # One stream per pchannel; pchannel names carry the cluster name.
            return {"servers": c.wal_nats_servers, "replicas": c.wal_nats_replicas}
        case other:
            raise InvalidArgument(f"unknown wal backend {other!r}")


# Health-check names (grpc.health.v1): SERVING once the session is registered.
HEALTH_SERVICES = [s.full_name for s in streaming_pb2.DESCRIPTOR.services_by_name.values()]


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
        self._health = Health(HEALTH_SERVICES)
        self._state_metrics = StateMetrics(self._state_samples)

    def _state_samples(self) -> Iterator[GaugeSample]:
        """Each pchannel's term and availability, each vchannel's checkpoint lag and segments."""
        for s in self.manager.states() if self.manager is not None else []:
            yield from wal_samples(s.pchannel, s.term, s.available)
        for flusher in list(self.flushers.flushers.values()) if hasattr(self, "flushers") else []:
            yield from flusher.state_samples()

    async def start(self) -> None:
        c = self.config
        self._store = await MetaStore.connect(c.common.etcd, c.common.etcd_root)
        self._coord = CoordinatorClient(self._store)
        opener = build_opener(c.wal_backend, **wal_options(c))
        storage = await asyncio.to_thread(ObjectStore.from_uri, c.storage)
        # One flusher per open WAL: registered right after the WAL opens, stopped before it closes.
        sync = SyncOptions(
            segment_buffer_bytes=c.flush_segment_buffer_bytes,
            memory_limit_bytes=c.flush_memory_limit_bytes,
            truncate_interval_seconds=c.truncate_interval_seconds,
        )
        self.flushers = FlusherManager(CoordinatorDataClient(self._coord), storage, sync)
        self.manager = WALManager(
            opener,
            BatchedTimestamps(CoordinatorTimestamps(self._coord)),
            tick_interval=c.tick_interval_seconds,
            segment_ids=CoordinatorIDs(self._coord),
            seal_policy=SealPolicy(max_rows=c.segment_max_rows, max_bytes=c.segment_max_bytes),
            on_open=self.flushers.on_open,
            on_close=self.flushers.on_close,
            recovery=EtcdRecoveryStore(self._store),
            read_hold_seconds=c.wal_read_hold_seconds,
        )
        manager = self.manager

        def add(server: grpc.aio.Server) -> None:
            streaming_pb2_grpc.add_StreamingNodeManagerServicer_to_server(ManagerService(manager), server)
            streaming_pb2_grpc.add_StreamingNodeHandlerServicer_to_server(HandlerService(manager), server)

        self._server, port = await start_server(add, host=c.common.host, port=c.common.port, health=self._health)
        self.address = f"{c.common.host}:{port}"
        self._opener = opener
        # Register last: the coordinator may call Assign as soon as the session appears.
        # A lost session (etcd away or this process frozen for a TTL) releases every pchannel:
        # the coordinator gives them to other nodes meanwhile.
        self._session = Session(
            self._store, ROLE, self.address, ttl_seconds=c.common.session_ttl_seconds, on_lost=manager.release_all
        )
        await self._session.start()
        self._state_metrics.start()
        await self._health.serving()

    async def health_reasons(self) -> list[str]:
        """Why this node cannot take appends now (empty: it can): not serving, session lost, a WAL unavailable."""
        reasons = role_reasons(ROLE, self._health, self._session)
        if self._session is None:
            return reasons
        for s in self.manager.states() if self.manager is not None else []:
            if not s.available and s.error:
                reasons.append(f"wal {s.pchannel} term {s.term} unavailable: {s.error}")
        return reasons

    async def stop(self) -> None:
        self._state_metrics.stop()
        await self._health.stopping()
        if self._session is not None:
            await self._session.stop()
        if self._server is not None:
            await self._server.stop(grace=1)
        if self.manager is not None:
            await self.manager.close()
        await self.flushers.close()
        await self._opener.close()
        if self._coord is not None:
            await self._coord.close()
        if self._store is not None:
            await self._store.close()
