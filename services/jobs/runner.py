"""The one way Strata starts a Spark job: ``spark-submit`` as a child process, watched from asyncio.

``SparkRunner.run(spec_json, name=...)`` writes the spec to a fresh work
directory, submits ``services/jobs/main.py`` with the Strata packages zipped
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
that quotes the end of its log. The work directory is removed after a
successful job and kept (its ``driver.log``) after a failed one.
"""

from __future__ import annotations

import asyncio
import contextlib
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

from services.config import JobsConfig
from services.jobs.plans import JobResult

REPO = Path(__file__).resolve().parent.parent.parent
PACKAGES = ("services", "querynode", "protos")
MAIN = Path(__file__).resolve().parent / "main.py"
LOG_TAIL_BYTES = 4000

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

    def command(self, *, name: str, code_zip: Path, spec: Path, result: Path, progress: Path) -> list[str]:
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
        }
        if local:
            confs.update({
                "spark.driver.host": "127.0.0.1",
                "spark.driver.bindAddress": "127.0.0.1",
                "spark.local.dir": str(self._root / "spark-local"),
            })
        for item in filter(None, (s.strip() for s in c.spark_conf.split(";"))):
            key, _, value = item.partition("=")
            confs[key.strip()] = value.strip()
        cmd = [spark_submit_path(), "--master", c.spark_master, "--name", name, "--driver-memory", c.driver_memory]
        if c.executor_memory:
            cmd += ["--executor-memory", c.executor_memory]
        for key, value in confs.items():
            cmd += ["--conf", f"{key}={value}"]
        cmd += ["--py-files", str(code_zip), str(MAIN), "--spec", str(spec), "--result", str(result)]
        cmd += ["--progress", str(progress)]
        return cmd

    async def run(
        self, spec_json: str, *, name: str, on_progress: Callable[[float], None] | None = None
    ) -> JobResult:
        """Run the job ``spec_json`` describes and return its result (never raises for a failed job).

        Cancelling kills the job's process group. Blocks nothing: waits in asyncio.
        """
        job_id = int(json.loads(spec_json).get("job_id", 0))
        work = Path(await asyncio.to_thread(tempfile.mkdtemp, prefix=f"{name}-", dir=self._mkroot()))
        spec, result, progress, driver_log = (work / n for n in ("spec.json", "result.json", "progress.json",
                                                                  "driver.log"))
        await asyncio.to_thread(spec.write_text, spec_json, "utf-8")
        code_zip = await asyncio.to_thread(build_code_zip, self._root / "code")
        cmd = self.command(name=name, code_zip=code_zip, spec=spec, result=result, progress=progress)
        env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
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
                    return self._failed(job_id, work, f"timed out after {self._config.job_timeout_seconds:.0f}s")
        except BaseException:  # cancelled (or the loop is going away): the job must not outlive us
            _kill_group(proc.pid)
            with contextlib.suppress(ProcessLookupError):
                await proc.wait()
            raise
        _kill_group(proc.pid)  # leftover Python workers of a driver that exited
        seconds = time.monotonic() - started
        raw = await asyncio.to_thread(_read_text, result)
        if raw is None:
            return self._failed(job_id, work, f"spark-submit exited with status {proc.returncode} and no result")
        res = JobResult.from_json(raw)
        if res.error:
            self._log.warning("spark job failed", job=name, error=res.error, seconds=round(seconds, 1),
                              work_dir=str(work))
        else:
            self._log.info("spark job done", job=name, rows=res.rows, outputs=len(res.outputs),
                           seconds=round(seconds, 1))
            await asyncio.to_thread(shutil.rmtree, work, True)
        return res

    def _mkroot(self) -> str:
        self._root.mkdir(parents=True, exist_ok=True)
        return str(self._root)

    def _failed(self, job_id: int, work: Path, why: str) -> JobResult:
        tail = ""
        with contextlib.suppress(OSError):
            data = (work / "driver.log").read_bytes()[-LOG_TAIL_BYTES:]
            tail = data.decode("utf-8", "replace")
        self._log.warning("spark job died", job_id=job_id, reason=why, work_dir=str(work))
        last = [line for line in tail.splitlines() if line.strip()][-3:]
        return JobResult(job_id=job_id, error=f"spark job {why}: {' | '.join(last)}")


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
