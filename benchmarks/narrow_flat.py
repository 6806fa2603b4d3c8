"""FLAT over FLOAT16, BFLOAT16 and INT8 rows beside float32: the matrix kept and a search's time.

    .venv/bin/python benchmarks/narrow_flat.py [--rows 200000] [--dim 128] [--nq 10] [--repeat 5]

Seeded Gaussian rows stored each way (bfloat16 as its bits, int8 scaled by 40
and clipped); a FLAT index (``segcore/index/flat.py``) over each, L2, top 10;
prints the resident matrix size and the mean search time. The narrow searches
convert the rows to float32 a chunk at a time (``common/narrow_vectors.py``);
the figure in ``segcore/index/README.md`` comes from this script.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from segcore.index.factory import IndexSpec, build_index  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--nq", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    base = rng.standard_normal((args.rows, args.dim)).astype(np.float32)
    queries = rng.standard_normal((args.nq, args.dim)).astype(np.float32)
    matrices: dict[str, np.ndarray] = {
        "float32": base,
        "float16": base.astype(np.float16),
        "bfloat16": (base.view(np.uint32) >> 16).astype(np.uint16),
        "int8": np.clip(base * 40, -128, 127).astype(np.int8),
    }
    print(f"| type | matrix MiB | FLAT L2 nq={args.nq} top10 ms |")
    print("|---|---|---|")
    for name, matrix in matrices.items():
        index = build_index(IndexSpec(index_type="FLAT", metric="L2"), matrix)
        index.search(queries, 10)
        start = time.perf_counter()
        for _ in range(args.repeat):
            index.search(queries, 10)
        took = (time.perf_counter() - start) / args.repeat * 1000
        print(f"| {name} | {matrix.nbytes / 2**20:.1f} | {took:.1f} |")


if __name__ == "__main__":
    main()
