"""How many threads the worker gives a segment search and an index build: the node's free cores."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from common.readplan import ReadFilter, ReadPlan, VectorQuery
from common.storage.objectstore import ObjectStore
from protos import querynode_pb2 as pb
from querynode import offload
from querynode.offload import CoreShare
from querynode.worker import loader
from querynode.worker.worker import Worker
from segcore.index.flat import FlatIndex
from segcore.index.options import IndexOptions
from segcore.index.spec import IndexSpec
from tests.common.storage.segment_data import DIM, full_schema
from tests.querynode.worker.segments import COLL, SEG, flushed_segment


@pytest.fixture
def threads_seen(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The ``threads`` of every index search; every search is costed as large (not inline)."""
    seen: list[int] = []
    real = FlatIndex.search

    def spy(self: FlatIndex, *args: object, threads: int = 1, **kwargs: object) -> object:
        seen.append(threads)
        return real(self, *args, threads=threads, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(FlatIndex, "search", spy)
    monkeypatch.setattr(offload, "INLINE_COST", -1)
    return seen


async def _search(worker: Worker, nq: int, filter: str = "") -> None:
    read = ReadPlan(guarantee_ts=0, filter=ReadFilter.parse(filter, full_schema()))
    queries = np.random.default_rng(1).standard_normal((nq, DIM)).astype(np.float32)
    hits = await worker.search(COLL, [SEG], 10_000, read, VectorQuery(anns_field="vec", metric="L2", vectors=queries, topk=5))
    assert hits.num_rows > 0


async def test_an_unfiltered_batch_alone_on_the_node_uses_every_core(tmp_path: Path, threads_seen: list[int]) -> None:
    store = ObjectStore.from_uri(f"file://{tmp_path}/store")
    meta, _ = flushed_segment(store)
    share = CoreShare(2)
    worker = Worker(store, share)
    await worker.load(COLL, full_schema(), [meta], [], {})
    await _search(worker, nq=100)
    await _search(worker, nq=4)  # too few queries to be worth a second thread
    await _search(worker, nq=100, filter="i32 >= 0")  # a filtered walk keeps to one
    assert threads_seen == [2, 1, 1]
    assert share.held == 0


def _build_threads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    seen: list[int] = []
    real = loader.build_index

    def spy(spec: IndexSpec, vectors: np.ndarray, *, options: IndexOptions) -> object:
        seen.append(options.threads)
        return real(spec, vectors, options=options)

    monkeypatch.setattr(loader, "build_index", spy)
    return seen


async def test_an_index_build_uses_the_cores_no_read_holds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = ObjectStore.from_uri(f"file://{tmp_path}/store")
    meta, _ = flushed_segment(store)
    hnsw = pb.IndexSpec(field_name="vec", index_id=7, params={"index_type": "HNSW", "metric_type": "L2"})
    built = _build_threads(monkeypatch)
    share = CoreShare(2)
    first = Worker(store, share)
    await first.load(COLL, full_schema(), [meta], [hnsw], {})
    await first.builds_done()  # built in the background, after the load
    # A second worker finds no saved index under another id, and a read holds one core meanwhile.
    other = pb.IndexSpec(field_name="vec", index_id=8, params=hnsw.params)
    second = Worker(store, share)
    with share.take(1):
        await second.load(COLL, full_schema(), [meta], [other], {})
        await second.builds_done()
    assert built == [2, 1]
    assert share.held == 0
