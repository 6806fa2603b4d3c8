"""A long search over growing segments runs slice by slice, letting the WAL's messages in between.

The delegator searches its growing segments under its data lock, which the
consume loop also takes to apply each message. A long search (many queries)
is cut into slices of its queries (``querynode.offload.run_sliced``), each
under the lock on its own, so deletes, inserts and tsafe move on between two
slices. What arrives between slices is later than the read's timestamp, so
every slice answers as of that timestamp: the result is the one an uncut
search gives.

A real WAL (local backend) served by the streaming node's handler and the
query node's service with its real delegator.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from common.message import Delete
from common.readplan import ReadFilter, ReadPlan, VectorQuery
from common.storage.objectstore import ObjectStore
from querynode import offload
from querynode.delegator import reads
from querynode.delegator.delegator import Delegator
from querynode.service.service import QueryNodeService
from tests.querynode.delegator.walnode import LOCAL, C, Node, P, V, create_and_insert, watch_request

pytestmark = pytest.mark.timeout(60)

SEGMENT = 77
NQ = 12


async def _until(check: Any) -> None:
    async with asyncio.timeout(10):
        while not check():
            await asyncio.sleep(0.02)


async def _search(d: Delegator, guarantee: int) -> pa.Table:
    """``NQ`` identical queries near key 50, top 5 each: every query's hits are keys 48 to 52."""
    vectors = np.tile(np.array([[50.0, 1.0]], np.float32), (NQ, 1))
    spec = ReadPlan(guarantee_ts=guarantee, filter=ReadFilter.parse("id >= 0", d.schema), timeout=5)
    return await d.search(spec, VectorQuery(anns_field="v", metric="L2", vectors=vectors, topk=5))


class _Lock(asyncio.Lock):
    """The delegator's data lock, running ``between`` once, right after the first release it sees
    while ``armed`` (armed by the first slice's search, so that release ends the first slice)."""

    def __init__(self) -> None:
        super().__init__()
        self.armed = False
        self.between: Any = None
        self.ran = False

    async def __aexit__(self, *exc: object) -> None:
        await super().__aexit__(*exc)
        if self.armed and not self.ran:
            self.ran = True
            await self.between()


async def test_a_sliced_search_answers_as_an_uncut_one_while_a_delete_lands_between_slices(
    node: Node, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = ObjectStore.from_uri((tmp_path / "storage").as_uri())
    wal = node.manager.get(P, 1)
    created, inserted = await create_and_insert(node, SEGMENT, range(100))
    service = QueryNodeService(1, node.source, store)
    service.serve_at(LOCAL)
    try:
        await service.WatchChannel(watch_request(created), None)  # type: ignore[arg-type]
        d = service.delegators[V]
        await _until(lambda: d.serviceable and d.tsafe.value >= inserted.timetick)
        whole = await _search(d, inserted.timetick)  # SLICE_COST covers all NQ queries: one slice
        assert sorted(set(whole.column("id").to_pylist())) == [48, 49, 50, 51, 52]
        assert whole.column("query").to_pylist() == [q for q in range(NQ) for _ in range(5)]

        # Every query a slice of its own, each in a thread (so the loop runs between slices).
        monkeypatch.setattr(offload, "SLICE_COST", 1)
        monkeypatch.setattr(offload, "INLINE_COST", -1)
        lock = _Lock()
        deleted: list[Any] = []
        slices: list[int] = []  # queries of each slice searched
        searched_before_delete: list[int] = []

        async def delete_key_50() -> None:
            searched_before_delete.append(len(slices))
            deleted.extend(
                await wal.append([Delete.of(vchannel=V, collection_id=C, pks=pa.array([50], pa.int64())).encode()])
            )
            await _until(lambda: d.tsafe.value >= deleted[0].timetick)  # applied under the free lock

        lock.between = delete_key_50
        d._lock = lock
        real_search_rows = reads.search_rows

        def search_rows(*args: Any, **kwargs: Any) -> pa.Table:
            found = real_search_rows(*args, **kwargs)
            slices.append(len(kwargs["queries"]))
            lock.armed = True  # the slice is done; its lock is released next
            return found

        monkeypatch.setattr(reads, "search_rows", search_rows)
        sliced = await _search(d, inserted.timetick)
        assert slices == [1] * NQ and searched_before_delete == [1]  # the delete came after the first slice
        assert sliced.equals(whole)  # key 50 in every slice: the delete is later than the read
        after = await _search(d, deleted[0].timetick)
        assert 50 not in after.column("id").to_pylist()
    finally:
        await service.close()
