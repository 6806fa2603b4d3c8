"""A segment whose index is not saved yet is served at once, searched exactly, while the worker
builds the index in the background; then the index is swapped in and saved for later loads."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

from common import failpoints
from common.readplan import ReadPlan, VectorQuery
from common.storage.objectstore import ObjectStore
from protos import querynode_pb2 as pb
from querynode.worker.worker import Worker
from segcore.index.field_specs import field_index_spec
from segcore.index.spec import IndexKind
from segcore.index.store import load_index
from tests.common.storage.segment_data import full_schema
from tests.querynode.worker.segments import COLL, SEG, flushed_segment

pytestmark = pytest.mark.usefixtures("disarmed")

HNSW_PARAMS = {"index_type": "HNSW", "metric_type": "L2", "params": '{"M": 8, "efConstruction": 16}'}
HNSW = field_index_spec("vec", 7, HNSW_PARAMS)
HNSW_LISTED = pb.IndexSpec(field_name="vec", index_id=7, params=HNSW_PARAMS)  # as the coordinator lists it
READ = ReadPlan(guarantee_ts=0)


async def _search(worker: Worker, query: np.ndarray) -> list[int]:
    hits = await worker.search(COLL, [SEG], 10_000, READ, VectorQuery(anns_field="vec", metric="L2", vectors=query[None, :],
                                                                       topk=3))
    return hits.column("pk").to_pylist()


async def _builds_done(worker: Worker) -> None:
    async with asyncio.timeout(30):
        await worker.builds_done()


async def test_the_segment_is_served_before_its_index_is_built(tmp_path: Path) -> None:
    store = ObjectStore.from_uri(f"file://{tmp_path}/store")
    meta, table = flushed_segment(store, rows=200)
    vectors = np.asarray(table.column("vec").combine_chunks().flatten().to_numpy(), dtype=np.float32).reshape(200, -1)
    failpoints.arm("worker.build_index=sleep:1")
    worker = Worker(store)
    await worker.load(COLL, full_schema(), [meta], [HNSW_LISTED], {})
    seg = worker.segments[(COLL, SEG)]
    assert "vec" not in seg.indexes  # being built: searched exactly meanwhile
    assert (await _search(worker, vectors[17]))[0] == table.column("pk")[17].as_py()
    await _builds_done(worker)
    assert seg.indexes["vec"].index.kind is IndexKind.HNSW
    assert (await _search(worker, vectors[17]))[0] == table.column("pk")[17].as_py()
    saved = load_index(store, COLL, SEG, 7, 103, HNSW.spec, seg.store.vector_matrix("vec"))
    assert saved is not None  # the next load restores it instead of building

    again = Worker(store)
    await again.load(COLL, full_schema(), [meta], [HNSW_LISTED], {})
    assert again.segments[(COLL, SEG)].indexes["vec"].index.kind is IndexKind.HNSW
    async with asyncio.timeout(0.1):
        await again.builds_done()  # nothing to build
    await worker.close()
    await again.close()


async def test_a_segment_released_or_a_build_that_fails_leaves_nothing_behind(tmp_path: Path) -> None:
    store = ObjectStore.from_uri(f"file://{tmp_path}/store")
    meta, table = flushed_segment(store, rows=100)
    failpoints.arm("worker.build_index=sleep:0.5")
    worker = Worker(store)
    await worker.load(COLL, full_schema(), [meta], [HNSW_LISTED], {})
    await worker.release(COLL, [SEG])
    await _builds_done(worker)
    assert (COLL, SEG) not in worker.segments

    failpoints.arm("worker.build_index=error")
    await worker.load(COLL, full_schema(), [meta], [HNSW_LISTED], {})
    await _builds_done(worker)
    seg = worker.segments[(COLL, SEG)]
    assert "vec" not in seg.indexes  # searched exactly
    vectors = seg.store.vector_matrix("vec")
    assert (await _search(worker, vectors[3]))[0] == table.column("pk")[3].as_py()
    await worker.close()


async def test_build_index_of_a_segment_not_loaded_saves_it_and_keeps_nothing(tmp_path: Path) -> None:
    store = ObjectStore.from_uri(f"file://{tmp_path}/store")
    meta, _ = flushed_segment(store, rows=150)
    worker = Worker(store)
    assert await worker.build_index(COLL, full_schema(), meta, HNSW) is True
    assert worker.segments == {} and worker.loaded() == []  # read, not served
    assert await worker.build_index(COLL, full_schema(), meta, HNSW) is False  # saved: not built again
    failpoints.arm("worker.build_index=error")  # a load now restores; building would fail
    await worker.load(COLL, full_schema(), [meta], [HNSW_LISTED], {})
    assert worker.segments[(COLL, SEG)].indexes["vec"].index.kind is IndexKind.HNSW
    async with asyncio.timeout(0.1):
        await worker.builds_done()  # nothing to build
    await worker.close()


async def test_build_index_of_a_loaded_segment_shares_its_build_and_swaps_the_index_in(tmp_path: Path) -> None:
    store = ObjectStore.from_uri(f"file://{tmp_path}/store")
    meta, _ = flushed_segment(store, rows=150)
    failpoints.arm("worker.build_index=sleep:0.5")
    worker = Worker(store)
    await worker.load(COLL, full_schema(), [meta], [HNSW_LISTED], {})
    await asyncio.sleep(0.1)  # its background build takes the slot
    # The coordinator's build waits for the slot, then finds the index in place: built once.
    assert await worker.build_index(COLL, full_schema(), meta, HNSW) is False
    await _builds_done(worker)
    assert worker.segments[(COLL, SEG)].indexes["vec"].index.kind is IndexKind.HNSW

    # Loaded without the index (created afterwards): the coordinator's build swaps it in.
    other = Worker(ObjectStore.from_uri(f"file://{tmp_path}/other"))
    meta2, _ = flushed_segment(other._storage, rows=150)
    await other.load(COLL, full_schema(), [meta2], [], {})
    assert await other.build_index(COLL, full_schema(), meta2, HNSW) is True
    assert other.segments[(COLL, SEG)].indexes["vec"].index.kind is IndexKind.HNSW
    await worker.close()
    await other.close()
