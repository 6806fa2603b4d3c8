"""Binary vector search in process: the exact kernel, and BIN_IVF_FLAT against faiss' IndexBinaryIVF.

    .venv/bin/python benchmarks/binary_index.py [--rows 200000] [--bits 128] [--nlist 1024]
        [--nprobe 8,32] [--nq 1,100]

On seeded clustered codes (rows around 1,000 random centres, each bit flipped
with probability 0.1), times:

* the Hamming counts of the exact search: faiss' ``hammings`` (what
  ``segcore/segments/binary_metric.py`` uses) and numpy's ``bitwise_count``
  over the XOR of 64-bit words, in ms per query over every row;
* BIN_IVF_FLAT (``segcore/index/bin_ivf.py``) and faiss' ``IndexBinaryIVF``
  with the same ``nlist`` and ``nprobe``: build seconds, QPS at nq=1 and
  nq=100, and recall@10 (share of returned distances within the true 10th).

Prints a table; the README figures of ``segcore/index`` come from it.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import faiss
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from segcore.index.base import SearchParams  # noqa: E402
from segcore.index.factory import build_index  # noqa: E402
from segcore.index.options import IndexOptions  # noqa: E402
from segcore.index.spec import IndexSpec  # noqa: E402
from segcore.segments.binary_metric import hamming  # noqa: E402

IVF_ONLY = IndexOptions(exact_min_rows=0, exact_sqrt_factor=0.0)
K = 10


def clustered(n: int, bits: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = np.random.default_rng(0).random((1000, bits)) < 0.5
    return np.packbits(centres[rng.integers(0, 1000, n)] ^ (rng.random((n, bits)) < 0.1), axis=1)


def per_query_ms(fn, nq: int, repeat: int = 3) -> float:  # type: ignore[no-untyped-def]
    fn()
    start = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - start) / repeat / nq * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--bits", type=int, default=128)
    parser.add_argument("--nlist", type=int, default=1024)
    parser.add_argument("--nprobe", default="8,32")
    parser.add_argument("--nq", default="1,100")
    args = parser.parse_args()
    codes = clustered(args.rows, args.bits, seed=1)
    queries = clustered(100, args.bits, seed=2)
    words, qwords = codes.view(np.uint64), queries.view(np.uint64)

    print(f"{args.rows} rows x {args.bits} bits, faiss {faiss.__version__}, {faiss.omp_get_max_threads()} OpenMP threads")
    faiss_ms = per_query_ms(lambda: hamming(queries[:1], codes), 1)
    numpy_ms = per_query_ms(lambda: np.bitwise_count(qwords[:1, None, :] ^ words[None]).sum(-1), 1)
    print(f"exact Hamming counts, ms/query: faiss hammings {faiss_ms:.2f}, numpy bitwise_count {numpy_ms:.2f}")

    exact = build_index(IndexSpec(index_type="BIN_FLAT", metric="HAMMING", binary=True), codes)
    kth = exact.search(queries, K).distances[:, -1]

    began = time.perf_counter()
    ours = build_index(IndexSpec(index_type="BIN_IVF_FLAT", metric="HAMMING", params={"nlist": args.nlist},
                                 binary=True), codes, options=IVF_ONLY)
    ours_build = time.perf_counter() - began
    began = time.perf_counter()
    ref = faiss.IndexBinaryIVF(faiss.IndexBinaryFlat(args.bits), args.bits, args.nlist)
    ref.train(codes)
    ref.add(codes)
    ref_build = time.perf_counter() - began
    print(f"build s: BIN_IVF_FLAT {ours_build:.1f}, faiss IndexBinaryIVF {ref_build:.1f}")
    print("| nprobe | nq | BIN_IVF_FLAT QPS | recall@10 | faiss QPS | recall@10 |")
    print("|---|---|---|---|---|---|")
    for nprobe in (int(p) for p in args.nprobe.split(",")):
        ref.nprobe = nprobe
        for nq in (int(n) for n in args.nq.split(",")):
            q = queries[:nq]
            params = SearchParams(nprobe=nprobe)
            ours_ms = per_query_ms(lambda q=q, params=params: ours.search(q, K, params=params), nq)
            ref_ms = per_query_ms(lambda q=q: ref.search(q, K), nq)
            ours_recall = float(np.mean(ours.search(q, K, params=params).distances <= kth[:nq, None]))
            ref_recall = float(np.mean(ref.search(q, K)[0] <= kth[:nq, None]))
            print(f"| {nprobe} | {nq} | {1000 / ours_ms:,.0f} | {ours_recall:.3f} | {1000 / ref_ms:,.0f} | "
                  f"{ref_recall:.3f} |")


if __name__ == "__main__":
    main()
