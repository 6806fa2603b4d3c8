"""Exact search vs the filtered HNSW walk, by share of allowed rows and batch size (segcore/index/options.py).

    .venv/bin/python benchmarks/filtered_exact.py [--rows 200000] [--dim 128] [--ef 64]
        [--shares 0.02,0.05,0.1,0.2] [--nq 1,10,100]

Builds one HNSW index (M=16, efConstruction=200, both cores) and one FLAT
index over the same seeded Gaussian rows, then times, per share of allowed
rows and per batch size, the exact search over the allowed rows and the
filtered graph walk (the walk forced by zero thresholds). Each is timed
alone and as two searches side by side in two threads, as a query node runs
a collection's two shards. Prints ms per query; the figures behind the
exact-search threshold come from this script.
"""

from __future__ import annotations

import argparse
import functools
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from segcore.index.base import SearchParams  # noqa: E402
from segcore.index.factory import build_index, restore_index  # noqa: E402
from segcore.index.options import IndexOptions  # noqa: E402
from segcore.index.spec import IndexSpec  # noqa: E402

WALK_ONLY = IndexOptions(exact_min_rows=0, exact_sqrt_factor=0.0)


def _per_query_ms(search: Callable[[], object], nq: int, threads: int) -> float:
    search()  # warm
    workers = [threading.Thread(target=search) for _ in range(threads)]
    start = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return (time.perf_counter() - start) / nq * 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--ef", type=int, default=64)
    ap.add_argument("--shares", default="0.02,0.05,0.1,0.2")
    ap.add_argument("--nq", default="1,10,100")
    args = ap.parse_args()
    shares = [float(s) for s in args.shares.split(",")]
    batches = [int(n) for n in args.nq.split(",")]
    if args.rows < 1000 or args.dim < 1 or args.ef < 1 or not all(0 < s <= 1 for s in shares) or min(batches) < 1:
        ap.error("--rows >= 1000, positive --dim, --ef and --nq, shares in (0, 1]")
    rng = np.random.default_rng(0)
    rows = rng.standard_normal((args.rows, args.dim)).astype(np.float32)
    queries = rng.standard_normal((max(batches), args.dim)).astype(np.float32)
    spec = IndexSpec(index_type="HNSW", metric="L2", params={"M": 16, "efConstruction": 200})
    start = time.perf_counter()
    built = build_index(spec, rows, options=IndexOptions(threads=2))
    # The same graph, searched as a node searches (one thread a call) with the exact fallback off.
    hnsw = restore_index(spec, rows, built.serialize(), options=WALK_ONLY)
    print(f"HNSW over {args.rows:,} x {args.dim} built in {time.perf_counter() - start:.1f} s")
    flat = build_index(IndexSpec(index_type="FLAT", metric="L2", params={}), rows)
    print("| allowed | nq | exact ms/query alone / two | walk ms/query alone / two |")
    print("|---|---|---|---|")
    for share in shares:
        allowed = rng.random(args.rows) < share
        for nq in batches:
            q = queries[:nq]
            cells = []
            for index in (flat, hnsw):
                search = functools.partial(index.search, q, 10, allowed=allowed, params=SearchParams(ef=args.ef))
                cells.append(f"{_per_query_ms(search, nq, 1):.3f} / {_per_query_ms(search, nq, 2):.3f}")
            print(f"| {share:.0%} ({int(allowed.sum()):,}) | {nq} | {cells[0]} | {cells[1]} |")


if __name__ == "__main__":
    main()
