"""A DISKANN-indexed field keeps the segment's own rows in a mapped file on the node's disk, not in
memory, whether its index is built by the worker or restored; the rows are served unchanged and the
file goes away with the segment."""

from __future__ import annotations

import asyncio
import gc
import os
from pathlib import Path
from typing import Any

import numpy as np

from common.readplan import ReadPlan, VectorQuery
from common.storage.objectstore import ObjectStore
from protos import querynode_pb2 as pb
from querynode.worker.loader import load_segment
from querynode.worker.worker import Worker
from segcore.index.field_specs import field_index_spec
from segcore.index.spec import IndexKind
from tests.common.storage.segment_data import full_schema
from tests.querynode.worker.segments import COLL, SEG, flushed_segment

DISKANN_PARAMS = {"index_type": "DISKANN", "metric_type": "L2", "params": '{"max_degree": 16}'}
DISKANN = field_index_spec("vec", 9, DISKANN_PARAMS)
DISKANN_LISTED = pb.IndexSpec(field_name="vec", index_id=9, params=DISKANN_PARAMS)  # as the coordinator lists it
HNSW_PARAMS = {"index_type": "HNSW", "metric_type": "L2", "params": '{"M": 8, "efConstruction": 16}'}
HNSW = field_index_spec("vec", 7, HNSW_PARAMS)
HNSW_LISTED = pb.IndexSpec(field_name="vec", index_id=7, params=HNSW_PARAMS)  # as the coordinator lists it
READ = ReadPlan(guarantee_ts=0, output_fields=("vec",))


async def _top(worker: Worker, query: np.ndarray) -> tuple[list[int], list[list[float]]]:
    hits = await worker.search(COLL, [SEG], 10_000, READ, VectorQuery(anns_field="vec", metric="L2", vectors=query[None, :],
                                                                       topk=3, params={"search_list": 20}))
    return hits.column("pk").to_pylist(), hits.column("vec").to_pylist()


async def test_diskann_rows_live_in_a_mapped_file_and_are_served_unchanged(tmp_path: Path) -> None:
    store = ObjectStore.from_uri(f"file://{tmp_path}/store")
    meta, table = flushed_segment(store, rows=400)
    vectors = np.asarray(table.column("vec").combine_chunks().flatten().to_numpy(), dtype=np.float32).reshape(400, -1)
    pks = table.column("pk").to_pylist()
    for attempt in ("built", "restored"):
        worker = Worker(store)
        await worker.load(COLL, full_schema(), [meta], [DISKANN_LISTED], {})
        async with asyncio.timeout(60):
            await worker.builds_done()
        seg = worker.segments[(COLL, SEG)]
        assert seg.indexes["vec"].index.kind is IndexKind.DISKANN, attempt
        matrix = seg.store.vector_matrix("vec")
        assert seg.store.vectors_on_disk("vec") and _mapped(matrix) is not None, attempt
        np.testing.assert_array_equal(np.asarray(matrix), vectors)
        found, rows = await _top(worker, vectors[123])
        assert found[0] == pks[123], attempt
        np.testing.assert_array_equal(np.asarray(rows[0], dtype=np.float32), vectors[123])
        await worker.close()


def _mapped(matrix: Any) -> np.memmap | None:
    """The memory-mapped array under ``matrix`` (a view's bases followed), or None."""
    while matrix is not None:
        if isinstance(matrix, np.memmap):
            return matrix
        matrix = matrix.base
    return None


def test_the_file_goes_away_with_the_segment(tmp_path: Path) -> None:
    store = ObjectStore.from_uri(f"file://{tmp_path}/store")
    meta, _ = flushed_segment(store, rows=300)
    seg, missing = load_segment(store, full_schema(), meta, [DISKANN])
    assert missing == [DISKANN] and seg.store.vectors_on_disk("vec")
    matrix = _mapped(seg.store.vector_matrix("vec"))
    assert matrix is not None
    path = str(matrix.filename)
    assert os.path.exists(path)
    del seg, matrix
    gc.collect()
    assert not os.path.exists(path)


async def test_other_index_kinds_keep_their_rows_in_memory(tmp_path: Path) -> None:
    store = ObjectStore.from_uri(f"file://{tmp_path}/store")
    meta, _ = flushed_segment(store, rows=100)
    worker = Worker(store)
    await worker.load(COLL, full_schema(), [meta], [HNSW_LISTED], {})
    async with asyncio.timeout(30):
        await worker.builds_done()
    seg = worker.segments[(COLL, SEG)]
    assert not seg.store.vectors_on_disk("vec")
    assert not isinstance(seg.store.vector_matrix("vec"), np.memmap)
    await worker.close()
