"""Strata side by side with real Milvus 2.3.5, milvus-lite and the in-process bounds (hnswlib, numpy), on the same data.

    .venv/bin/python benchmarks/compare.py [--quick] [--data random,clustered,text] [--rows 100000] [--dim 128]
        [--queries 1000] [--systems strata,milvus,milvus-lite,hnswlib,numpy] [--no-milvus]
        [--milvus-venv DIR] [--M 16] [--ef-construction 200] [--ef 64]
        [--ef-sweep 16,32,64,128,256,512,1024,2048] [--shards 1,2] [--batch 1000] [--no-compact] [--nq1-requests 200]
        [--clients 16] [--concurrent-requests 320] [--scalar-requests 20] [--seed 1] [--out DIR] [--cache DIR]
        [--dir PARENT] [--keep]

Run from the repo root, as a script (its sibling modules are imported from
this directory). Per data set: the data and its exact truths (cached under
``--cache``); hnswlib and numpy in this process; then ``strata standalone``,
Milvus 2.3.5's ``milvus-server`` and ``milvus-lite server``, one at a time,
each on a free loopback port in a temporary directory, all loaded and
searched by the same pymilvus code.
Strata runs once per ``--shards`` count: the first (1, what ``create_collection``
gives by default, in Milvus as in Strata) is "Strata" and the one issue #8's
goals are computed on; the others are reported beside it as "Strata, N shards".
Milvus 2.3.5 runs right after "Strata" (the two closest in time on a shared
machine) with the same shard count; milvus-lite has no shards and runs once.

Milvus 2.3.5 (``milvus``, in the systems by default; ``--no-milvus`` leaves it
out) is the ``milvus==2.3.5`` wheel's ``milvus-server``, the Go and C++ of
Milvus (``milvus_server.py``). It needs a venv of its own: ``--milvus-venv``,
by default ``<--cache>/milvus-2.3.5``, made with ``pip install milvus==2.3.5``
on first use (81 MB installed, from PyPI; an install that fails is reported as
that system's failure). It serves on 127.0.0.1 (every call of this script goes
there; its gRPC servers listen on every interface, Milvus 2.3 has no setting)
and its process group is killed when its turn ends. Its embedded etcd's peer
port 2380 is fixed: one milvus-server on the machine at a time (its turn
waits up to 5 minutes for the port). Every table gets its figures divided by
Milvus 2.3.5's ("vs Milvus 2.3.5"), and issue #33's goals are computed on them.

Writes ``compare.md``, ``compare-recall-qps.png`` and ``compare-latency.png``
under ``--out`` (``compare.json`` beside them; no plots without matplotlib)
and prints one JSON line (``"compare"``) on stdout; progress goes to stderr.
Every server is stopped when its turn ends, also on Ctrl-C or SIGTERM. A
system that fails is reported as failed and the run goes on.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import functools
import json
import os
import platform
import resource
import shutil
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
from compare_bounds import run_hnswlib, run_numpy
from compare_data import KINDS, CompareSet, load_set
from compare_measure import K, LoopOptions, measure
from compare_report import all_goals, markdown, plots, strata_name
from compare_servers import IndexOptions, Server, load, milvus_lite, strata
from compare_targets import MilvusTarget
from compare_vs_milvus import MILVUS, vs_milvus
from milvus_server import install, milvus_235

HERE = Path(__file__).resolve().parent
SYSTEMS = ("strata", "milvus", "milvus-lite", "hnswlib", "numpy")
#: How long Milvus 2.3.5's turn waits for another milvus-server to free etcd's peer port 2380.
MILVUS_PORT_WAIT_S = 300.0
QUICK = {
    "rows": 5_000,
    "queries": 200,
    "ef_sweep": "16,64,256",
    "nq1_requests": 50,
    "concurrent_requests": 64,
    "scalar_requests": 5,
}


def _csv(raw: str) -> list[str]:
    return list(dict.fromkeys(x.strip().lower() for x in raw.split(",") if x.strip()))


def _args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smoke run: 5,000 rows, 200 queries, few requests")
    ap.add_argument("--data", default=",".join(KINDS), help="comma-separated: random, clustered, text")
    ap.add_argument("--rows", type=int, default=100_000, help="rows per set (text: at most 100,000)")
    ap.add_argument("--dim", type=int, default=128, help="random and clustered (text is 384)")
    ap.add_argument("--queries", type=int, default=1000, help="held apart from the rows (text: at most 1,000)")
    ap.add_argument("--systems", default=",".join(SYSTEMS), help="milvus: real Milvus 2.3.5 (milvus-server)")
    ap.add_argument("--no-milvus", action="store_true", help="leave out real Milvus 2.3.5 (and its install)")
    ap.add_argument(
        "--milvus-venv",
        type=Path,
        default=None,
        help="venv with the milvus==2.3.5 wheel (default <--cache>/milvus-2.3.5, installed there on first use)",
    )
    ap.add_argument("--M", dest="m", type=int, default=16)
    ap.add_argument("--ef-construction", type=int, default=200)
    ap.add_argument("--ef", type=int, default=64)
    ap.add_argument("--ef-sweep", default="16,32,64,128,256,512,1024,2048")
    ap.add_argument("--shards", default="1,2", help="comma-separated shard counts, one Strata run each")
    ap.add_argument("--batch", type=int, default=1000, help="rows per insert request")
    ap.add_argument(
        "--no-compact", dest="compact", action="store_false", help="leave out compact() between the flush and the index"
    )
    ap.add_argument("--nq1-requests", type=int, default=200)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--concurrent-requests", type=int, default=320)
    ap.add_argument("--scalar-requests", type=int, default=20)
    ap.add_argument("--batch-passes", type=int, default=3, help="times the nq=100 loop goes over the queries")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, default=None, help="default benchmarks/results (--quick: .cache/quick)")
    ap.add_argument("--cache", type=Path, default=HERE / ".cache", help="text embeddings and ground truths")
    ap.add_argument("--dir", default=None, help="parent of the temporary server directories")
    ap.add_argument("--keep", action="store_true", help="keep the servers' directories (logs, data) afterwards")
    args = ap.parse_args()
    if args.quick:
        for key, value in QUICK.items():
            if getattr(args, key) == ap.get_default(key):
                setattr(args, key, value)
    if args.out is None:
        args.out = args.cache / "quick" if args.quick else HERE / "results"
    args.data = _csv(args.data)
    args.systems = _csv(args.systems)
    if args.no_milvus:
        args.systems = [s for s in args.systems if s != "milvus"]
    if args.milvus_venv is None:
        args.milvus_venv = args.cache / "milvus-2.3.5"
    args.milvus_venv = args.milvus_venv.resolve()
    for name, got, known in (("data", args.data, KINDS), ("systems", args.systems, SYSTEMS)):
        if not got or set(got) - set(known):
            ap.error(f"--{name}: choose among {', '.join(known)}")
    try:
        args.ef_sweep = tuple(sorted({int(x) for x in args.ef_sweep.split(",") if x.strip()}))
    except ValueError:
        ap.error("--ef-sweep: comma-separated integers")
    try:
        args.shards = tuple(dict.fromkeys(int(x) for x in args.shards.split(",") if x.strip()))
    except ValueError:
        ap.error("--shards: comma-separated integers")
    if not args.shards or min(args.shards) < 1:
        ap.error("--shards: at least one count, each >= 1")
    if args.dir is not None:
        Path(args.dir).mkdir(parents=True, exist_ok=True)  # the parent of every server's directory
    if args.rows < K or args.queries < 1:
        ap.error(f"need --rows >= {K} and --queries >= 1")
    return args


def _log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def _guarded(name: str, run: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """One system's figures, or its error: one failing system does not lose the others' figures."""
    try:
        return run()
    except Exception as err:  # the run's boundary: logged, reported in the table and the JSON line
        _log(f"{name} failed:\n{traceback.format_exc()}")
        return {"error": f"{type(err).__name__}: {err}"}


def _start(kind: str, workdir: Path, milvus_venv: Path) -> contextlib.AbstractContextManager[Server]:
    if kind == "strata":
        return strata(workdir)
    if kind == "milvus":
        install(milvus_venv, _log)  # once: the venv stays under --cache
        return milvus_235(workdir, milvus_venv, port_wait=MILVUS_PORT_WAIT_S)
    return milvus_lite(workdir)


def _server_run(
    kind: str, name: str, workdir: Path, data: CompareSet, index: IndexOptions, loops: LoopOptions, milvus_venv: Path
) -> dict[str, Any]:
    with _start(kind, workdir, milvus_venv) as server:
        _log(f"{name} up at {server.uri}")
        out = load(server.uri, data, index, lambda m: _log(f"{name} {m}"))
        _log(f"{name} searchable after {out['searchable_s']}s")
        target = MilvusTarget(name, server.uri)
        try:
            out.update(measure(target, data, loops, _log))
        finally:
            target.close()
    out["peak_rss_mib"] = server.peak_rss_mib
    out["shards"] = index.shards
    return out


def run_set(kind: str, args: argparse.Namespace, index: IndexOptions, loops: LoopOptions) -> dict[str, Any]:
    t0 = time.perf_counter()
    data = load_set(
        kind, rows=args.rows, dim=args.dim, queries=args.queries, seed=args.seed, k=K, cache=args.cache, log=_log
    )
    _log(f"{kind}: {data.rows:,} x {data.dim} and truths ready in {time.perf_counter() - t0:.1f}s")
    systems: dict[str, dict[str, Any]] = {}
    if "hnswlib" in args.systems:
        systems["hnswlib"] = _guarded("hnswlib", lambda: run_hnswlib(data, index, loops, args.seed, _log))
    if "numpy" in args.systems:
        systems["numpy"] = _guarded("numpy", lambda: run_numpy(data, loops, _log))
    runs = [("strata", strata_name(n, args.shards), n) for n in args.shards] if "strata" in args.systems else []
    if "milvus" in args.systems:  # right after the default Strata run: the pair compared closest in time
        runs.insert(min(1, len(runs)), ("milvus", MILVUS, args.shards[0]))
    if "milvus-lite" in args.systems:
        runs.append(("milvus-lite", "milvus-lite", args.shards[0]))  # it has no shards: asked for the default
    for kind_of_server, name, shards in runs:
        tmp = Path(tempfile.mkdtemp(dir=args.dir, prefix=f"compare-{kind_of_server}-"))
        opts = dataclasses.replace(index, shards=shards)
        try:
            run = functools.partial(_server_run, kind_of_server, name, tmp, data, opts, loops, args.milvus_venv)
            systems[name] = _guarded(name, run)
        finally:
            if args.keep:
                _log(f"{name} directory kept: {tmp}")
            else:
                shutil.rmtree(tmp, ignore_errors=True)
    return {
        "rows": data.rows,
        "dim": data.dim,
        "queries": len(data.queries),
        "filters": [{"label": f.label, "expr": f.expr, "share": round(f.share, 4)} for f in data.filters],
        "systems": systems,
        "goals": all_goals(systems),
        "vs_milvus": vs_milvus(systems),
        "wall_s": round(time.perf_counter() - t0, 1),
    }


def _exit_on_sigterm(signum: int, frame: object) -> None:
    sys.exit(128 + signum)  # unwinds like Ctrl-C: every server's context manager stops it


def main() -> None:
    args = _args()
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    index = IndexOptions(
        m=args.m, ef_construction=args.ef_construction, shards=args.shards[0], batch=args.batch, compact=args.compact
    )
    loops = LoopOptions(
        ef=args.ef,
        ef_sweep=args.ef_sweep,
        nq1_requests=args.nq1_requests,
        clients=args.clients,
        concurrent_requests=args.concurrent_requests,
        scalar_requests=args.scalar_requests,
        batch_passes=args.batch_passes,
    )
    index.validate()
    loops.validate()
    started = time.perf_counter()
    load_start = round(os.getloadavg()[0], 2)  # the machine is shared: say how busy it was
    sets = {}
    for kind in args.data:
        sets[kind] = run_set(kind, args, index, loops)
    result: dict[str, Any] = {
        "date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
        "args": {k: v for k, v in vars(args).items() if k not in ("out", "cache", "dir", "keep", "milvus_venv")},
        "sweep_stop_recall": loops.sweep_stop_recall,
        "cpus": psutil.cpu_count(),
        "python": platform.python_version(),
        "loadavg_1m": {"start": load_start, "end": round(os.getloadavg()[0], 2)},
        "sets": sets,
        # This process: the client threads, every data set and truth, and the in-process bounds (KiB on Linux).
        "benchmark_process_peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "wall_s": round(time.perf_counter() - started, 1),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "compare.md").write_text(markdown(result))
    (args.out / "compare.json").write_text(json.dumps(result, indent=1))
    for path in plots(result, args.out):
        _log(f"wrote {path}")
    _log(f"wrote {args.out / 'compare.md'} in {result['wall_s']:.0f}s")
    print(json.dumps({"compare": result}))


if __name__ == "__main__":
    main()
