"""Produce / Consume through a real gRPC server: results, term checks and error codes."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pytest

from common.errors import ErrorCode
from common.grpcutil import internal_channel
from common.message import Insert
from protos import common_pb2, streaming_pb2, streaming_pb2_grpc
from streamingnode.walmanager.manager import WALManager
from tests.streamingnode.served import served_wal

pytestmark = pytest.mark.timeout(30)



@dataclass
class Node:
    manager: WALManager
    stub: streaming_pb2_grpc.StreamingNodeHandlerStub


@pytest.fixture
async def node(tmp_path: Path) -> AsyncIterator[Node]:
    async with served_wal(tmp_path / "wal", "p0", 3) as (manager, address):
        channel = internal_channel(address)
        try:
            yield Node(manager, streaming_pb2_grpc.StreamingNodeHandlerStub(channel))
        finally:
            await channel.close()


def _insert(vchannel: str, i: int) -> common_pb2.Message:
    table = pa.table({"id": pa.array([i], pa.int64())})
    return Insert.of(vchannel=vchannel, collection_id=1, partition_id=2, table=table).encode()


async def _produce(node: Node, requests: list[streaming_pb2.ProduceRequest]) -> list[streaming_pb2.ProduceResponse]:
    call = node.stub.Produce()
    for r in requests:
        await call.write(r)
    out = [await call.read() for _ in requests]
    await call.done_writing()
    return sorted(out, key=lambda r: r.request_id)


async def test_produce_answers_ids_and_timeticks_per_request(node: Node) -> None:
    reqs = [
        streaming_pb2.ProduceRequest(request_id=i, pchannel="p0", term=3, messages=[_insert("v0", i), _insert("v1", i)])
        for i in range(1, 6)
    ]
    resps = await _produce(node, reqs)
    assert [r.request_id for r in resps] == [1, 2, 3, 4, 5]
    assert all(r.status.code == ErrorCode.OK and len(r.results) == 2 for r in resps)
    ticks = [res.timetick for r in resps for res in r.results]
    assert len(set(ticks)) == len(ticks)


async def test_wrong_term_and_unknown_channel_are_typed_errors(node: Node) -> None:
    resps = await _produce(
        node,
        [
            streaming_pb2.ProduceRequest(request_id=1, pchannel="p0", term=2, messages=[_insert("v0", 1)]),
            streaming_pb2.ProduceRequest(request_id=2, pchannel="nope", term=3, messages=[_insert("v0", 1)]),
        ],
    )
    assert resps[0].status.code == ErrorCode.UNMATCHED_CHANNEL_TERM
    assert resps[1].status.code == ErrorCode.CHANNEL_NOT_EXIST
    first = await anext(aiter(node.stub.Consume(streaming_pb2.ConsumeRequest(pchannel="p0", term=4))))
    assert first.status.code == ErrorCode.UNMATCHED_CHANNEL_TERM


async def test_consume_filters_by_vchannel_and_keeps_ticks(node: Node) -> None:
    await _produce(
        node,
        [
            streaming_pb2.ProduceRequest(request_id=i, pchannel="p0", term=3, messages=[_insert(f"v{i % 2}", i)])
            for i in range(6)
        ],
    )
    seen: list[common_pb2.Message] = []
    stream = node.stub.Consume(streaming_pb2.ConsumeRequest(pchannel="p0", term=3, vchannel="v1"))
    async for resp in stream:
        assert resp.status.code == ErrorCode.OK
        seen.extend(item.message for item in resp.messages)
        if sum(m.type == common_pb2.INSERT for m in seen) == 3:
            break
    stream.cancel()
    assert {m.vchannel for m in seen if m.type == common_pb2.INSERT} == {"v1"}
    assert any(m.type == common_pb2.TIME_TICK for m in seen)


async def test_consumer_is_told_when_the_wal_closes(node: Node) -> None:
    stream = node.stub.Consume(streaming_pb2.ConsumeRequest(pchannel="p0", term=3))
    first = await anext(aiter(stream))
    assert first.status.code == ErrorCode.OK
    await node.manager.remove("p0", 3)
    codes = []
    async for resp in stream:
        codes.append(resp.status.code)
        if resp.status.code != ErrorCode.OK:
            break
    assert codes[-1] == ErrorCode.WAL_CLOSED
    await asyncio.sleep(0)
