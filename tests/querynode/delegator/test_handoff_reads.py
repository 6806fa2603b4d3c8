"""A read that arrives during a handoff sees the handed-off rows once: in the growing copy or the sealed one.

The delegator hands a flushed segment over from its growing copy to the sealed
copy a worker loaded, under its data lock: the growing copy leaves and the
sealed one enters one snapshot together. The lock is held across the worker
calls that apply the deletes consumed while the segment loaded. A search and
a count that arrive meanwhile must read the sealed snapshot and the growing
segments as of one moment, not the snapshot from before the handoff with the
growing segments from after it (which would miss every handed-off row).

A real WAL (local backend) served by the streaming node's handler; the query
node's service with its real delegator and in-process worker, whose ``load``
and ``cut`` are wrapped to hold the handoff at that point.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from common.message import Delete
from common.readplan import ReadPlan, VectorQuery
from common.storage.objectstore import ObjectStore
from protos import querynode_pb2 as qpb
from querynode.delegator.delegator import Delegator
from querynode.service.service import QueryNodeService
from tests.querynode.delegator.walnode import (
    LOCAL,
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

SEGMENT = 77


def _spec(guarantee: int) -> ReadPlan:
    return ReadPlan(guarantee_ts=guarantee, timeout=5)


async def _reads(d: Delegator, guarantee: int) -> tuple[int, list[int]]:
    """``count(*)`` and the keys of a top-10 search near key 50, sent together."""
    (_, count), hits = await asyncio.gather(
        d.query(_spec(guarantee), limit=None, count_only=True),
        d.search(_spec(guarantee), VectorQuery(anns_field="v", metric="L2", topk=10,
                                               vectors=np.array([[50.0, 1.0]], np.float32))),
    )
    return count, sorted(hits.column("id").to_pylist())


async def _until(check: Any) -> None:
    async with asyncio.timeout(10):
        while not check():
            await asyncio.sleep(0.02)


async def test_reads_during_a_handoff_see_the_rows_once(node: Node, tmp_path: Path) -> None:
    store = ObjectStore.from_uri((tmp_path / "storage").as_uri())
    wal = node.manager.get(P, 1)
    created, inserted = await create_and_insert(node, SEGMENT, range(100))
    service = QueryNodeService(1, node.source, store)
    service.serve_at(LOCAL)
    try:
        await service.WatchChannel(watch_request(created), None)  # type: ignore[arg-type]
        d = service.delegators[V]
        await _until(lambda: d.serviceable and d.tsafe.value >= inserted.timetick)
        assert SEGMENT in d.data.growing
        assert await _reads(d, inserted.timetick) == (100, list(range(45, 55)))

        # The flushed copy loads; a delete of key 50 is consumed meanwhile, so the handoff applies
        # it on the worker (under the data lock) before it publishes, and is held there.
        worker, deleted = service.worker, []
        real_load, real_cut = worker.load, worker.cut
        in_cut, go = asyncio.Event(), asyncio.Event()

        async def load(*args: Any, **kwargs: Any) -> None:
            await real_load(*args, **kwargs)
            gone = Delete.of(vchannel=V, collection_id=C, pks=pa.array([50], pa.int64()))
            deleted.extend(await wal.append([gone.encode()]))
            await _until(lambda: d.tsafe.value >= deleted[0].timetick)

        async def cut(*args: Any, **kwargs: Any) -> None:
            in_cut.set()
            await go.wait()
            await real_cut(*args, **kwargs)

        worker.load, worker.cut = load, cut  # type: ignore[method-assign]
        sealed = flushed_segment(store, SEGMENT, range(100), inserted.timetick)
        sync = asyncio.create_task(service.SyncDistribution(
            qpb.SyncDistributionRequest(collection_id=C, vchannel=V, placements=[placement(sealed)]), None,  # type: ignore[arg-type]
        ))
        await asyncio.wait_for(in_cut.wait(), 10)
        reads = asyncio.create_task(_reads(d, deleted[0].timetick))
        await asyncio.sleep(0.2)  # the reads arrive while the handoff holds the data lock
        assert not reads.done()
        go.set()
        await sync
        assert SEGMENT not in d.data.growing and set(d.dist.current.sealed) == {SEGMENT}
        expected = (99, [45, 46, 47, 48, 49, 51, 52, 53, 54, 55])
        assert await reads == expected  # without the handoff's rows: (0, [])
        assert await _reads(d, deleted[0].timetick) == expected
    finally:
        await service.close()
