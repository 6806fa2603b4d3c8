"""``/v2/vectordb/jobs/import/*`` over plain HTTP against the real standalone: a Parquet file
imported by a REST job (Milvus 2.6's bodies and answers), its rows then visible to pymilvus;
the job listed; bad bodies refused with a clear code and nothing imported."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pymilvus import DataType, MilvusClient

from tests.e2e.restutil import ok, post
from tests.e2e.util import unique_name
from tests.harness import Standalone, dump_logs_on_failure

DIM = 4
ROWS = 300


def _collection(milvus: MilvusClient) -> str:
    name = unique_name("restimp")
    schema = MilvusClient.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("v", DataType.FLOAT_VECTOR, dim=DIM)
    index = milvus.prepare_index_params()
    index.add_index("v", index_type="FLAT", metric_type="L2")
    milvus.create_collection(name, schema=schema, index_params=index)
    return name


def _progress(s: Standalone, job: str, timeout: float = 240) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        data: dict[str, Any] = ok(s, "jobs/import/get_progress", {"jobId": job})
        if data["state"] in ("Completed", "Failed"):
            return data
        assert data["state"] in ("Pending", "Importing") and 0 <= data["progress"] <= 100, data
        assert time.monotonic() < deadline, data
        time.sleep(0.5)


@pytest.mark.timeout(400)
def test_a_rest_import_job_makes_its_rows_visible(standalone: Standalone, milvus: MilvusClient, tmp_path: Path) -> None:
    name = _collection(milvus)
    vecs = np.random.default_rng(9).standard_normal((ROWS, DIM)).astype(np.float32)
    parquet = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"id": list(range(ROWS)), "v": pa.array(vecs.tolist(), pa.list_(pa.float32()))}), parquet)
    with dump_logs_on_failure(standalone):
        created = ok(standalone, "jobs/import/create", {"collectionName": name, "files": [[str(parquet)]]})
        job = created["jobId"]
        assert set(created) == {"jobId"} and isinstance(job, str) and job.isdigit()
        data = _progress(standalone, job)
        assert data == {
            "jobId": job, "collectionName": name, "state": "Completed", "progress": 100, "importedRows": ROWS,
            "totalRows": ROWS, "completeTime": "",
            "details": [{"fileName": str(parquet), "state": "Completed", "progress": 100}],
        }
        assert ok(standalone, "jobs/import/describe", {"jobId": job}) == data
        records = ok(standalone, "jobs/import/list", {"collectionName": name})["records"]
        assert records == [{"jobId": job, "collectionName": name, "state": "Completed", "progress": 100}]
        assert job in [r["jobId"] for r in ok(standalone, "jobs/import/list", {})["records"]]
        deadline = time.monotonic() + 60  # the committed segments are loaded moments after the job completes
        while (n := milvus.query(name, filter="", output_fields=["count(*)"],
                                 consistency_level="Strong")[0]["count(*)"]) != ROWS:
            assert time.monotonic() < deadline, n
            time.sleep(0.2)
        hits = milvus.search(name, data=[vecs[42].tolist()], limit=1, consistency_level="Strong")
        assert hits[0][0]["id"] == 42
    milvus.drop_collection(name)


@pytest.mark.parametrize(
    ("path", "body", "code", "needle"),
    [
        ("jobs/import/create", {"collectionName": "{name}"}, 1802, "`files` is required"),
        ("jobs/import/create", {"collectionName": "{name}", "files": ["a.parquet"]}, 1100, "list of file groups"),
        ("jobs/import/create", {"collectionName": "{name}", "files": [["a.parquet"]], "options": {"x": 1}}, 1100,
         "`options`"),
        ("jobs/import/create", {"collectionName": "{name}", "files": [["a.csv"]]}, 1100, "unsupported format .csv"),
        ("jobs/import/create", {"collectionName": "{name}", "files": [["a.parquet"]], "partitionName": "nope"}, 200,
         "partition not found"),
        ("jobs/import/get_progress", {"jobId": "soon"}, 1100, "decimal id"),
        ("jobs/import/get_progress", {}, 1802, "`jobId` is required"),
    ],
)
def test_bad_import_requests_are_refused(standalone: Standalone, milvus: MilvusClient, path: str,
                                         body: dict[str, Any], code: int, needle: str) -> None:
    name = _collection(milvus)
    body = {k: (name if v == "{name}" else v) for k, v in body.items()}
    before = ok(standalone, "jobs/import/list", {"collectionName": name})["records"]
    answer = post(standalone, path, body)
    assert answer["code"] == code and needle in answer["message"], answer
    assert ok(standalone, "jobs/import/list", {"collectionName": name})["records"] == before == []
    milvus.drop_collection(name)
