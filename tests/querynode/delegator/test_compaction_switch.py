"""A delegator switches from a compaction's inputs to its outputs in one step, and skips compacted inserts.

A real WAL (local backend) served by the streaming node's gRPC handler; the
query node's service with its real delegator and in-process worker; segments
written to a local object store the way the flusher and the compaction job
write them.

* ``WatchChannel`` from a checkpoint older than segment 77's inserts, with 77
  compacted into output 500 (``excluded_segments``): the consume loop skips
  77's inserts, so every row is counted once (without the exclusion the
  growing copy would be counted beside the sealed output).
* ``SyncDistribution`` that loads outputs and releases inputs: a load that
  fails changes nothing; one that succeeds publishes the output and removes
  the input in one snapshot, with a delete consumed meanwhile applied.
* A segment's own delta logs (deletes an L0 compaction folded in) apply on load.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pyarrow as pa
import pytest

from common.message import Delete
from common.readplan import ReadPlan
from common.segment import SegmentMeta, SegmentState
from common.storage.objectstore import ObjectStore
from protos import querynode_pb2 as qpb
from querynode.delegator.delegator import Delegator
from querynode.service.service import QueryNodeService
from tests.querynode.delegator.walnode import (
    LOCAL,
    PART,
    C,
    Node,
    P,
    V,
    create_and_insert,
    flushed_segment,
    placement,
    watch_request,
)

pytestmark = pytest.mark.timeout(60)


async def _count(d: Delegator, guarantee: int) -> int:
    spec = ReadPlan(guarantee_ts=guarantee, timeout=5)
    _, n = await d.query(spec, limit=None, count_only=True)
    return n


async def test_compacted_inserts_are_skipped_and_a_switch_is_one_step(node: Node, tmp_path: Path) -> None:
    store = ObjectStore.from_uri((tmp_path / "storage").as_uri())
    wal = node.manager.get(P, 1)
    created, inserted = await create_and_insert(node, 77, range(100))
    # Segment 77 was flushed and compacted into 500 (which dropped rows 0..9); the checkpoint is
    # still before 77's inserts (an older segment held it back).
    output = flushed_segment(store, 500, range(10, 100), inserted.timetick)
    service = QueryNodeService(1, node.source, store)
    service.serve_at(LOCAL)
    try:
        req = watch_request(created, placements=[placement(output)], excluded_segments=[77])
        await service.WatchChannel(req, None)  # type: ignore[arg-type]
        d = service.delegators[V]
        async with asyncio.timeout(10):
            while not (d.serviceable and d.tsafe.value >= inserted.timetick):
                await asyncio.sleep(0.02)
        assert await _count(d, inserted.timetick) == 90  # once: 77's inserts are not served again
        assert 77 not in d.data.growing

        # An output that cannot be loaded: the input keeps serving, nothing is released.
        missing = SegmentMeta(segment_id=600, collection_id=C, partition_id=PART, vchannel=V,
                              state=SegmentState.FLUSHED, rows=5, manifest="manifests/1/2/600/000000000001.json")
        sync = qpb.SyncDistributionRequest(collection_id=C, vchannel=V, placements=[placement(missing)],
                                           release=[500])
        await service.SyncDistribution(sync, None)  # type: ignore[arg-type]
        assert set(d.dist.current.sealed) == {500} and await _count(d, inserted.timetick) == 90

        # Compact 500 again into 600 (rows 10..59, 50..59 deleted by its own delta log); a delete of
        # key 20 arrives after the job's snapshot.
        [deleted] = await wal.append([Delete.of(vchannel=V, collection_id=C, pks=pa.array([20], pa.int64())).encode()])
        again = flushed_segment(store, 600, range(10, 60), inserted.timetick, deletes=list(range(50, 60)))
        versions = []
        original = d.dist.update

        def spy(**kw: object) -> object:
            snap = original(**kw)  # type: ignore[arg-type]
            versions.append(set(snap.sealed))
            return snap

        d.dist.update = spy  # type: ignore[method-assign]
        sync = qpb.SyncDistributionRequest(collection_id=C, vchannel=V, placements=[placement(again)], release=[500])
        await service.SyncDistribution(sync, None)  # type: ignore[arg-type]
        assert versions == [{600}]  # one snapshot: the output in, the input out
        async with asyncio.timeout(10):
            while d.tsafe.value < deleted.timetick:
                await asyncio.sleep(0.02)
        assert await _count(d, deleted.timetick) == 39  # 10..49 without 20
        assert 500 in d.excluded
    finally:
        await service.close()
