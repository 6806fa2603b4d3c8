"""Recovery snapshots: a WAL reopens from its newest snapshot, truncation never passes it, older owners are fenced."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pyarrow as pa
import pytest

from common.errors import ChannelFenced, PositionTruncated
from common.message import Insert, TypedMessage
from common.tsoutil import compose
from protos.common_pb2 import Message, MessageType
from streamingnode.shard import SealPolicy, ShardManager
from streamingnode.wal.recovery import MemoryRecoveryStore
from streamingnode.wal.shard_interceptor import ShardInterceptor
from streamingnode.wal.wal import WAL
from streamingnode.walimpls.registry import build_opener
from streamingnode.walimpls.wal import DeliverPolicy, MessageID
from tests.streamingnode.fakes import CountingAllocator
from tests.streamingnode.wal.collection import create_collection

pytestmark = pytest.mark.timeout(60)


class Harness:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.tso, self.ids = CountingAllocator(compose(int(time.time() * 1000))), CountingAllocator(500)
        self.store = MemoryRecoveryStore()
        self.replayed: list[int] = []

    async def open(self, term: int, *, segment_bytes: int = 4096) -> WAL:
        opener = build_opener("local", root_dir=self.root, segment_bytes=segment_bytes, sync=False)
        impl = await opener.open("p0", term)
        wal = WAL(
            impl,
            self.tso,
            tick_interval=0.05,
            interceptors=[ShardInterceptor(ShardManager(SealPolicy(max_rows=1000)), self.ids)],
            recovery=self.store.handle("p0"),
            snapshot_interval=0.0,
        )
        seen = self.replayed
        original = wal._observe

        def counting(msg: TypedMessage) -> None:
            seen.append(msg.TYPE)
            original(msg)

        wal._observe = counting  # type: ignore[method-assign]
        await wal.start()
        return wal


def _insert(first: int, rows: int = 10) -> Message:
    table = pa.table({"id": pa.array(range(first, first + rows), pa.int64())})
    return Insert.of(vchannel="v0", collection_id=7, partition_id=8, table=table).encode()


async def _until_saved(wal: WAL) -> None:
    async with asyncio.timeout(5):
        while wal.saved_position is None or wal.saved_position.message_id != wal._folded.message_id:  # type: ignore[union-attr]
            await asyncio.sleep(0.02)


async def test_a_reopened_wal_restores_the_snapshot_and_replays_only_what_follows(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    wal = await h.open(1)
    await wal.append([create_collection("v0", 7)])
    for i in range(20):
        await wal.append([_insert(i * 10)])
    await _until_saved(wal)
    snapshot_state = wal._shard.manager.snapshot()  # type: ignore[union-attr]
    await wal.close()

    h.replayed.clear()
    again = await h.open(2)
    assert again.collection_rows(7) == 200
    assert again._shard.manager.snapshot() == snapshot_state  # type: ignore[union-attr]
    assert MessageType.INSERT not in h.replayed  # nothing before the snapshot was read again
    await again.append([_insert(1000)])
    assert again.collection_rows(7) == 210
    await again.close()


async def test_truncation_stops_at_the_saved_snapshot_and_old_starts_are_refused(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    wal = await h.open(1, segment_bytes=2048)
    await wal.append([create_collection("v0", 7)])
    ids = [(await wal.append([_insert(i * 10)]))[0].message_id for i in range(40)]
    await _until_saved(wal)
    saved = MessageID.from_bytes(wal.saved_position.message_id)  # type: ignore[union-attr]
    bound = await wal.truncate(MessageID(saved.seq + 1000))
    assert bound == saved  # asked for more than the snapshot allows
    first = wal.impl.first_message_id()
    assert first is not None and ids[0] < first <= saved

    with pytest.raises(PositionTruncated):
        wal.check_start(DeliverPolicy.start_after(ids[0]))
    wal.check_start(DeliverPolicy.start_from(first))
    wal.check_start(DeliverPolicy.start_after(MessageID(first.seq - 1)))
    await wal.close()

    # Reopening after truncation works from the snapshot alone.
    again = await h.open(2, segment_bytes=2048)
    assert again.collection_rows(7) == 400
    await again.close()


async def test_a_newer_owner_fences_the_older_owners_snapshots(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    old = await h.open(1)
    await old.append([create_collection("v0", 7)])
    handle = h.store.handle("p0")
    assert (await handle.load()) is not None
    new_owner_snapshot = (await handle.load())
    assert new_owner_snapshot is not None
    await handle.save(new_owner_snapshot)  # someone else saved: the old WAL's handle is stale
    with pytest.raises(ChannelFenced):
        await old._recovery.save(old._capture())  # type: ignore[union-attr]
    await old.close()
