"""A streaming node's WAL for one pchannel, served over gRPC on loopback, for delegator tests.

A real local-backend WAL (recovery snapshots in memory) behind the streaming
node's handler service, and an assignment source pointing at it, as a query
node's delegator consumes it.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import grpc

from protos import streaming_pb2_grpc
from services.grpcutil import start_server
from services.schema import CollectionSchema, DataType, FieldSchema
from services.tsoutil import compose
from streamingnode.client.assignment import AssignmentCache
from streamingnode.service.handler import HandlerService
from streamingnode.wal.recovery import MemoryRecoveryStore
from streamingnode.walimpls.registry import build_opener
from streamingnode.walmanager.manager import WALManager
from tests.streamingnode.fakes import CountingAllocator

P = "p0"
#: int64 ``id`` and a 2-dimension ``v``.
SCHEMA = CollectionSchema(
    name="c",
    fields=(
        FieldSchema(field_id=100, name="id", dtype=DataType.INT64, is_primary=True),
        FieldSchema(field_id=101, name="v", dtype=DataType.FLOAT_VECTOR, dim=2),
    ),
)


class Source(AssignmentCache):
    async def report_error(self, pchannel: str, term: int, error: str) -> None:
        pass


@dataclass
class Node:
    manager: WALManager
    source: Source


@asynccontextmanager
async def served_wal(root: Path, *, segment_bytes: int) -> AsyncIterator[Node]:
    """Pchannel ``P`` opened at term 1 under ``root``, in WAL files of ``segment_bytes``."""
    opener = build_opener("local", root_dir=root, segment_bytes=segment_bytes, sync=False)
    manager = WALManager(
        opener,
        CountingAllocator(compose(int(time.time() * 1000))),
        tick_interval=0.05,
        recovery=MemoryRecoveryStore(),
        snapshot_interval=0.0,
    )
    await manager.open(P, 1)

    def add(server: grpc.aio.Server) -> None:
        streaming_pb2_grpc.add_StreamingNodeHandlerServicer_to_server(HandlerService(manager), server)

    server, port = await start_server(add)
    source = Source()
    await source.update(1, {P: (f"127.0.0.1:{port}", 1)})
    try:
        yield Node(manager, source)
    finally:
        await server.stop(grace=None)
        await manager.close()
        await opener.close()
