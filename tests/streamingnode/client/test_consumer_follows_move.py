"""The consumer leaves an owner that went silent once its pchannel moves to a newer term.

Two in-process streaming nodes on one shared local WAL directory, each behind
its own gRPC server. The first stops answering (as a SIGSTOPped process
would: the connection stays open, nothing arrives); the second takes the
pchannel over at term 2. The consumer must carry on from the second, after the
last message it delivered, with nothing lost or repeated.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pyarrow as pa
import pytest

from common.grpcutil import start_server
from common.message import Insert, decode
from protos import common_pb2, streaming_pb2, streaming_pb2_grpc
from streamingnode.client.assignment import AssignmentCache
from streamingnode.client.consumer import consume
from streamingnode.client.producer import Producer
from streamingnode.service.handler import HandlerService
from streamingnode.walimpls.registry import build_opener
from streamingnode.walmanager.manager import WALManager
from tests.streamingnode.fakes import CountingAllocator

pytestmark = pytest.mark.timeout(60)


class Source(AssignmentCache):
    async def report_error(self, pchannel: str, term: int, error: str) -> None:
        pass


class FreezableHandler(HandlerService):
    """Serves normally until ``frozen`` is set, then holds every Consume stream open and silent."""

    def __init__(self, manager: WALManager) -> None:
        super().__init__(manager)
        self.frozen = asyncio.Event()
        self.consume_calls = 0

    async def Consume(
        self, request: streaming_pb2.ConsumeRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[streaming_pb2.ConsumeResponse]:
        self.consume_calls += 1
        async for resp in super().Consume(request, context):
            if self.frozen.is_set():
                await asyncio.Event().wait()
            yield resp


class Node:
    def __init__(self, wal_dir: Path, clock: CountingAllocator) -> None:
        self.opener = build_opener("local", root_dir=wal_dir)
        self.manager = WALManager(self.opener, clock, tick_interval=0.05)
        self.handler = FreezableHandler(self.manager)
        self.server: grpc.aio.Server | None = None
        self.address = ""

    async def start(self) -> None:
        def add(server: grpc.aio.Server) -> None:
            streaming_pb2_grpc.add_StreamingNodeHandlerServicer_to_server(self.handler, server)

        self.server, port = await start_server(add)
        self.address = f"127.0.0.1:{port}"

    async def stop(self) -> None:
        if self.server is not None:
            await self.server.stop(grace=None)
        await self.manager.close()
        await self.opener.close()


def _insert(i: int) -> Insert:
    return Insert.of(
        vchannel="v0", collection_id=1, partition_id=2, table=pa.table({"id": pa.array([i], pa.int64())})
    )


async def test_a_consumer_moves_from_a_silent_owner_to_the_new_term(tmp_path: Path) -> None:
    clock = CountingAllocator()  # one TSO for both nodes, as the coordinator would be
    old, new = Node(tmp_path / "wal", clock), Node(tmp_path / "wal", clock)
    source = Source()
    producer = Producer(source)
    delivered: list[int] = []
    got = asyncio.Condition()

    async def reader() -> None:
        async for _, msg in consume(source, "p0", "v0"):
            if msg.type == common_pb2.MessageType.INSERT:
                async with got:
                    delivered.extend(decode(msg).table().column("id").to_pylist())
                    got.notify_all()

    async def wait_for(n: int) -> None:
        async with got:
            async with asyncio.timeout(15):
                await got.wait_for(lambda: len(delivered) >= n)

    try:
        await old.start()
        await old.manager.open("p0", 1)
        await source.update(1, {"p0": (old.address, 1)})
        task = asyncio.create_task(reader())
        for i in range(10):
            await producer.append("p0", [_insert(i)], timeout=5)
        await wait_for(10)

        old.handler.frozen.set()  # silent from now on; its stream stays open
        await new.start()
        await new.manager.open("p0", 2)  # takes the shared WAL directory over
        await source.update(2, {"p0": (new.address, 2)})
        for i in range(10, 20):
            await producer.append("p0", [_insert(i)], timeout=5)
        await wait_for(20)
        await asyncio.sleep(0.3)  # room for a duplicate to show up

        assert delivered == list(range(20))
        assert old.handler.consume_calls == 1 and new.handler.consume_calls == 1
        task.cancel()
        await asyncio.wait([task])
    finally:
        await producer.close()
        await new.stop()
        await old.stop()
