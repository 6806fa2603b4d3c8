"""A streaming node's WAL for one pchannel, served over gRPC on loopback, for delegator tests.

A real local-backend WAL (recovery snapshots in memory) behind the streaming
node's handler service, and an assignment source pointing at it, as a query
node's delegator consumes it; and flushed segments written to a local object
store the way the flusher and the compaction job write them.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import grpc
import numpy as np
import pyarrow as pa

from common.grpcutil import start_server
from common.message import CreateCollection, Insert, decode
from common.position import Position
from common.schema import CollectionSchema, DataType, FieldSchema
from common.segment import SegmentLevel, SegmentMeta, SegmentState
from common.segment_pb import position_to_pb, segment_to_pb
from common.storage.manifest import SegmentManifest
from common.storage.objectstore import ObjectStore
from common.storage.segment_io import SegmentWriter
from common.tsoutil import compose
from protos import querynode_pb2 as qpb
from protos import streaming_pb2_grpc
from streamingnode.client.assignment import AssignmentCache
from streamingnode.service.handler import HandlerService
from streamingnode.wal.recovery import MemoryRecoveryStore
from streamingnode.wal.wal import Appended
from streamingnode.walimpls.registry import build_opener
from streamingnode.walmanager.manager import WALManager
from tests.streamingnode.fakes import CountingAllocator

P = "p0"
V, C, PART = "p0_1v0", 1, 2  # the vchannel, collection and partition of the segments below
LOCAL = "local-node"  # the address a test serves its query node's in-process worker at
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


def rows(ids: range) -> pa.Table:
    return pa.table({"id": pa.array(list(ids), pa.int64()),
                     "v": pa.array([[float(i), 1.0] for i in ids], pa.list_(pa.float32(), 2))})


def flushed_segment(store: ObjectStore, sid: int, ids: range, ts: int, deletes: list[int] | None = None) -> SegmentMeta:
    """A FLUSHED segment of ``ids`` at ``ts``, with its own delta log of ``deletes`` (at ``ts + 1``)."""
    writer = SegmentWriter(store, SCHEMA)
    table = rows(ids).append_column("_ts", pa.array(np.full(len(ids), ts, dtype=np.uint64)))
    log, stats = writer.write_insert_log(collection_id=C, partition_id=PART, segment_id=sid, log_id=sid, table=table)
    manifest = SegmentManifest(segment_id=sid, collection_id=C, partition_id=PART, vchannel=V,
                               level=SegmentLevel.L1).with_insert_log(log, stats)
    if deletes:
        delta = writer.write_delta_log(collection_id=C, partition_id=PART, segment_id=sid, log_id=sid + 1,
                                       pks=pa.array(deletes, pa.int64()), ts=np.full(len(deletes), ts + 1, np.uint64))
        manifest = manifest.with_delta_log(delta)
    return SegmentMeta(segment_id=sid, collection_id=C, partition_id=PART, vchannel=V, state=SegmentState.FLUSHED,
                       rows=len(ids), manifest=writer.write_manifest(manifest))


def placement(meta: SegmentMeta) -> qpb.SegmentPlacement:
    """``meta`` placed on node 1's worker, at ``LOCAL``."""
    return qpb.SegmentPlacement(segment=segment_to_pb(meta), node_id=1, address=LOCAL)


async def create_and_insert(node: Node, segment_id: int, ids: range) -> tuple[Appended, Appended]:
    """The collection created on ``V``, then ``rows(ids)`` inserted into growing segment ``segment_id``."""
    wal = node.manager.get(P, 1)
    [created] = await wal.append([CreateCollection(vchannel=V, collection_id=C, schema=SCHEMA).encode()])
    insert = Insert.of(vchannel=V, collection_id=C, partition_id=PART, table=rows(ids)).encode()
    insert.header = decode(insert).assigned(segment_id).header()
    [inserted] = await wal.append([insert])
    return created, inserted


def watch_request(created: Appended, **fields: object) -> qpb.WatchChannelRequest:
    """``WatchChannel`` for ``V`` from ``created`` (the collection's creation) on, with ``fields``."""
    req = qpb.WatchChannelRequest(collection_id=C, vchannel=V, pchannel=P, schema_json=SCHEMA.to_json(), **fields)
    req.checkpoint.CopyFrom(position_to_pb(Position(created.message_id.to_bytes(), created.timetick)))
    return req
