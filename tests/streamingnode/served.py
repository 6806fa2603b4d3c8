"""A streaming node's WALs behind a real ``StreamingNodeHandler`` gRPC server on loopback."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import grpc

from common.grpcutil import start_server
from protos import streaming_pb2_grpc
from streamingnode.service.handler import HandlerService
from streamingnode.walimpls.registry import build_opener
from streamingnode.walmanager.manager import WALManager
from tests.streamingnode.fakes import CountingAllocator


@contextlib.asynccontextmanager
async def served_wal(root: Path, pchannel: str, term: int) -> AsyncIterator[tuple[WALManager, str]]:
    """A local-WAL manager in ``root`` with ``pchannel`` open at ``term``, and the server's address."""
    opener = build_opener("local", root_dir=root)
    manager = WALManager(opener, CountingAllocator(), tick_interval=0.05)
    await manager.open(pchannel, term)

    def add(server: grpc.aio.Server) -> None:
        streaming_pb2_grpc.add_StreamingNodeHandlerServicer_to_server(HandlerService(manager), server)

    server, port = await start_server(add)
    try:
        yield manager, f"127.0.0.1:{port}"
    finally:
        await server.stop(grace=None)
        await manager.close()
        await opener.close()
