"""DISKANN against HNSW on one segment: resident memory of the loaded index, and QPS at a recall.

    .venv/bin/python benchmarks/diskann_memory.py [--rows 200000] [--dim 128] [--data clustered]
        [--queries 1000] [--target 0.95] [--threads 2] [--seed 1]

1. Build both indexes over the same seeded rows through Strata's factory (the
   code a query node runs): DISKANN with Milvus' defaults (``max_degree`` 56,
   ``search_list_size`` 100, ``pq_code_budget_gb_ratio`` 0.125,
   ``search_cache_budget_gb_ratio`` 0.10) and HNSW with ``M`` 16,
   ``efConstruction`` 200; store each as the index store does (``serialize``).
2. For each, a fresh subprocess loads the segment's vectors (as a worker
   holds them, in memory), reads its RSS, restores the index from the stored
   bytes (``restore_index``, as ``load_index`` does), drops the bytes and
   reads its RSS again: *index RSS* is the difference (diskannpy is imported
   before the first reading: its code is paid once a process), *total* the second
   reading (the vectors included), *peak* the process' high-water mark.
3. In the same subprocess: sweep ``search_list`` (DISKANN) or ``ef`` (HNSW)
   and keep the smallest value that reaches ``--target`` recall@10 against
   the exact top 10, then time nq=1 (one thread) and nq=100 (``--threads``)
   at it (exact fallbacks off: thresholds zero).

Prints a markdown table and a JSON line (``"diskann_memory"``).
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from search_data import ground_truth, make_dataset, recall, time_requests

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from segcore.index.base import SearchParams  # noqa: E402
from segcore.index.factory import IndexSpec, build_index, restore_index  # noqa: E402
from segcore.index.options import IndexOptions  # noqa: E402

K = 10
SPECS = {
    "DISKANN": IndexSpec(index_type="DISKANN", metric="L2", params={}),
    "HNSW": IndexSpec(index_type="HNSW", metric="L2", params={"M": 16, "efConstruction": 200}),
}
SWEEP = [10, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512]


def _rss_mib(field: str = "VmRSS") -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def _params(kind: str, value: int) -> SearchParams:
    return SearchParams(search_list=value) if kind == "DISKANN" else SearchParams(ef=value)


def child(kind: str, work: Path, target: float, threads: int) -> dict[str, object]:
    """Load one index in this fresh process; memory, then the sweep and the timings."""
    vectors = np.load(work / "vectors.npy")
    queries = np.load(work / "queries.npy")
    truth = np.load(work / "truth.npy")
    if kind == "DISKANN":
        import diskannpy  # noqa: F401, PLC0415 - the library's code pages are once per process, not per index
    gc.collect()
    before = _rss_mib()
    t0 = time.perf_counter()
    blob = (work / f"{kind}.bin").read_bytes()
    options = IndexOptions(threads=threads, exact_min_rows=0, exact_sqrt_factor=0.0)
    index = restore_index(SPECS[kind], vectors, blob, options=options)
    load_s = time.perf_counter() - t0
    del blob
    gc.collect()
    after = _rss_mib()
    chosen, reached = SWEEP[-1], 0.0
    for value in SWEEP:
        hits = index.search(queries, K, params=_params(kind, value), threads=threads)
        reached = recall(hits.rows, truth)
        if reached >= target:
            chosen = value
            break
    params = _params(kind, chosen)
    one, _ = time_requests(queries, 1, lambda q: index.search(q, K, params=params, threads=1))
    batch, _ = time_requests(queries, 100, lambda q: index.search(q, K, params=params, threads=threads), warmup=1)
    return {
        "kind": kind,
        "vectors_mib": round(before, 1),
        "index_rss_mib": round(after - before, 1),
        "total_rss_mib": round(after, 1),
        "peak_rss_mib": round(_rss_mib("VmHWM"), 1),
        "load_s": round(load_s, 2),
        "param": chosen,
        "recall": round(reached, 4),
        "qps_nq1": one.summary()["qps"],
        "qps_nq100": batch.summary()["qps"],
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--data", default="clustered")
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--target", type=float, default=0.95)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--child", default="")
    parser.add_argument("--work", default="")
    args = parser.parse_args()
    if args.child:
        result = child(args.child, Path(args.work), args.target, args.threads)
        (Path(args.work) / f"{args.child}.json").write_text(json.dumps(result))  # stdout has native logs
        return
    with tempfile.TemporaryDirectory(prefix="diskann-bench-") as tmp:
        work = Path(tmp)
        data = make_dataset(args.data, args.rows, args.dim, args.queries, args.seed)
        np.save(work / "vectors.npy", data.vectors)
        np.save(work / "queries.npy", data.queries)
        np.save(work / "truth.npy", ground_truth(data, K))
        builds: dict[str, float] = {}
        for kind, spec in SPECS.items():
            t0 = time.perf_counter()
            index = build_index(spec, data.vectors, options=IndexOptions(threads=args.threads))
            builds[kind] = round(time.perf_counter() - t0, 1)
            blob = index.serialize()
            assert blob is not None
            (work / f"{kind}.bin").write_bytes(blob)
            del index, blob
            gc.collect()
        del data
        rows = []
        for kind in SPECS:
            subprocess.run(
                [sys.executable, __file__, "--child", kind, "--work", str(work), "--target", str(args.target),
                 "--threads", str(args.threads)],
                check=True, stdout=subprocess.DEVNULL,
            )
            row = json.loads((work / f"{kind}.json").read_text())
            row["build_s"] = builds[kind]
            row["stored_mib"] = round((work / f"{kind}.bin").stat().st_size / 2**20, 1)
            rows.append(row)
    print(f"\n{args.rows} x {args.dim} {args.data}, recall@{K} target {args.target}, {args.threads} threads\n")
    print("| index | build s | stored MiB | index RSS MiB | total RSS MiB | peak MiB | param | recall | nq=1 QPS "
          "| nq=100 QPS |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['kind']} | {r['build_s']} | {r['stored_mib']} | {r['index_rss_mib']} | {r['total_rss_mib']} "
              f"| {r['peak_rss_mib']} | {r['param']} | {r['recall']} | {r['qps_nq1']} | {r['qps_nq100']} |")
    print(json.dumps({"diskann_memory": rows, "rows": args.rows, "dim": args.dim, "data": args.data}))


if __name__ == "__main__":
    main()
