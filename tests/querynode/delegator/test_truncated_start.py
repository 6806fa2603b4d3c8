"""A delegator whose resume position was truncated away reports itself broken; a new watch replaces it.

A real WAL (local backend, small files, recovery snapshots in memory) served by
the streaming node's gRPC handler; the query node's service with a real
delegator. The WAL is truncated past the position the watch names.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pyarrow as pa
import pytest

from common.message import CreateCollection, Insert
from common.position import Position
from common.segment_pb import position_to_pb
from common.storage.objectstore import ObjectStore
from protos import querynode_pb2 as qpb
from querynode.service.service import QueryNodeService
from tests.querynode.delegator.walnode import SCHEMA, Node, P, served_wal

pytestmark = pytest.mark.timeout(60)

V = "p0_1v0"


@pytest.fixture()
async def node(tmp_path: Path) -> AsyncIterator[Node]:
    async with served_wal(tmp_path / "wal", segment_bytes=2048) as served:
        yield served


def _watch(checkpoint: Position) -> qpb.WatchChannelRequest:
    req = qpb.WatchChannelRequest(collection_id=1, vchannel=V, pchannel=P, schema_json=SCHEMA.to_json())
    req.checkpoint.CopyFrom(position_to_pb(checkpoint))
    return req


async def test_a_truncated_start_breaks_the_delegator_and_a_new_watch_recovers(node: Node, tmp_path: Path) -> None:
    wal = node.manager.get(P, 1)
    [created] = await wal.append([CreateCollection(vchannel=V, collection_id=1, schema=SCHEMA).encode()])
    rows = pa.table({"id": pa.array(range(50), pa.int64()), "v": pa.array([[0.0, 1.0]] * 50, pa.list_(pa.float32(), 2))})
    for _ in range(20):
        await wal.append([Insert.of(vchannel=V, collection_id=1, partition_id=2, table=rows).encode()])
    async with asyncio.timeout(5):
        while wal.saved_position is None or wal.saved_position.timetick < created.timetick + 20:
            await asyncio.sleep(0.02)
    await wal.truncate(wal.impl.last_message_id())  # type: ignore[arg-type]
    first = wal.impl.first_message_id()
    assert first is not None and first.seq > created.message_id.seq

    service = QueryNodeService(1, node.source, ObjectStore.from_uri((tmp_path / "storage").as_uri()))
    try:
        stale = Position(created.message_id.to_bytes(), created.timetick)
        await service.WatchChannel(_watch(stale), None)  # type: ignore[arg-type]
        broken = service.delegators[V]
        async with asyncio.timeout(10):
            while not broken.broken:
                await asyncio.sleep(0.02)
        dist = await service.GetDataDistribution(qpb.GetDataDistributionRequest(), None)  # type: ignore[arg-type]
        assert [c.vchannel for c in dist.channels] == []  # left out: the coordinator watches again

        fresh = Position(first.to_bytes(), 0)
        await service.WatchChannel(_watch(fresh), None)  # type: ignore[arg-type]
        replacement = service.delegators[V]
        assert replacement is not broken
        async with asyncio.timeout(10):
            while not (replacement.serviceable and replacement.tsafe.value > 0):
                await asyncio.sleep(0.02)
        assert not replacement.broken
    finally:
        await service.close()
