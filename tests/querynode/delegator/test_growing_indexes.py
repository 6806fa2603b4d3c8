"""The delegator's filters over growing segments read per-chunk indexes of the collection's scalar index
definitions (``querynode/delegator/growing_specs.py``, ``segcore/segments/growing_indexes.py``).

A real WAL (local backend) served on loopback in this process, the query node's service with its real
delegator; the collection's index definitions arrive with ``WatchChannel``, as from the coordinator.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from common.readplan import ReadFilter, ReadPlan, VectorQuery
from common.storage.objectstore import ObjectStore
from protos import querynode_pb2 as qpb
from querynode.delegator.growing_specs import scalar_specs
from querynode.service.service import QueryNodeService
from segcore.segments.growing_indexes import chunk_indexes
from tests.querynode.delegator.walnode import LOCAL, SCHEMA, Node, V, create_and_insert, watch_request

pytestmark = pytest.mark.timeout(60)

INDEXES = [
    qpb.IndexSpec(field_name="v", index_id=1, params={"index_type": "FLAT", "metric_type": "L2"}),
    qpb.IndexSpec(field_name="id", index_id=2, params={"index_type": "STL_SORT"}),
]


async def _until(check: Any) -> None:
    async with asyncio.timeout(10):
        while not check():
            await asyncio.sleep(0.02)


def test_scalar_specs_keep_the_scalar_definitions_only() -> None:
    specs = scalar_specs(SCHEMA, INDEXES)
    assert [(s.field_name, s.index_type) for s in specs] == [("id", "STL_SORT")]
    assert scalar_specs(SCHEMA, INDEXES) is specs  # remembered for the same schema and definitions
    assert scalar_specs(SCHEMA, INDEXES[:1]) == ()


async def test_growing_filters_read_the_chunk_indexes(node: Node, tmp_path: Path) -> None:
    store = ObjectStore.from_uri((tmp_path / "storage").as_uri())
    created, inserted = await create_and_insert(node, 77, range(100))
    service = QueryNodeService(1, node.source, store)
    service.serve_at(LOCAL)
    try:
        await service.WatchChannel(watch_request(created, indexes=INDEXES), None)  # type: ignore[arg-type]
        d = service.delegators[V]
        await _until(lambda: d.serviceable and d.tsafe.value >= inserted.timetick)
        [growing] = d.data.growing.values()
        cache = chunk_indexes(growing, scalar_specs(d.schema, d.indexes))
        assert cache.builds == 0
        plan = ReadPlan(guarantee_ts=inserted.timetick, filter=ReadFilter.parse("id in [3, 7, 500]", d.schema),
                        timeout=5)
        rows, count = await d.query(plan, limit=None, count_only=False)
        assert rows is not None and rows.column("id").to_pylist() == [3, 7] and count == 2
        assert cache.builds == 1  # the growing segment's one chunk, indexed by the query's filter
        vectors = np.array([[50.0, 1.0]], np.float32)
        plan = ReadPlan(guarantee_ts=inserted.timetick, filter=ReadFilter.parse("id < 10", d.schema), timeout=5)
        hits = await d.search(plan, VectorQuery(anns_field="v", metric="L2", vectors=vectors, topk=3))
        assert hits.column("id").to_pylist() == [9, 8, 7]
        assert cache.builds == 1  # the search's filter read the cached index
    finally:
        await service.close()
