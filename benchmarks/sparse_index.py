"""Sparse vector search in process: exact, and SPARSE_INVERTED_INDEX with each algorithm and drop ratio.

    .venv/bin/python benchmarks/sparse_index.py [--rows 100000] [--vocab 30000] [--nnz 120] [--qnnz 24] [--nq 100]

On seeded SPLADE-like rows (terms drawn with Zipf-like frequencies from
``--vocab``, ``--nnz`` pairs a row on average, positive values), times the
index build and the search of ``--nq`` queries one at a time (ms per query,
topk 10) for the exact search and for TAAT_NAIVE, DAAT_WAND and DAAT_MAXSCORE,
and recall@10 against the exact hits with drop ratios. Prints a table; the
README figures of ``segcore/index`` come from it.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from segcore.index.base import SearchParams  # noqa: E402
from segcore.index.factory import build_index  # noqa: E402
from segcore.index.sparse_exact import SparseExactIndex  # noqa: E402
from segcore.index.spec import IndexSpec  # noqa: E402
from segcore.segments.metric import Metric  # noqa: E402
from segcore.segments.sparse_rows import SparseRows, canonical_row, pad_queries, rows_from_pairs  # noqa: E402

K = 10


def rows(rng: np.random.Generator, n: int, vocab: int, nnz: int) -> SparseRows:
    weights = 1.0 / np.arange(1, vocab + 1) ** 0.8
    weights /= weights.sum()
    out = []
    for _ in range(n):
        k = max(1, int(rng.poisson(nnz)))
        idx = np.unique(rng.choice(vocab, k, p=weights))
        out.append(canonical_row(idx, rng.exponential(1.0, len(idx)).astype(np.float32)))
    return rows_from_pairs(out)


def timed(index: object, queries: np.ndarray, params: SearchParams) -> tuple[float, float, np.ndarray]:
    """ms per query searched one at a time, ms per query in one batch, and the hits."""
    index.search(queries[:1], K, params=params)  # type: ignore[attr-defined]  # warm: the index's lazy matrix
    start = time.perf_counter()
    found = [index.search(queries[i : i + 1], K, params=params).rows[0] for i in range(len(queries))]  # type: ignore[attr-defined]
    one = (time.perf_counter() - start) * 1000 / len(queries)
    start = time.perf_counter()
    index.search(queries, K, params=params)  # type: ignore[attr-defined]
    return one, (time.perf_counter() - start) * 1000 / len(queries), np.array(found)


def recall(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.mean([len(set(g[g >= 0]) & set(w[w >= 0])) / max(1, len(w[w >= 0])) for g, w in zip(got, want, strict=True)]))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--vocab", type=int, default=30_000)
    parser.add_argument("--nnz", type=int, default=120)
    parser.add_argument("--qnnz", type=int, default=24)
    parser.add_argument("--nq", type=int, default=100)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    base = rows(rng, args.rows, args.vocab, args.nnz)
    queries = pad_queries(rows(rng, args.nq, args.vocab, args.qnnz))
    print(f"{args.rows} rows, {base.nnz} pairs, {args.nq} queries of ~{args.qnnz} terms, top {K}")
    exact_ms, exact_batch, exact = timed(SparseExactIndex(base, Metric.IP), queries, SearchParams())
    print(f"{'':<36} {'build':>8} {'nq=1':>8} {'nq=' + str(args.nq):>8} (ms/query)")
    print(f"{'exact':<36} {'':>8} {exact_ms:8.2f} {exact_batch:8.2f}  recall 1.000")
    runs = [(algo, drops, None) for algo in ("TAAT_NAIVE", "DAAT_WAND", "DAAT_MAXSCORE") for drops in ((0.0, 0.0), (0.2, 0.2))]
    for algo, (build_drop, search_drop), ratio in [*runs, ("DAAT_MAXSCORE", (0.0, 0.0), 0.8)]:
        spec = IndexSpec(index_type="SPARSE_INVERTED_INDEX", metric="IP", sparse=True,
                         params={"inverted_index_algo": algo, "drop_ratio_build": build_drop})
        start = time.perf_counter()
        index = build_index(spec, base)
        build_s = time.perf_counter() - start
        ms, batch, got = timed(index, queries, SearchParams(drop_ratio_search=search_drop, dim_max_score_ratio=ratio))
        label = f"{algo} drop {build_drop}/{search_drop}" + ("" if ratio is None else f" ratio {ratio}")
        print(f"{label:<36} {build_s:6.2f} s {ms:8.2f} {batch:8.2f}  recall {recall(got, exact):.3f}")


if __name__ == "__main__":
    main()
