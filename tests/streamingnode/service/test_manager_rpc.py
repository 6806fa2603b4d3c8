"""Assign / Remove / CollectStatus through a real gRPC server over a ``WALManager`` on the ``local`` backend."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest

from common.errors import ErrorCode
from common.grpcutil import internal_channel, start_server
from protos import streaming_pb2, streaming_pb2_grpc
from streamingnode.service.manager import ManagerService
from streamingnode.walimpls.registry import build_opener
from streamingnode.walmanager.manager import WALManager
from tests.streamingnode.fakes import CountingAllocator

pytestmark = pytest.mark.timeout(30)



@dataclass
class Node:
    manager: WALManager
    stub: streaming_pb2_grpc.StreamingNodeManagerStub
    wal_dir: Path

    async def assign(self, pchannel: str, term: int) -> int:
        resp = await self.stub.Assign(streaming_pb2.AssignRequest(pchannel=pchannel, term=term), timeout=10)
        return int(resp.status.code)

    async def remove(self, pchannel: str, term: int) -> int:
        resp = await self.stub.Remove(streaming_pb2.RemoveRequest(pchannel=pchannel, term=term), timeout=10)
        return int(resp.status.code)

    async def status(self) -> dict[str, tuple[int, bool, str]]:
        resp = await self.stub.CollectStatus(streaming_pb2.CollectStatusRequest(), timeout=10)
        return {w.pchannel: (w.term, w.available, w.error) for w in resp.wals}


@pytest.fixture
async def node(tmp_path: Path) -> AsyncIterator[Node]:
    wal_dir = tmp_path / "wal"
    opener = build_opener("local", root_dir=wal_dir)
    manager = WALManager(opener, CountingAllocator(), tick_interval=0.05)

    def add(server: grpc.aio.Server) -> None:
        streaming_pb2_grpc.add_StreamingNodeManagerServicer_to_server(ManagerService(manager), server)

    server, port = await start_server(add, host="127.0.0.1", port=0)
    channel = internal_channel(f"127.0.0.1:{port}")
    try:
        yield Node(manager, streaming_pb2_grpc.StreamingNodeManagerStub(channel), wal_dir)
    finally:
        await channel.close()
        await server.stop(grace=1)
        await manager.close()
        await opener.close()


async def test_assign_remove_and_status(node: Node) -> None:
    assert await node.status() == {}
    assert await node.assign("p0", 1) == ErrorCode.OK
    assert await node.assign("p1", 1) == ErrorCode.OK
    assert await node.status() == {"p0": (1, True, ""), "p1": (1, True, "")}
    assert node.manager.get("p0", 1).term == 1
    assert await node.remove("p1", 1) == ErrorCode.OK
    assert await node.status() == {"p0": (1, True, ""), "p1": (1, False, "")}
    assert await node.remove("p9", 4) == ErrorCode.OK  # never opened here: nothing to close
    assert (await node.status())["p9"] == (4, False, "")


async def test_stale_and_repeated_terms_are_ignored(node: Node) -> None:
    assert await node.assign("p0", 3) == ErrorCode.OK
    assert await node.assign("p0", 3) == ErrorCode.IGNORED_OPERATION
    assert await node.assign("p0", 2) == ErrorCode.IGNORED_OPERATION
    assert await node.remove("p0", 2) == ErrorCode.IGNORED_OPERATION
    assert await node.remove("p0", 3) == ErrorCode.OK
    assert await node.assign("p0", 3) == ErrorCode.IGNORED_OPERATION  # (3,F) -> (3,T) is never allowed
    assert await node.status() == {"p0": (3, False, "")}


async def test_a_higher_term_reopens_the_channel(node: Node) -> None:
    assert await node.assign("p0", 1) == ErrorCode.OK
    first = node.manager.get("p0", 1)
    assert await node.assign("p0", 2) == ErrorCode.OK
    second = node.manager.get("p0", 2)
    assert second is not first and second.term == 2
    assert await node.status() == {"p0": (2, True, "")}
    assert await node.remove("p0", 2) == ErrorCode.OK
    assert await node.assign("p0", 3) == ErrorCode.OK
    assert node.manager.get("p0", 3).term == 3


async def test_concurrent_assigns_leave_the_newest_term(node: Node) -> None:
    codes = await asyncio.gather(*(node.assign("p0", t) for t in (1, 2, 3, 4)))
    assert set(codes) <= {ErrorCode.OK, ErrorCode.IGNORED_OPERATION, ErrorCode.UNMATCHED_CHANNEL_TERM}
    assert ErrorCode.OK in codes
    assert await node.status() == {"p0": (4, True, "")}


async def test_a_fenced_open_is_reported_and_a_later_term_recovers(node: Node) -> None:
    other = build_opener("local", root_dir=node.wal_dir)
    held = await other.open("p0", 5)  # another owner holds the channel with a newer term
    try:
        assert await node.assign("p0", 2) == ErrorCode.CHANNEL_FENCED
        term, available, error = (await node.status())["p0"]
        assert (term, available) == (2, False) and "term 5" in error
        assert await node.remove("p0", 2) == ErrorCode.OK  # the failed open counts as removed
        await held.close()
        assert await node.assign("p0", 6) == ErrorCode.OK
        assert await node.status() == {"p0": (6, True, "")}
    finally:
        await other.close()


async def test_requests_after_close_answer_wal_closed(node: Node) -> None:
    assert await node.assign("p0", 1) == ErrorCode.OK
    await node.manager.close()
    assert await node.assign("p0", 2) == ErrorCode.WAL_CLOSED
    assert await node.remove("p0", 2) == ErrorCode.WAL_CLOSED
    assert await node.status() == {"p0": (1, False, "")}
