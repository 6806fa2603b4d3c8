"""The flusher of one WAL against the real data coordinator (real etcd) and real files.

The WAL is a real local WAL with the shard interceptor; the coordinator side is
``DataCoordinator`` called directly (``DirectDataClient``) instead of over gRPC.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pytest

from common.etcd.metastore import MetaStore
from common.message import CreateCollection, Delete, Insert, ManualFlush, TypedMessage
from common.position import Position
from common.schema import CollectionSchema, DataType, FieldSchema
from common.segment import SegmentLevel, SegmentMeta, SegmentState
from common.storage.objectstore import ObjectStore
from common.storage.segment_io import SegmentReader
from common.tsoutil import compose
from coordinator.catalog import Catalog, CollectionMeta, CollectionState
from coordinator.data.datacoord import DataCoordinator
from coordinator.tso import TimestampOracle
from streamingnode.client.producer import AppendResult
from streamingnode.flusher.dataclient import RecoveredChannel
from streamingnode.flusher.flusher import WALFlusher
from streamingnode.flusher.policy import SyncOptions
from streamingnode.shard import SealPolicy, ShardManager
from streamingnode.wal.recovery import MemoryRecoveryStore
from streamingnode.wal.shard_interceptor import ShardInterceptor
from streamingnode.wal.wal import WAL
from streamingnode.walimpls.registry import build_opener
from tests.streamingnode.fakes import CountingAllocator
from tests.tmpfs import fill, tmpfs

pytestmark = pytest.mark.timeout(60)

P, V = "p0", "p0_1v0"
SCHEMA = CollectionSchema(
    name="c",
    fields=(
        FieldSchema(field_id=100, name="id", dtype=DataType.INT64, is_primary=True),
        FieldSchema(field_id=101, name="v", dtype=DataType.FLOAT_VECTOR, dim=2),
    ),
)


class NoProducer:
    async def append(self, pchannel: str, messages: Sequence[TypedMessage], **_: object) -> list[AppendResult]:
        raise AssertionError("the data coordinator must not append in these tests")


class DirectDataClient:
    """``DataClient`` calling a ``DataCoordinator`` in this process."""

    def __init__(self, data: DataCoordinator, ids: CountingAllocator) -> None:
        self.data, self.ids = data, ids

    async def recovery_info(self, pchannel: str) -> list[RecoveredChannel]:
        return [
            RecoveredChannel(
                vchannel=r.vchannel, collection_id=r.collection_id, schema=r.schema,
                checkpoint=r.checkpoint, segments=r.segments,
            )
            for r in await self.data.recovery_info(pchannel)
        ]

    async def alloc_segment(self, meta: SegmentMeta) -> None:
        await self.data.alloc_segment(meta)

    async def update_state(self, segment_id: int, state: SegmentState) -> None:
        await self.data.update_state(segment_id, state)

    async def save_binlog_paths(self, meta: SegmentMeta, *, flushed: bool) -> None:
        await self.data.save_binlog_paths(meta, flushed=flushed)

    async def update_checkpoints(self, checkpoints: Sequence[tuple[str, Position]]) -> None:
        await self.data.update_checkpoints(checkpoints)

    async def allocate_ids(self, count: int) -> int:
        return await self.ids.allocate(count)


@dataclass
class World:
    root: Path
    data: DataCoordinator
    meta: CollectionMeta
    storage: ObjectStore
    tso: CountingAllocator
    ids: CountingAllocator
    recovery: MemoryRecoveryStore

    async def open(self, term: int, options: SyncOptions) -> tuple[WAL, WALFlusher]:
        opener = build_opener("local", root_dir=self.root / "wal", segment_bytes=4096, sync=False)
        impl = await opener.open(P, term)
        wal = WAL(
            impl,
            self.tso,
            tick_interval=0.05,
            interceptors=[ShardInterceptor(ShardManager(SealPolicy()), self.ids)],
            recovery=self.recovery.handle(P),
            snapshot_interval=0.0,
        )
        await wal.start()
        flusher = WALFlusher(wal, DirectDataClient(self.data, self.ids), self.storage, options)
        flusher.start()
        return wal, flusher


@pytest.fixture()
async def world(etcd_endpoint: str, tmp_path: Path) -> AsyncIterator[World]:
    store = await MetaStore.connect(etcd_endpoint, f"flusher-{uuid.uuid4().hex}")
    tso, catalog = TimestampOracle(store), Catalog(store)
    await tso.start()
    data = DataCoordinator(store, catalog, tso, NoProducer())  # type: ignore[arg-type]
    await data.start()
    meta = CollectionMeta(
        collection_id=1, name="c", schema=SCHEMA, vchannels=(V,), consistency_level=0, state=CollectionState.CREATED
    )
    await catalog.save_collection(meta)
    try:
        yield World(
            root=tmp_path,
            data=data,
            meta=meta,
            storage=ObjectStore.from_uri((tmp_path / "storage").as_uri()),
            tso=CountingAllocator(compose(int(time.time() * 1000))),
            ids=CountingAllocator(10_000),
            recovery=MemoryRecoveryStore(),
        )
    finally:
        await store.close()


FAST = SyncOptions(checkpoint_interval_seconds=0.1, truncate_interval_seconds=0.2, delete_stale_seconds=60)


def _rows(first: int, n: int) -> pa.Table:
    return pa.table(
        {"id": pa.array(range(first, first + n), pa.int64()), "v": pa.array([[0.5, 1.0]] * n, pa.list_(pa.float32(), 2))}
    )


async def _until(what: str, cond: object, timeout: float = 15) -> None:
    async with asyncio.timeout(timeout):
        while not cond():  # type: ignore[operator]
            await asyncio.sleep(0.05)


def _read_back(w: World) -> tuple[list[int], list[int]]:
    """ids of every FLUSHED L1 segment (in order, duplicates kept) and every L0 delete."""
    reader = SegmentReader(w.storage, SCHEMA)
    ids: list[int] = []
    deleted: list[int] = []
    for seg in w.data.segments(vchannel=V):
        if seg.state != SegmentState.FLUSHED:
            continue
        manifest = reader.read_manifest(seg.manifest)
        if seg.level == SegmentLevel.L1:
            ids.extend(reader.read_inserts(manifest).column("id").to_pylist())
        else:
            deleted.extend(reader.read_deltas(manifest).column("pk").to_pylist())
    return ids, deleted


async def test_a_manual_flush_writes_segments_and_deletes_and_moves_the_checkpoint(world: World) -> None:
    wal, flusher = await world.open(1, FAST)
    try:
        [created] = await wal.append([CreateCollection(vchannel=V, collection_id=1, schema=SCHEMA).encode()])
        await world.data.collection_created([(V, Position(created.message_id.to_bytes(), created.timetick))])
        for i in range(10):
            msg = Insert.of(vchannel=V, collection_id=1, partition_id=2, table=_rows(i * 100, 100)).encode()
            await wal.append([msg])
        await wal.append([Delete.of(vchannel=V, collection_id=1, pks=pa.array([5, 6], pa.int64())).encode()])
        flush_ts = await world.tso.allocate(1)
        await wal.append([ManualFlush(vchannel=V, collection_id=1, flush_ts=flush_ts).encode()])

        await _until("flushed", lambda: world.data.flush_state(world.meta, [], flush_ts))
        ids, deleted = _read_back(world)
        assert sorted(ids) == list(range(1000))
        assert sorted(deleted) == [5, 6]
        # Everything is in object storage: the WAL is truncated below the checkpoint.
        cp = world.data.checkpoint(V)
        assert cp is not None and cp.timetick >= flush_ts
        await _until("truncated", lambda: (f := wal.impl.first_message_id()) is not None and f.seq > 1)
    finally:
        await flusher.stop()
        await wal.close()


async def test_a_restart_after_partial_syncs_writes_every_row_exactly_once(world: World) -> None:
    small = SyncOptions(segment_buffer_bytes=2_000, checkpoint_interval_seconds=0.1, truncate_interval_seconds=0.2)
    wal, flusher = await world.open(1, small)
    [created] = await wal.append([CreateCollection(vchannel=V, collection_id=1, schema=SCHEMA).encode()])
    await world.data.collection_created([(V, Position(created.message_id.to_bytes(), created.timetick))])
    for i in range(20):
        await wal.append([Insert.of(vchannel=V, collection_id=1, partition_id=2, table=_rows(i * 50, 50)).encode()])

    def partially_synced() -> bool:
        return any(s.manifest and s.state == SegmentState.GROWING for s in world.data.segments(vchannel=V))

    await _until("a partial sync", partially_synced)
    await flusher.stop()  # as if the node died here: the rest is only in the WAL
    await wal.close()

    wal, flusher = await world.open(2, small)
    try:
        for i in range(20, 30):
            await wal.append([Insert.of(vchannel=V, collection_id=1, partition_id=2, table=_rows(i * 50, 50)).encode()])
        flush_ts = await world.tso.allocate(1)
        await wal.append([ManualFlush(vchannel=V, collection_id=1, flush_ts=flush_ts).encode()])
        await _until("flushed", lambda: world.data.flush_state(world.meta, [], flush_ts))
        ids, _ = _read_back(world)
        assert sorted(ids) == list(range(1500)), f"{len(ids)} rows, {len(set(ids))} distinct"
    finally:
        await flusher.stop()
        await wal.close()


@pytest.mark.needs_root
async def test_a_sync_that_finds_the_disk_full_is_retried_and_nothing_moves_past_it(
    world: World, tmp_path: Path
) -> None:
    with tmpfs(tmp_path / "disk", "1m") as disk:
        w = dataclasses.replace(world, storage=ObjectStore.from_uri((disk / "storage").as_uri()))
        wal, flusher = await w.open(1, FAST)
        try:
            [created] = await wal.append([CreateCollection(vchannel=V, collection_id=1, schema=SCHEMA).encode()])
            await w.data.collection_created([(V, Position(created.message_id.to_bytes(), created.timetick))])
            for i in range(10):
                msg = Insert.of(vchannel=V, collection_id=1, partition_id=2, table=_rows(i * 100, 100)).encode()
                await wal.append([msg])
            filler = fill(disk)
            flush_ts = await w.tso.allocate(1)
            await wal.append([ManualFlush(vchannel=V, collection_id=1, flush_ts=flush_ts).encode()])

            # The sync cannot write its files: it is retried, and the checkpoint and the
            # truncation stay before the rows it holds.
            await asyncio.sleep(2.0)  # several retries and checkpoint/truncation rounds
            assert not w.data.flush_state(w.meta, [], flush_ts)
            assert flusher.syncer.synced == 0
            cp = w.data.checkpoint(V)
            assert cp is None or cp.timetick < flush_ts
            first = wal.impl.first_message_id()
            assert first is not None and first.seq <= 2, "the WAL was truncated past rows not in storage"
            assert not [p for p in (disk / "storage").rglob("*") if p.is_file()], "a failed write left a file"

            filler.unlink()
            await _until("flushed", lambda: w.data.flush_state(w.meta, [], flush_ts))
            ids, _ = _read_back(w)
            assert sorted(ids) == list(range(1000)), f"{len(ids)} rows, {len(set(ids))} distinct"
            await _until("checkpoint", lambda: (c := w.data.checkpoint(V)) is not None and c.timetick >= flush_ts)
            await _until("truncated", lambda: (f := wal.impl.first_message_id()) is not None and f.seq > 2)
        finally:
            await flusher.stop()
            await wal.close()
