"""Each Spark job works in its own directory under ``jobs.work_dir``, which goes when the job ends;
one left by a job killed with its coordinator goes at the next start (``SparkRunner.sweep``)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from common.config import JobsConfig
from jobs.plans import ImportSpec
from jobs.runner import SparkRunner, _make_work_dir
from jobs.sources import describe_files
from tests.harness import REPO
from tests.jobs.util import COLLECTION, schema, vectors


def _runner(root: Path) -> SparkRunner:
    return SparkRunner(JobsConfig(spark_master="local[1]", work_dir=str(root), shuffle_partitions=1))


def test_sweep_removes_only_directories_no_job_holds(tmp_path: Path) -> None:
    runner = _runner(tmp_path)
    running, lock = _make_work_dir(runner.jobs_dir, "import-1")
    dead, dead_lock = _make_work_dir(runner.jobs_dir, "import-2")
    os.close(dead_lock)  # its runner died: the lock is free
    unlocked_old = runner.jobs_dir / "compaction-3-x"
    unlocked_old.mkdir()
    os.utime(unlocked_old, (time.time() - 3600, time.time() - 3600))
    being_made = runner.jobs_dir / "compaction-4-y"  # created a moment ago, its lock not taken yet
    being_made.mkdir()
    (dead / "spark-local" / "blockmgr-1").mkdir()
    try:
        removed = asyncio.run(runner.sweep())
        assert sorted(removed) == sorted([dead, unlocked_old])
        assert sorted(runner.jobs_dir.iterdir()) == sorted([running, being_made])
    finally:
        os.close(lock)
    assert asyncio.run(runner.sweep()) == [running]  # once its job is gone, it goes too


def test_work_directories_are_private(tmp_path: Path) -> None:
    work, lock = _make_work_dir(_runner(tmp_path).jobs_dir, "import-5")
    try:
        for d in (work, work / "tmp", work / "spark-local"):
            assert d.stat().st_mode & 0o777 == 0o700, d
    finally:
        os.close(lock)


# The coordinator's part, in a process of its own that the test kills -9 mid-job.
_COORDINATOR = textwrap.dedent(
    """
    import asyncio, sys
    from common.config import JobsConfig
    from jobs.runner import SparkRunner

    runner = SparkRunner(JobsConfig(spark_master="local[1]", work_dir=sys.argv[1], shuffle_partitions=1))
    asyncio.run(runner.run(open(sys.argv[2]).read(), name="import-77"))
    """
)


def _import_spec(tmp_path: Path) -> Path:
    ids = list(range(2000))
    pq.write_table(pa.table({"id": ids, "v": vectors(ids).tolist()}), tmp_path / "rows.parquet")
    store = (tmp_path / "store").as_uri()
    files = describe_files([str(tmp_path / "rows.parquet")], schema(), store)
    spec = ImportSpec(
        job_id=77, storage_uri=store, collection_id=COLLECTION, schema_json=schema().to_json(), vchannels=("a_7v0",),
        partition_id=8, files=tuple(files), import_ts=5 << 18, segment_id_base=40, segment_id_count=1,
    )  # fmt: skip
    path = tmp_path / "spec.json"
    path.write_text(spec.to_json())
    return path


def _wait_for(what: str, check: object, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def _processes_in(work: Path) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter():
        try:
            if Path(proc.cwd()).is_relative_to(work):
                found.append(proc)
        except (psutil.Error, OSError):
            pass
    return found


@pytest.mark.timeout(300)
@pytest.mark.slow
def test_a_job_killed_with_its_coordinator_is_swept_at_the_next_start(tmp_path: Path) -> None:
    root = tmp_path / "jobs"
    coordinator = subprocess.Popen(
        [sys.executable, "-c", _COORDINATOR, str(root), str(_import_spec(tmp_path))],
        cwd=REPO,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    jobs_dir = root / "tmp"
    try:
        _wait_for("the job's directory", lambda: jobs_dir.exists() and any(jobs_dir.iterdir()))
        [work] = list(jobs_dir.iterdir())
        assert work.name.startswith("import-77-")
        # Spark's scratch space and the driver's JVM temp files are the job's, not the system's.
        _wait_for("spark's block manager", lambda: any((work / "spark-local").glob("blockmgr-*")))
        _wait_for("the driver's temp files", lambda: any((work / "tmp").iterdir()))
    finally:
        os.killpg(coordinator.pid, signal.SIGKILL)
        coordinator.wait()
    # The job dies with its coordinator (PR_SET_PDEATHSIG); make sure before looking at what it left.
    try:
        _wait_for("the job's processes to die", lambda: not _processes_in(work), timeout=30)
    finally:
        for proc in _processes_in(work):
            proc.kill()
    assert work.exists() and any((work / "spark-local").iterdir())  # left behind by the kill

    runner = _runner(root)  # the next start of the coordinator
    assert asyncio.run(runner.sweep()) == [work]
    assert list(jobs_dir.iterdir()) == []
