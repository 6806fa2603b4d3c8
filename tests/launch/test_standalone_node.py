"""The standalone node wires its proxy's inserts to its own streaming node's WALs.

In process, on a real etcd: a coordinator and a ``StandaloneNode`` (streaming
node, query node and proxy), driven by pymilvus on loopback. Inserts, a
delete and an upsert go through the local path (``LocalStreamingNode``), not a
``Produce`` stream to the node's own gRPC server, and a Strong query sees
them.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest
from pymilvus import MilvusClient

from common.config import CommonConfig, CoordinatorConfig, QueryNodeConfig, StreamingNodeConfig
from coordinator.server import Coordinator
from launch.standalone_node import StandaloneNode
from tests.harness import free_port

pytestmark = pytest.mark.timeout(120)


def _drive(uri: str) -> list[dict[str, object]]:
    client = MilvusClient(uri)
    try:
        client.create_collection("c", dimension=4)
        client.insert("c", [{"id": i, "vector": [float(i)] * 4} for i in range(10)])
        client.delete("c", ids=[0, 1])
        client.upsert("c", [{"id": 2, "vector": [9.0] * 4}])
        rows: list[dict[str, object]] = client.query(
            "c", filter="id >= 0", output_fields=["id", "vector"], consistency_level="Strong"
        )
        return rows
    finally:
        client.close()


async def test_inserts_deletes_and_upserts_take_the_local_path(etcd_endpoint: str, tmp_path: Path) -> None:
    common = CommonConfig(etcd=etcd_endpoint, etcd_root=f"node-{uuid.uuid4().hex[:8]}")
    storage = (tmp_path / "storage").as_uri()
    coordinator = Coordinator(CoordinatorConfig(common=common, pchannel_count=2, storage=storage))
    port = free_port()
    node = StandaloneNode(
        StreamingNodeConfig(common=common, wal_dir=str(tmp_path / "wal"), storage=storage),
        QueryNodeConfig(common=common, storage=storage, proxy_port=port),
    )
    await coordinator.start()
    try:
        await node.start()
        try:
            assert node.local is not None
            rows = await asyncio.to_thread(_drive, f"http://127.0.0.1:{port}")
            assert sorted(int(r["id"]) for r in rows) == list(range(2, 10))  # type: ignore[call-overload]
            assert next(r for r in rows if r["id"] == 2)["vector"] == [9.0] * 4
            # One append per insert, delete and upsert (one shard each), every one served locally.
            assert node.local.appends >= 3
        finally:
            await node.stop()
    finally:
        await coordinator.stop()
