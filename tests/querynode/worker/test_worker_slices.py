"""A long search on a worker runs slice by slice (``run_sliced``) and answers as an uncut one."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from common.readplan import ReadFilter, ReadPlan, VectorQuery
from common.storage.objectstore import ObjectStore
from querynode import offload
from querynode.worker.worker import Worker
from tests.common.storage.segment_data import DIM, full_schema
from tests.querynode.worker.segments import COLL, SEG, flushed_segment


async def _search(worker: Worker, filter: str) -> pa.Table:
    read = ReadPlan(guarantee_ts=0, filter=ReadFilter.parse(filter, full_schema()), output_fields=("i32",))
    queries = np.random.default_rng(3).standard_normal((40, DIM)).astype(np.float32)
    return await worker.search(COLL, [SEG], 10_000, read, VectorQuery(anns_field="vec", metric="L2", vectors=queries, topk=7))


@pytest.mark.parametrize("filter", ["", "i32 >= 10"])
async def test_a_search_cut_into_slices_answers_as_an_uncut_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, filter: str
) -> None:
    store = ObjectStore.from_uri(f"file://{tmp_path}/store")
    meta, _ = flushed_segment(store, rows=200)
    worker = Worker(store)
    await worker.load(COLL, full_schema(), [meta], [], {})
    whole = await _search(worker, filter)
    assert whole.num_rows == 40 * 7
    slices: list[int] = []
    real = offload.run_sized

    async def counting(fn: object, costs: object, **kwargs: object) -> object:
        slices.append(1)
        return await real(fn, costs, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(offload, "run_sized", counting)
    monkeypatch.setattr(offload, "SLICE_COST", 1)  # every query a slice of its own
    sliced = await _search(worker, filter)
    assert len(slices) == 40
    got, want = sliced.to_pydict(), whole.to_pydict()
    assert sliced.schema == whole.schema
    for column in ("query", "pk", "i32"):
        assert got[column] == want[column], column
    # The same distances, up to float32 rounding (a batch of queries multiplies as one matrix).
    np.testing.assert_allclose(got["distance"], want["distance"], rtol=1e-5, atol=1e-5)
