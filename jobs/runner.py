"""The one way Strata starts a Spark job: ``spark-submit`` as a child process, watched from asyncio.

``SparkRunner.run(spec_json, name=...)`` writes the spec to a fresh work
directory, submits ``jobs/main.py`` with the Strata packages zipped
and shipped alongside (``--py-files``), reports progress while it runs, and
returns the job's ``JobResult``. The master comes from the configuration:
``local[*]`` (standalone: the driver and executors are threads and Python
workers on this machine) or a ``spark://`` / ``k8s://`` cluster master, with
the driver in client mode on this machine and executors on the cluster (which
need Python 3.11 with pyarrow, numpy and hnswlib installed, as in the Strata
image, and access to the object store).

Waiting never blocks the event loop (``asyncio.create_subprocess_exec``). The
child runs in its own process group and dies with the coordinator
(``PR_SET_PDEATHSIG``, set by a small guard that then execs ``spark-submit``;
the job's Python driver sets it too, towards the JVM); cancelling ``run`` or
passing the timeout kills the group. A driver that dies without a result becomes a result with an error
that quotes the end of its log.

Each job has its own work directory, ``ROOT/tmp/NAME-XXXX`` (mode 0700;
``ROOT`` is ``jobs.work_dir``, which standalone sets to ``DATA_DIR/jobs``, or
``strata-jobs`` in the system temp directory): its spec, result, progress and
driver log, Spark's scratch space (``spark.local.dir``) and the temp files of
the driver's Python and JVM (``TMPDIR``, ``java.io.tmpdir``). It is removed
when the job ends, however it ends (the end of a failed job's driver log is
in the result's error and in the log). A job killed with its coordinator
leaves its directory behind; :meth:`SparkRunner.sweep`, which the coordinator
runs when it starts its jobs, removes those. A running job holds a lock on its
directory, so a sweep never removes the directory of a job that is still
running, even one of another coordinator sharing ``ROOT``.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import importlib.util
import json
import os
import shutil
import signal
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

import structlog

from common.config import JobsConfig
from jobs.plans import JobResult

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("common", "segcore", "jobs", "protos")
MAIN = Path(__file__).resolve().parent / "main.py"
LOG_TAIL_BYTES = 4000
# Under ROOT: one directory per running job, and the shipped code zips.
JOBS_DIR = "tmp"
CODE_DIR = "code"
_LOCK = ".lock"
_UNLOCKED_GRACE_SECONDS = 60.0

# Started as ``python -c GUARD PARENT_PID CMD...``: die with the coordinator, then become spark-submit.
# (A ``preexec_fn`` would run Python between fork and exec in a process full of gRPC threads, which
# now and then kills the child with SIGSEGV before it starts.)
_GUARD = (
    "import ctypes, os, signal, sys\n"
    "ctypes.CDLL('libc.so.6', use_errno=True).prctl(1, signal.SIGKILL)\n"
    "if os.getppid() != int(sys.argv[1]): sys.exit(70)\n"
    "os.execvp(sys.argv[2], sys.argv[2:])\n"
)


def spark_submit_path() -> str:
    """The ``spark-submit`` of the installed pyspark (it ships a complete Spark)."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        raise RuntimeError("pyspark is not installed: `pip install pyspark` (or `make install`)")
    return str(Path(spec.origin).parent / "bin" / "spark-submit")


def build_code_zip(directory: Path) -> Path:
    """Zip the Strata packages (Python sources and data files) for ``--py-files``; reused while unchanged."""
    files = sorted(
        p
        for pkg in PACKAGES
        for p in (REPO / pkg).rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix in (".py", ".lark", ".pyi", ".proto")
    )
    digest = hashlib.sha256()
    for p in files:
        digest.update(str(p.relative_to(REPO)).encode())
        digest.update(str(p.stat().st_mtime_ns).encode())
    target = directory / f"strata-{digest.hexdigest()[:16]}.zip"
    if target.exists():
        return target
    directory.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for p in files:
            z.write(p, str(p.relative_to(REPO)))
    os.replace(tmp, target)
    return target


class SparkRunner:
    """Submits jobs to the configured Spark master, one child process per job."""

    def __init__(self, config: JobsConfig) -> None:
        config.validate()
        self._config = config
        root = Path(config.work_dir) if config.work_dir else Path(tempfile.gettempdir()) / "strata-jobs"
        self._root = root
        self._log = structlog.get_logger().bind(component="spark-runner", master=config.spark_master)

    @property
    def master(self) -> str:
        return self._config.spark_master

    @property
    def jobs_dir(self) -> Path:
        """Where the jobs' work directories live (``ROOT/tmp``)."""
        return self._root / JOBS_DIR

    def command(self, *, name: str, code_zip: Path, work: Path) -> list[str]:
        """The ``spark-submit`` command line of job ``name`` whose files live in ``work``."""
        c = self._config
        local = c.spark_master.startswith("local")
        confs = {
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.pyspark.python": sys.executable,
            "spark.pyspark.driver.python": sys.executable,
            "spark.speculation": "false",
            # Output segments are numbered by partition: keep the partitions the job asks for.
            "spark.sql.adaptive.coalescePartitions.enabled": "false",
            "spark.sql.shuffle.partitions": str(c.shuffle_partitions),
            "spark.sql.execution.arrow.maxRecordsPerBatch": "20000",
            # The driver runs here in every mode: its JVM's temp files go to the job's directory.
            "spark.driver.extraJavaOptions": f"-Djava.io.tmpdir={work / 'tmp'}",
        }
        if local:
            confs.update({
                "spark.driver.host": "127.0.0.1",
                "spark.driver.bindAddress": "127.0.0.1",
                "spark.local.dir": str(work / "spark-local"),
            })
        for item in filter(None, (s.strip() for s in c.spark_conf.split(";"))):
            key, _, value = item.partition("=")
            key, value = key.strip(), value.strip()
            if key == "spark.driver.extraJavaOptions":  # keep the temp directory next to the user's options
                value = f"{confs[key]} {value}"
            confs[key] = value
        cmd = [spark_submit_path(), "--master", c.spark_master, "--name", name, "--driver-memory", c.driver_memory]
        if c.executor_memory:
            cmd += ["--executor-memory", c.executor_memory]
        for key, value in confs.items():
            cmd += ["--conf", f"{key}={value}"]
        cmd += ["--py-files", str(code_zip), str(MAIN), "--spec", str(work / "spec.json")]
        cmd += ["--result", str(work / "result.json"), "--progress", str(work / "progress.json")]
        return cmd

    async def sweep(self) -> list[Path]:
        """Remove the work directories of jobs that no longer run (killed with their coordinator).

        Returns what it removed. Runs in a thread; a directory whose job still
        holds its lock is left alone.
        """
        removed = await asyncio.to_thread(_sweep, self.jobs_dir)
        if removed:
            self._log.info("stale job directories removed", count=len(removed), jobs_dir=str(self.jobs_dir))
        return removed

    async def run(
        self, spec_json: str, *, name: str, on_progress: Callable[[float], None] | None = None
    ) -> JobResult:
        """Run the job ``spec_json`` describes and return its result (never raises for a failed job).

        Cancelling kills the job's process group. Blocks nothing: waits in asyncio.
        """
        job_id = int(json.loads(spec_json).get("job_id", 0))
        work, lock = await asyncio.to_thread(_make_work_dir, self.jobs_dir, name)
        try:
            return await self._run(job_id, spec_json, name, work, on_progress)
        except BaseException:
            # Cancelled or failed: the job is dead (``_run`` killed it); its files must go even if
            # the caller is gone, so this does not await.
            shutil.rmtree(work, ignore_errors=True)
            raise
        finally:
            os.close(lock)

    async def _run(
        self, job_id: int, spec_json: str, name: str, work: Path, on_progress: Callable[[float], None] | None
    ) -> JobResult:
        result, progress, driver_log = (work / n for n in ("result.json", "progress.json", "driver.log"))
        await asyncio.to_thread((work / "spec.json").write_text, spec_json, "utf-8")
        code_zip = await asyncio.to_thread(build_code_zip, self._root / CODE_DIR)
        cmd = self.command(name=name, code_zip=code_zip, work=work)
        env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
        env["TMPDIR"] = str(work / "tmp")  # the driver's Python (py4j's connection files, pyspark)
        if self._config.spark_master.startswith("local"):
            env["SPARK_LOCAL_IP"] = "127.0.0.1"
        started = time.monotonic()
        self._log.info("spark job submitted", job=name, work_dir=str(work))
        with open(driver_log, "wb") as out:
            proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-c",
                _GUARD,
                str(os.getpid()),
                *cmd,
                stdout=out,
                stderr=asyncio.subprocess.STDOUT,
                stdin=asyncio.subprocess.DEVNULL,
                env=env,
                cwd=str(work),
                start_new_session=True,
            )
        try:
            deadline = started + self._config.job_timeout_seconds
            while True:
                try:
                    async with asyncio.timeout(1.0):
                        await proc.wait()
                    break
                except TimeoutError:
                    pass
                if on_progress is not None:
                    fraction = await asyncio.to_thread(_read_progress, progress)
                    if fraction is not None:
                        on_progress(fraction)
                if time.monotonic() > deadline:
                    _kill_group(proc.pid)
                    await proc.wait()
                    why = f"timed out after {self._config.job_timeout_seconds:.0f}s"
                    return await self._failed(job_id, work, why)
        except BaseException:  # cancelled (or the loop is going away): the job must not outlive us
            _kill_group(proc.pid)
            with contextlib.suppress(ProcessLookupError):
                await proc.wait()
            raise
        _kill_group(proc.pid)  # leftover Python workers of a driver that exited
        seconds = time.monotonic() - started
        raw = await asyncio.to_thread(_read_text, result)
        if raw is None:
            return await self._failed(job_id, work, f"spark-submit exited with status {proc.returncode} and no result")
        res = JobResult.from_json(raw)
        if res.error:
            tail = await asyncio.to_thread(_log_tail, driver_log)
            self._log.warning(
                "spark job failed", job=name, error=res.error, seconds=round(seconds, 1), driver_log_tail=tail
            )
        else:
            self._log.info(
                "spark job done", job=name, rows=res.rows, outputs=len(res.outputs), seconds=round(seconds, 1)
            )
        await asyncio.to_thread(shutil.rmtree, work, True)
        return res

    async def _failed(self, job_id: int, work: Path, why: str) -> JobResult:
        tail = await asyncio.to_thread(_log_tail, work / "driver.log")
        await asyncio.to_thread(shutil.rmtree, work, True)
        self._log.warning("spark job died", job_id=job_id, reason=why, driver_log_tail=tail)
        last = [line for line in tail.splitlines() if line.strip()][-3:]
        return JobResult(job_id=job_id, error=f"spark job {why}: {' | '.join(last)}")


def _make_work_dir(jobs_dir: Path, name: str) -> tuple[Path, int]:
    """A fresh 0700 directory for job ``name`` under ``jobs_dir``, and the fd of its lock (held)."""
    jobs_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=jobs_dir))  # mkdtemp makes it 0700
    for sub in ("tmp", "spark-local"):
        (work / sub).mkdir(mode=0o700)
    lock = os.open(work / _LOCK, os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return work, lock


def _sweep(jobs_dir: Path) -> list[Path]:
    """Remove every directory under ``jobs_dir`` whose lock no process holds."""
    try:
        candidates = sorted(p for p in jobs_dir.iterdir() if p.is_dir())
    except FileNotFoundError:
        return []
    return [work for work in candidates if _remove_if_idle(work)]


def _remove_if_idle(work: Path) -> bool:
    try:
        lock = os.open(work / _LOCK, os.O_RDWR | os.O_CLOEXEC)
    except FileNotFoundError:
        # Killed before it took its lock, or being made right now by another runner sharing
        # the directory: the second kind is young, so a young one is left alone.
        try:
            if time.time() - work.stat().st_mtime < _UNLOCKED_GRACE_SECONDS:
                return False
        except FileNotFoundError:
            return False
        shutil.rmtree(work, ignore_errors=True)
        return True
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False  # its job is running
    else:
        shutil.rmtree(work, ignore_errors=True)
        return True
    finally:
        os.close(lock)


def _log_tail(path: Path) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - LOG_TAIL_BYTES))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


def _read_progress(path: Path) -> float | None:
    raw = _read_text(path)
    if raw is None:
        return None
    try:
        return float(json.loads(raw)["fraction"])
    except (ValueError, KeyError, TypeError):
        return None
