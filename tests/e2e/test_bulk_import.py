"""Bulk import through ``strata import`` and pymilvus (``utility.do_bulk_insert``) against the real standalone.

* ``strata import`` of a Parquet file and a JSON file (one job, a progress
  bar): every row queryable once the job completes, searchable exactly (FLAT),
  auto ids assigned; the job is listed by ``list_bulk_insert_tasks``.
* ``utility.do_bulk_insert`` with a file whose vector at one row has the wrong
  dimension: ``get_bulk_insert_state`` says Failed with a reason naming the
  file and the field, and no row of any file of the job becomes visible.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pymilvus import BulkInsertState, DataType, MilvusClient, MilvusException, connections, utility

from tests.e2e.util import unique_name
from tests.harness import REPO, Standalone, dump_logs_on_failure

DIM = 8
pytestmark = pytest.mark.filterwarnings("ignore:.*ORM-style PyMilvus API")


def _collection(milvus: MilvusClient, *, auto_id: bool) -> str:
    name = unique_name("imp")
    schema = MilvusClient.create_schema(auto_id=auto_id)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("tag", DataType.VARCHAR, max_length=32)
    schema.add_field("v", DataType.FLOAT_VECTOR, dim=DIM)
    index = milvus.prepare_index_params()
    index.add_index("v", index_type="FLAT", metric_type="L2")
    milvus.create_collection(name, schema=schema, index_params=index, num_shards=2)
    return name


def _wait(task: int, alias: str, timeout: float = 240) -> BulkInsertState:
    deadline = time.monotonic() + timeout
    while True:
        state = utility.get_bulk_insert_state(task, using=alias)
        if state.state in (BulkInsertState.ImportCompleted, BulkInsertState.ImportFailed):
            return state
        assert time.monotonic() < deadline, f"import {task} still {state.state_name} after {timeout}s"
        time.sleep(0.5)


def _count(milvus: MilvusClient, name: str) -> int:
    return int(milvus.query(name, filter="", output_fields=["count(*)"], consistency_level="Strong")[0]["count(*)"])


def _count_reaches(milvus: MilvusClient, name: str, expected: int, timeout: float = 60) -> None:
    """The committed segments are loaded by the query nodes moments after the job completes."""
    deadline = time.monotonic() + timeout
    while (count := _count(milvus, name)) != expected:
        assert time.monotonic() < deadline, f"count {count}, expected {expected}"
        time.sleep(0.2)


@pytest.mark.timeout(400)
def test_strata_import_makes_parquet_and_json_rows_queryable(
    standalone: Standalone, milvus: MilvusClient, tmp_path: Path
) -> None:
    name = _collection(milvus, auto_id=True)
    rng = np.random.default_rng(4)
    vecs = rng.standard_normal((5000, DIM)).astype(np.float32)
    table = pa.table({"tag": pa.array([f"p{i}" for i in range(4000)]),
                      "v": pa.array(vecs[:4000].tolist(), pa.list_(pa.float32()))})
    parquet = tmp_path / "rows.parquet"
    pq.write_table(table, parquet, row_group_size=1500)
    doc = tmp_path / "rows.json"
    doc.write_text(json.dumps({"rows": [{"tag": f"j{i}", "v": vecs[i].tolist()} for i in range(4000, 5000)]}))
    milvus.insert(name, [{"tag": "before", "v": [0.0] * DIM}])
    with dump_logs_on_failure(standalone):
        missing = subprocess.run(
            [sys.executable, "-m", "launch.cli", "import", name, str(tmp_path / "x.csv"), "--uri", standalone.uri],
            cwd=REPO, capture_output=True, text=True, timeout=60,
        )
        assert missing.returncode == 2 and "unsupported format .csv" in missing.stderr
        cli = subprocess.run(
            [sys.executable, "-m", "launch.cli", "import", name, str(parquet), str(doc), "--uri", standalone.uri],
            cwd=REPO, capture_output=True, text=True, timeout=300,
        )
        assert cli.returncode == 0, cli.stderr
        assert "imported 5000 rows" in cli.stderr and "100.0%" in cli.stderr
        _count_reaches(milvus, name, 5001)
        assert milvus.get_collection_stats(name)["row_count"] == 5001
        rows = milvus.query(name, filter='tag in ["p0", "p3999", "j4000", "j4999"]', output_fields=["id", "tag"],
                            consistency_level="Strong")
        assert sorted(r["tag"] for r in rows) == ["j4000", "j4999", "p0", "p3999"]
        ids = [r["id"] for r in milvus.query(name, filter="", output_fields=["id"], limit=10_000,
                                            consistency_level="Strong")]
        assert len(set(ids)) == 5001  # auto ids: unique, and none collides with the inserted row's
        hits = milvus.search(name, data=vecs[[17, 4321]].tolist(), limit=1, output_fields=["tag"],
                             consistency_level="Strong")
        assert [h[0]["entity"]["tag"] for h in hits] == ["p17", "j4321"]
        assert [h[0]["distance"] for h in hits] == pytest.approx([0.0, 0.0], abs=1e-5)
        assert len([s for s in milvus.list_persistent_segments(name) if s.num_rows]) >= 2  # one per shard at least
        alias = unique_name("conn")
        connections.connect(alias=alias, uri=standalone.uri)
        try:
            [task] = utility.list_bulk_insert_tasks(collection_name=name, using=alias)
            assert task.state == BulkInsertState.ImportCompleted and task.row_count == 5000
        finally:
            connections.disconnect(alias)
    milvus.drop_collection(name)


@pytest.mark.timeout(400)
def test_a_file_that_breaks_the_schema_fails_the_job_and_nothing_of_it_is_visible(
    standalone: Standalone, milvus: MilvusClient, tmp_path: Path
) -> None:
    name = _collection(milvus, auto_id=False)
    rng = np.random.default_rng(5)
    good = tmp_path / "good.parquet"
    pq.write_table(
        pa.table({"id": list(range(300)), "tag": [f"g{i}" for i in range(300)],
                  "v": pa.array(rng.standard_normal((300, DIM)).astype(np.float32).tolist(), pa.list_(pa.float32()))}),
        good,
    )
    vectors = rng.standard_normal((300, DIM)).astype(np.float32).tolist()
    vectors[123] = vectors[123][:5]
    bad = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"id": list(range(300, 600)), "tag": [f"b{i}" for i in range(300)],
                             "v": pa.array(vectors, pa.list_(pa.float32()))}), bad)
    alias = unique_name("conn")
    connections.connect(alias=alias, uri=standalone.uri)
    try:
        with dump_logs_on_failure(standalone):
            task = utility.do_bulk_insert(name, [str(good), str(bad)], using=alias)
            state = _wait(task, alias)
            assert state.state == BulkInsertState.ImportFailed
            assert state.failed_reason == (
                f"file {bad}, field v: vector at row 123 has 5 dimensions, the field has dim {DIM}"
            )
            assert _count(milvus, name) == 0
            assert milvus.list_persistent_segments(name) == []
            with pytest.raises(MilvusException, match="partition not found"):
                utility.do_bulk_insert(name, [str(good)], partition_name="nope", using=alias)
    finally:
        connections.disconnect(alias)
    milvus.drop_collection(name)
