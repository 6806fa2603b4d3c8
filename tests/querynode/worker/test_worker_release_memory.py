"""A released segment is freed at once and its pages handed back (querynode/worker/memory.py)."""

from __future__ import annotations

import weakref
from pathlib import Path

from common.storage.objectstore import ObjectStore
from querynode.worker.memory import give_back_memory
from querynode.worker.worker import Worker
from tests.common.storage.segment_data import full_schema
from tests.querynode.worker.segments import COLL, SEG, flushed_segment


async def test_a_released_segment_is_gone_when_release_returns(tmp_path: Path) -> None:
    store = ObjectStore.from_uri(f"file://{tmp_path}/store")
    meta, _ = flushed_segment(store, rows=200)
    worker = Worker(store)
    await worker.load(COLL, full_schema(), [meta], [], {})
    rows = weakref.ref(worker.segments[(COLL, SEG)].store)
    assert rows() is not None
    await worker.release(COLL, [SEG])
    assert rows() is None  # nothing keeps the rows alive: their memory was freed by the release itself
    await worker.release(COLL, [SEG])  # releasing what is not held is a no-op
    await worker.close()


def test_give_back_memory_runs_without_a_segment() -> None:
    give_back_memory()  # no error on a process that has nothing to give back
