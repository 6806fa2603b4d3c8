"""The worker applies the cuts sent with a load, also to a segment it already holds.

A delegator takes a segment offline when a read on its worker fails, stops
forwarding deletes to it, and later loads it again with every cut recorded
meanwhile. If the worker still holds the segment, those cuts must still be
applied, or deletes acknowledged in between come back (found by the
differential test: an acknowledged delete lost after a failed read).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np

from common.readplan import ReadPlan
from common.storage.objectstore import ObjectStore
from querynode.worker.worker import Worker
from tests.common.storage.segment_data import full_schema
from tests.querynode.worker.segments import COLL, SEG, flushed_segment


def _alive(worker: Worker) -> int:
    read = ReadPlan(guarantee_ts=0)
    _, n = asyncio.run(worker.query(COLL, [SEG], 10_000, read, None, True))
    return n


def test_loading_a_held_segment_again_applies_its_cuts(tmp_path: Path) -> None:
    store = ObjectStore.from_uri(f"file://{tmp_path}/store")
    meta, table = flushed_segment(store)
    schema = full_schema()
    worker = Worker(store)
    asyncio.run(worker.load(COLL, schema, [meta], [], {}))
    assert _alive(worker) == 20
    pks = table.column("pk").combine_chunks().slice(0, 3)
    cuts = {SEG: (pks, np.full(3, 5_000, dtype=np.uint64))}
    asyncio.run(worker.load(COLL, schema, [meta], [], cuts))  # held already: only the cuts are new
    assert _alive(worker) == 17
    asyncio.run(worker.load(COLL, schema, [meta], [], cuts))  # the same cuts again change nothing
    assert _alive(worker) == 17
