"""``strata import COLLECTION FILES...``: a bulk import through the Milvus API, with a progress bar.

It is what ``pymilvus.utility.do_bulk_insert`` does, then ``get_bulk_insert_state``
twice a second until the job ends. Local files are named by absolute path (the
server reads them: standalone, or a shared filesystem); a name that is not a
local file is a path in the cluster's object store. Exit status 0 when the
import completed, 1 when it failed (the reason names the file and field), 2
for a bad request.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import TextIO

BAR_WIDTH = 30


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "import",
        help="bulk-import Parquet, JSON or NumPy files into a collection",
        description="Import files into COLLECTION through the Milvus API (utility.do_bulk_insert) and wait.",
    )
    p.add_argument("collection")
    p.add_argument("files", nargs="+", help=".parquet, .json, .jsonl, or one .npy per field")
    p.add_argument("--uri", default="http://127.0.0.1:19530", help="the proxy (default http://127.0.0.1:19530)")
    p.add_argument("--partition", default="", help="partition to import into (default: the default partition)")
    p.add_argument("--timeout", type=float, default=3600.0, help="seconds to wait for the job (default 3600)")
    p.add_argument("--no-wait", action="store_true", help="print the job id and return")


def _bar(fraction: float, rows: int, state: str) -> str:
    done = int(round(max(0.0, min(1.0, fraction)) * BAR_WIDTH))
    return f"\r[{'#' * done}{'.' * (BAR_WIDTH - done)}] {fraction * 100:5.1f}% {state:<10} rows={rows}"


def _file_names(files: list[str]) -> list[str]:
    return [os.path.abspath(f) if os.path.exists(f) else f for f in files]


def run(args: argparse.Namespace, out: TextIO = sys.stderr) -> int:
    from pymilvus import BulkInsertState, MilvusException, connections, utility

    alias = f"strata-import-{os.getpid()}"
    try:
        connections.connect(alias=alias, uri=args.uri)
    except MilvusException as err:
        print(f"strata import: cannot connect to {args.uri}: {err.message}", file=out)
        return 2
    try:
        try:
            job = utility.do_bulk_insert(
                args.collection, _file_names(args.files), partition_name=args.partition or None, using=alias
            )
        except MilvusException as err:
            print(f"strata import: {err.message}", file=out)
            return 2
        if args.no_wait:
            print(job)
            return 0
        deadline = time.monotonic() + args.timeout
        while True:
            state = utility.get_bulk_insert_state(job, using=alias)
            progress = float(state.infos.get(BulkInsertState.IMPORT_PROGRESS, "0") or 0) / 100
            if state.state == BulkInsertState.ImportCompleted:
                out.write(_bar(1.0, state.row_count, "completed") + "\n")
                print(f"imported {state.row_count} rows (job {job})", file=out)
                return 0
            if state.state in (BulkInsertState.ImportFailed, BulkInsertState.ImportFailedAndCleaned):
                out.write(_bar(progress, state.row_count, "failed") + "\n")
                print(f"strata import: job {job} failed: {state.failed_reason}", file=out)
                return 1
            out.write(_bar(progress, state.row_count, state.state_name.lower()))
            out.flush()
            if time.monotonic() > deadline:
                print(f"\nstrata import: job {job} still running after {args.timeout:.0f}s", file=out)
                return 1
            time.sleep(0.5)
    finally:
        connections.disconnect(alias)
