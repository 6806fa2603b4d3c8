"""The Spark runner end to end: ``spark-submit`` (local[2]) with the code shipped, an S3 store, a failing job.

One submission: an import whose files and segments live in an S3 bucket (a
real S3-API server on loopback; the job's driver and executors reach it with
the ``AWS_*`` environment the coordinator has). Then the runner's own failure
paths, which start no Spark at all.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from common.config import JobsConfig
from common.storage.objectstore import ObjectStore
from common.storage.segment_io import SegmentReader
from jobs.plans import ImportSpec
from jobs.runner import SparkRunner, build_code_zip
from jobs.sources import describe_files
from tests.jobs.util import COLLECTION, schema, vectors

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]


def test_an_import_job_runs_through_spark_submit_on_s3(s3_server: Any, tmp_path: Path, monkeypatch: Any) -> None:
    for key, value in s3_server.env().items():
        monkeypatch.setenv(key, value)
    uri = f"s3://{s3_server.bucket}/{uuid.uuid4().hex}"
    store = ObjectStore.from_uri(uri)
    ids = list(range(500))
    table = pa.table({"id": ids, "v": vectors(ids).tolist()})
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, row_group_size=200)
    store.write_bytes("imports/rows.parquet", sink.getvalue().to_pybytes())  # a path inside the store
    files = describe_files(["imports/rows.parquet"], schema(), uri)
    spec = ImportSpec(job_id=9, storage_uri=uri, collection_id=COLLECTION, schema_json=schema().to_json(),
                      vchannels=("a_7v0", "b_7v1"), partition_id=8, files=tuple(files), import_ts=5 << 18,
                      segment_id_base=40, segment_id_count=2)
    runner = SparkRunner(JobsConfig(spark_master="local[2]", work_dir=str(tmp_path / "work"), shuffle_partitions=2))
    seen: list[float] = []
    result = asyncio.run(runner.run(spec.to_json(), name="import-9", on_progress=seen.append))
    assert not result.error, result.error
    assert result.rows == 500 and sorted(o.segment_id for o in result.outputs) == [40, 41]
    reader = SegmentReader(store, schema())
    got = sorted(i for o in result.outputs for i in reader.read_inserts(reader.read_manifest(o.manifest),
                                                                        columns=["id"]).column("id").to_pylist())
    assert got == ids
    assert result.stats["seconds"] > 0
    assert list(runner.jobs_dir.iterdir()) == []  # a finished job leaves nothing


def test_a_driver_that_dies_without_a_result_is_a_failed_job(tmp_path: Path) -> None:
    runner = SparkRunner(JobsConfig(spark_master="local[1]", work_dir=str(tmp_path / "work"),
                                    spark_conf="spark.driver.extraJavaOptions=-Xbogus-option"))
    result = asyncio.run(runner.run('{"kind": "compaction", "job_id": 3}', name="broken"))
    assert result.job_id == 3 and result.error.startswith("spark job spark-submit exited with status")
    assert "KeyError" in result.error  # the end of the driver log (the spec is no compaction) is quoted
    assert list(runner.jobs_dir.iterdir()) == []  # a failed job leaves nothing either


def test_the_code_zip_holds_the_packages_and_is_reused(tmp_path: Path) -> None:
    first = build_code_zip(tmp_path)
    assert build_code_zip(tmp_path) == first
    import zipfile

    names = zipfile.ZipFile(first).namelist()
    assert "jobs/compaction.py" in names and "segcore/index/hnsw.py" in names
    assert not [n for n in names if "__pycache__" in n]
    assert os.path.getsize(first) < 5 << 20


def test_a_cluster_master_gets_the_configured_settings_and_no_loopback_binding(tmp_path: Path) -> None:
    runner = SparkRunner(JobsConfig(spark_master="spark://10.0.0.5:7077", executor_memory="4g",
                                    spark_conf="spark.executor.instances=3; spark.executor.cores=2"))
    cmd = runner.command(name="compaction-1", code_zip=tmp_path / "c.zip", work=tmp_path / "w")
    joined = " ".join(cmd)
    assert cmd[1:3] == ["--master", "spark://10.0.0.5:7077"] and "--executor-memory 4g" in joined
    assert "spark.executor.instances=3" in joined and "spark.executor.cores=2" in joined
    assert "spark.driver.bindAddress" not in joined and "spark.local.dir" not in joined
    assert f"--py-files {tmp_path / 'c.zip'}" in joined and cmd[-7].endswith("jobs/main.py")
    assert f"spark.driver.extraJavaOptions=-Djava.io.tmpdir={tmp_path / 'w' / 'tmp'}" in cmd
    with pytest.raises(ValueError, match="spark master"):
        SparkRunner(JobsConfig(spark_master="yarn-cluster-ish"))
