"""Fixtures of the streaming-node client tests."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest

from protos import streaming_pb2_grpc
from services.grpcutil import start_server
from streamingnode.service.handler import HandlerService
from streamingnode.walimpls.registry import build_opener
from streamingnode.walmanager.manager import WALManager
from tests.streamingnode.fakes import CountingAllocator


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[WALManager, str]]:
    """A WAL manager with pchannel ``p0`` open at term 1, behind a real ``Produce`` server on loopback."""
    opener = build_opener("local", root_dir=tmp_path / "wal")
    manager = WALManager(opener, CountingAllocator(), tick_interval=0.05)
    await manager.open("p0", 1)

    def add(server: grpc.aio.Server) -> None:
        streaming_pb2_grpc.add_StreamingNodeHandlerServicer_to_server(HandlerService(manager), server)

    server, port = await start_server(add)
    try:
        yield manager, f"127.0.0.1:{port}"
    finally:
        await server.stop(grace=None)
        await manager.close()
        await opener.close()
