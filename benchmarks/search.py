"""Search benchmark: Strata's FLAT, HNSW and AUTOINDEX against hnswlib and numpy on the same data.

    .venv/bin/python benchmarks/search.py [--data clustered|gaussian] [--rows 100000] [--dim 128]
        [--queries 1000] [--index FLAT,HNSW,AUTOINDEX] [--M 16] [--ef-construction 200] [--ef 64]
        [--shards 2] [--batch 10000] [--clusters 100] [--spread 0.1] [--seed 1] [--dir PARENT] [--keep]

Run from the repo root, as a script (its sibling modules are imported from
this directory). Generates a seeded dataset and held-apart queries from the
same distribution, and the exact top 10 by numpy brute force. Then, in this
process, the bounds: hnswlib with the same M, efConstruction and ef (build
time, nq=1 latency and QPS, nq=100 QPS, recall@10) and numpy brute force.
Then ``strata standalone`` on a free loopback port in a temporary directory:
per index type a fresh collection, insert, flush, create_index, load; time to
searchable; nq=1 and nq=100 searches with ``consistency_level="Eventually"``
(the search, not the wait for tsafe); recall@10. Prints markdown tables
(figures, Strata/bound ratios, CPU per role) and one JSON line (``"search"``)
with every figure, the arguments and the peak RSS per role. The standalone is
always stopped, also on Ctrl-C or SIGTERM; the temporary directory is removed
unless ``--keep``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import sys
import time
from typing import Any

import psutil
from search_bound import run_hnswlib, run_numpy
from search_data import ground_truth, make_dataset
from search_strata import run_strata

INDEX_TYPES = ("FLAT", "HNSW", "AUTOINDEX")
K = 10


def _args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--data", choices=("gaussian", "clustered"), default="clustered")
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--queries", type=int, default=1000, help="held apart from the rows, same distribution")
    ap.add_argument("--clusters", type=int, default=100, help="centres of --data clustered")
    ap.add_argument("--spread", type=float, default=0.1, help="per-coordinate std. dev. around a centre")
    ap.add_argument("--index", default=",".join(INDEX_TYPES), help="comma-separated: FLAT, HNSW, AUTOINDEX")
    ap.add_argument("--M", dest="m", type=int, default=16)
    ap.add_argument("--ef-construction", type=int, default=200)
    ap.add_argument("--ef", type=int, default=64, help="search ef (HNSW, AUTOINDEX, hnswlib)")
    ap.add_argument("--shards", type=int, default=2)
    ap.add_argument("--batch", type=int, default=10_000, help="rows per insert request")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dir", default=None, help="parent of the temporary data directory")
    ap.add_argument("--keep", action="store_true", help="keep the data directory (logs, WAL, storage) afterwards")
    args = ap.parse_args()
    args.index = list(dict.fromkeys(t.strip().upper() for t in args.index.split(",") if t.strip()))
    unknown = set(args.index) - set(INDEX_TYPES)
    if unknown:
        ap.error(f"unknown index types {sorted(unknown)}; choose among {', '.join(INDEX_TYPES)}")
    if args.rows < K or args.queries < 1 or args.dim < 1 or args.batch < 1:
        ap.error(f"need --rows >= {K} and --queries, --dim, --batch >= 1")
    return args


def _ratio(a: float, b: float) -> float | None:
    return round(a / b, 3) if b else None


def _ratios(strata: dict[str, Any], bound: dict[str, Any], build_key: str | None) -> dict[str, Any]:
    """Strata / bound for throughput, latency and build; the recall difference."""
    out = {
        "nq1_qps": _ratio(strata["nq1"]["qps"], bound["nq1"]["qps"]),
        "nq1_p50": _ratio(strata["nq1"]["p50_ms"], bound["nq1"]["p50_ms"]),
        "nq100_qps": _ratio(strata["nq100"]["qps"], bound["nq100"]["qps"]),
        "recall_diff": round(strata["recall"] - bound["recall"], 4),
    }
    if build_key is not None:
        out["searchable_vs_build"] = _ratio(strata["searchable_s"], bound[build_key])
    return out


def _row(system: str, index: str, build: str, r: dict[str, Any], rss: str) -> str:
    a, b = r["nq1"], r["nq100"]
    return (
        f"| {system} | {index} | {build} | {a['qps']:,.0f} | {a['p50_ms']:.2f} / {a['p99_ms']:.2f} | "
        f"{b['qps']:,.0f} | {b['p50_ms']:.1f} / {b['p99_ms']:.1f} | {r['recall']:.4f} | {rss} |"
    )


def _print_tables(result: dict[str, Any]) -> None:
    print(
        "| system | index | searchable / build s | nq=1 QPS | nq=1 p50 / p99 ms | nq=100 QPS | "
        "nq=100 p50 / p99 ms | recall@10 | peak RSS MiB (node: streaming node, query node, proxy) |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for index, r in result["strata"].items():
        rss = r["peak_rss_mib"]
        print(_row("Strata", index, f"{r['searchable_s']:.1f}", r, f"{rss['node']:,.0f}"))
    h = result["hnswlib"]
    print(_row("hnswlib", "HNSW", f"{h['build_s']:.1f}", h, f"+{h['index_rss_mib']:,.0f} (index)"))
    print(_row("numpy", "brute force", "-", result["numpy"], "-"))
    print()
    print("| Strata / bound | nq=1 QPS | nq=1 p50 | nq=100 QPS | recall@10 diff | searchable / build |")
    print("|---|---|---|---|---|---|")
    for name, r in result["ratios"].items():
        build = r.get("searchable_vs_build")
        print(
            f"| {name} | {r['nq1_qps']} | {r['nq1_p50']} | {r['nq100_qps']} | {r['recall_diff']:+.4f} | "
            f"{'-' if build is None else build} |"
        )
    print()
    _print_cpu(result["strata"])


def _print_cpu(strata: dict[str, Any]) -> None:
    roles = ("client", "node", "coordinator", "etcd")
    print("| Strata CPU ms per request | " + " | ".join(roles) + " |")
    print("|---|" + "---|" * len(roles))
    for index, r in strata.items():
        for nq in ("nq1", "nq100"):
            cpu = r[nq]["cpu_ms_per_request"]
            print(f"| {index} {nq} | " + " | ".join(f"{cpu[role]:.2f}" for role in roles) + " |")


def _exit_on_sigterm(signum: int, frame: object) -> None:
    sys.exit(128 + signum)  # unwinds like Ctrl-C, so the standalone is stopped and the directory removed


def main() -> None:
    args = _args()
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    started = time.perf_counter()
    load_start = round(os.getloadavg()[0], 2)  # the machine is shared: say how busy it was
    data = make_dataset(
        args.data, args.rows, args.dim, args.queries, args.seed, clusters=args.clusters, spread=args.spread
    )
    truth = ground_truth(data, K)
    print(f"data and ground truth ready in {time.perf_counter() - started:.1f}s", file=sys.stderr, flush=True)
    hnsw = run_hnswlib(data, truth, m=args.m, ef_construction=args.ef_construction, ef=args.ef, seed=args.seed)
    print(f"hnswlib: {hnsw}", file=sys.stderr, flush=True)
    brute = run_numpy(data, truth)
    print(f"numpy: {brute}", file=sys.stderr, flush=True)
    strata = run_strata(
        data,
        truth,
        args.index,
        m=args.m,
        ef_construction=args.ef_construction,
        ef=args.ef,
        shards=args.shards,
        batch=args.batch,
        parent=args.dir,
        keep=args.keep,
    )
    ratios: dict[str, Any] = {}
    for index, r in strata.items():
        if index == "FLAT":
            ratios["FLAT / numpy"] = _ratios(r, brute, None)
        else:
            ratios[f"{index} / hnswlib"] = _ratios(r, hnsw, "build_s")
    peak: dict[str, float] = {}
    for r in strata.values():
        for role, mib in r["peak_rss_mib"].items():
            peak[role] = max(peak.get(role, 0.0), mib)
    result: dict[str, Any] = {
        "args": {k: v for k, v in vars(args).items() if k not in ("dir", "keep")},
        "k": K,
        "consistency_level": "Eventually",
        "cpus": psutil.cpu_count(),
        "loadavg_1m": {"start": load_start, "end": round(os.getloadavg()[0], 2)},
        "python": platform.python_version(),
        "strata": strata,
        "hnswlib": hnsw,
        "numpy": brute,
        "ratios": ratios,
        "peak_rss_mib": peak,
        "wall_s": round(time.perf_counter() - started, 1),
    }
    _print_tables(result)
    print(json.dumps({"search": result}))


if __name__ == "__main__":
    main()
