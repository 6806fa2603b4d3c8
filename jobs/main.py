"""``spark-submit jobs/main.py --spec SPEC --result RESULT [--progress FILE]``: run one job.

The thin ``main()`` of every Strata job: read the spec (``plans.py``), open the
Spark session ``spark-submit`` configured, run the compaction or import it
describes, and write a ``JobResult``. A failure is a result too: its ``error``
is the job's own message (an ``ImportFileError`` names the file and field)
rather than the JVM stack trace Spark wraps it in. The exit status is 0 when
a result was written, so the runner tells "the job failed" (a result with an
error) from "the driver died" (no result).

While the job runs, a thread writes the share of finished Spark tasks to
``--progress`` once a second.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

from jobs.conform import ERROR_MARKER

_ERROR_LINE = re.compile(r"^[\w.]*(Error|Exception|Invalid|Argument|NotFound|Object)\w*: .+")


def _write_atomic(path: str, text: str) -> None:
    tmp = f"{path}.tmp"
    Path(tmp).write_text(text, encoding="utf-8")
    os.replace(tmp, path)


class ProgressWriter(threading.Thread):
    """Writes ``{"fraction": done tasks / tasks of every stage seen}`` to a file, once a second."""

    def __init__(self, spark: SparkSession, path: str) -> None:
        super().__init__(daemon=True, name="job-progress")
        self._tracker = spark.sparkContext.statusTracker()
        self._path = path
        self._stages: dict[int, tuple[int, int]] = {}
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(1.0):
            try:
                for sid in self._tracker.getActiveStageIds():
                    info = self._tracker.getStageInfo(sid)
                    if info is not None:
                        self._stages[sid] = (info.numCompletedTasks, info.numTasks)
                done = sum(d for d, _ in self._stages.values())
                total = sum(t for _, t in self._stages.values())
                fraction = done / total if total else 0.0
                _write_atomic(self._path, json.dumps({"fraction": round(min(fraction, 0.99), 4)}))
            except Exception:  # progress is best effort; the job itself decides success
                continue


def _message(err: BaseException) -> str:
    """The job's own error message out of whatever Spark wrapped around it."""
    text = str(err)
    at = text.find(ERROR_MARKER)
    if at >= 0:
        line = text[at + len(ERROR_MARKER) :].splitlines()[0]
        return line.strip()
    for line in reversed(text.splitlines()):
        match = _ERROR_LINE.match(line.strip())
        if match:
            return match.group(0)
    first = text.strip().splitlines()[0] if text.strip() else ""
    return f"{type(err).__name__}: {first}"


def run(spark: SparkSession, spec_text: str) -> str:
    """Run the job ``spec_text`` describes; returns its ``JobResult`` as JSON."""
    from jobs.bulk_import import run_import
    from jobs.compaction import run_compaction
    from jobs.plans import CompactionSpec, ImportSpec, JobResult

    kind = json.loads(spec_text).get("kind")
    started = time.monotonic()
    if kind == "compaction":
        spec_c = CompactionSpec.from_json(spec_text)
        job_id = spec_c.job_id
        run_fn = lambda: run_compaction(spark, spec_c)  # noqa: E731
    elif kind == "import":
        spec_i = ImportSpec.from_json(spec_text)
        job_id = spec_i.job_id
        run_fn = lambda: run_import(spark, spec_i)  # noqa: E731
    else:
        raise ValueError(f"unknown job kind {kind!r}")
    try:
        result = run_fn()
    except Exception as err:  # the job's boundary: any failure becomes the result's error
        result = JobResult(job_id=job_id, error=_message(err))
    stats = {**result.stats, "seconds": round(time.monotonic() - started, 3)}
    return JobResult(
        job_id=result.job_id, error=result.error, rows=result.rows, outputs=result.outputs,
        targets=result.targets, stats=stats,
    ).to_json()


def main(argv: list[str] | None = None) -> int:
    from common.procutil import die_with_parent

    die_with_parent()  # the JVM that started us (spark-submit) is our parent: go with it
    p = argparse.ArgumentParser(prog="strata-job")
    p.add_argument("--spec", required=True)
    p.add_argument("--result", required=True)
    p.add_argument("--progress", default="")
    args = p.parse_args(argv)

    from pyspark.sql import SparkSession

    spark = SparkSession.builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    progress = ProgressWriter(spark, args.progress) if args.progress else None
    if progress is not None:
        progress.start()
    try:
        result = run(spark, Path(args.spec).read_text(encoding="utf-8"))
        _write_atomic(args.result, result)
    finally:
        if progress is not None:
            progress.stop.set()
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
