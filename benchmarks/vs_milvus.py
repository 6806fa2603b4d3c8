"""Strata against real Milvus 2.3.5, index type by index type, through the same pymilvus code.

    .venv/bin/python benchmarks/vs_milvus.py [--sets random,clustered,text,binary-random,binary-clustered]
        [--indexes FLAT,IVF_FLAT,...] [--rows 50000] [--text-rows 20000] [--dim 128] [--bits 256]
        [--queries 1000] [--nlist 0] [--target 0.95] [--nq1-requests 200] [--passes 3]
        [--milvus-venv /tmp/milvus235] [--seed 1] [--cache DIR] [--json FILE] [--dir PARENT] [--keep]

Starts ``strata standalone`` and Milvus 2.3.5's ``milvus-server``
(``milvus_server.py``; install: ``python3.11 -m venv /tmp/milvus235 &&
/tmp/milvus235/bin/pip install milvus==2.3.5``), both on loopback, both up
for the whole run. For each data set and each index type Milvus 2.3.5 has
(FLAT, IVF_FLAT, IVF_SQ8, IVF_PQ, HNSW, SCANN, DISKANN on float vectors;
BIN_FLAT, BIN_IVF_FLAT on binary ones) it runs ``vs_milvus_run.run_index`` on
one server, then the other (who goes first alternates per index), so both
see the machine's load of the same minutes. Prints a markdown table and one
JSON line (``"vs_milvus"``); progress on stderr. Both servers are stopped
however the run ends (error, Ctrl-C, SIGTERM). The text set needs its
MiniLM embeddings in the cache (``compare_text.py`` makes them; without
``sentence-transformers`` installed and no cache, the set is skipped).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from compare_servers import strata
from compare_text import DEFAULT_CACHE
from milvus_server import DEFAULT_VENV, milvus_235
from vs_milvus_cases import Workload, binary_workload, cases, default_nlist, float_workload
from vs_milvus_run import RunOptions, run_index
from vs_milvus_table import markdown

SETS = ("random", "clustered", "text", "binary-random", "binary-clustered")
#: Index types the wheel's Milvus 2.3.5 cannot build: its index node fails DISKANN with a C++
#: ``bad_function_call`` and retries the build without end (the wheel is milvus-lite's build of 2.3.5).
MILVUS_CANNOT = {"DISKANN": "the wheel's index node fails the build (C++ bad_function_call) and retries it forever"}


def _log(msg: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {msg}", file=sys.stderr, flush=True)


def _args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--indexes", default="", help="index types to run (default: every one of the set's kind)")
    ap.add_argument("--rows", type=int, default=50_000)
    ap.add_argument("--text-rows", type=int, default=20_000)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--bits", type=int, default=256)
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--nlist", type=int, default=0, help="IVF lists; 0: 4·sqrt(rows) rounded to a power of two")
    ap.add_argument("--target", type=float, default=0.95)
    ap.add_argument("--nq1-requests", type=int, default=200)
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--milvus-venv", type=Path, default=DEFAULT_VENV)
    ap.add_argument("--milvus-diskann", action="store_true", help="ask Milvus for DISKANN too (fails, see above)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    ap.add_argument("--json", type=Path, default=None, help="also write the figures to this file")
    ap.add_argument("--dir", type=Path, default=None, help="parent of the servers' temporary directory")
    ap.add_argument("--keep", action="store_true", help="keep the servers' directories (logs, data)")
    args = ap.parse_args()
    args.sets = [s.strip() for s in args.sets.split(",") if s.strip()]
    args.indexes = {s.strip().upper() for s in args.indexes.split(",") if s.strip()}
    if set(args.sets) - set(SETS):
        ap.error(f"--sets among {', '.join(SETS)}")
    if args.queries < 100 or args.queries % 100 or args.dim % 4 or args.bits % 64:
        ap.error("--queries a multiple of 100, --dim a multiple of 4, --bits a multiple of 64")
    return args


def _workload(name: str, args: argparse.Namespace) -> Workload | None:
    if name.startswith("binary-"):
        return binary_workload(name.removeprefix("binary-"), rows=args.rows, bits=args.bits, queries=args.queries,
                               seed=args.seed)  # fmt: skip
    rows = args.text_rows if name == "text" else args.rows
    try:
        return float_workload(name, rows=rows, dim=args.dim, queries=args.queries, seed=args.seed, cache=args.cache,
                              log=_log)  # fmt: skip
    except ImportError as err:  # the MiniLM model is needed and not installed: no cache to read either
        _log(f"set {name} skipped: {err} (build its cache with benchmarks/compare_text.py)")
        return None


def _exit_on_sigterm(signum: int, frame: object) -> None:
    sys.exit(128 + signum)  # unwinds like Ctrl-C: both servers are stopped, the directory removed


def main() -> None:
    args = _args()
    opts = RunOptions(target=args.target, nq1_requests=args.nq1_requests, passes=args.passes)
    opts.validate()
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    started = datetime.datetime.now()
    work = Path(tempfile.mkdtemp(prefix="vs-milvus-", dir=args.dir))
    results: list[dict[str, Any]] = []
    try:
        with contextlib.ExitStack() as stack:
            _log("starting strata standalone and milvus-server 2.3.5")
            servers = [stack.enter_context(strata(work)), stack.enter_context(milvus_235(work, args.milvus_venv))]
            turn = 0
            for name in args.sets:
                data = _workload(name, args)
                if data is None:
                    continue
                nlist = args.nlist or default_nlist(data.rows)
                for case in cases(data.dim, nlist, data.binary):
                    if args.indexes and case.index_type not in args.indexes:
                        continue
                    row: dict[str, Any] = {"set": data.name, "rows": data.rows, "dim": data.dim,
                                           "index": case.index_type, "build": case.build, "sweep": case.sweep}  # fmt: skip
                    order = servers if turn % 2 == 0 else servers[::-1]
                    turn += 1
                    for server in order:
                        cannot = MILVUS_CANNOT.get(case.index_type) if server is servers[1] else None
                        if cannot and not args.milvus_diskann:
                            row[server.name] = {"error": f"not run: {cannot}"}
                            continue
                        try:
                            row[server.name] = run_index(server, data, case, opts, _log)
                        except Exception as err:  # one failing index on one server: reported, the run goes on
                            _log(f"{server.name} {data.name} {case.index_type} failed: {err!r}")
                            row[server.name] = {"error": repr(err)[:300]}
                    results.append(row)
    finally:
        if args.keep:
            _log(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    elapsed = (datetime.datetime.now() - started).total_seconds()
    print(markdown(results, ["Strata", "Milvus 2.3.5"]))
    run = {"started": started.isoformat(timespec="minutes"), "elapsed_s": round(elapsed),
           "args": {k: str(v) if isinstance(v, Path | set) else v for k, v in vars(args).items()},
           "results": results}  # fmt: skip
    if args.json is not None:
        args.json.write_text(json.dumps(run, indent=1))
    print(json.dumps({"vs_milvus": run}))


if __name__ == "__main__":
    main()
