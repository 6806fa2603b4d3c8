"""Sparse inner products and top-k the slow way (dicts), as the reference of the sparse tests."""

from __future__ import annotations

import numpy as np

from segcore.segments.sparse_rows import SparseRows, canonical_row, rows_from_pairs


def random_rows(rng: np.random.Generator, n: int, *, vocab: int = 300, max_nnz: int = 16) -> SparseRows:
    rows = []
    for _ in range(n):
        k = int(rng.integers(0, max_nnz + 1))
        idx = rng.choice(vocab, k, replace=False)
        rows.append(canonical_row(idx, rng.random(k).astype(np.float32)))
    return rows_from_pairs(rows)


def as_dicts(rows: SparseRows) -> list[dict[int, float]]:
    return [dict(zip(*(a.tolist() for a in rows.row(i)), strict=True)) for i in range(len(rows))]


def reference_topk(base: SparseRows, query: dict[int, float], topk: int, allowed=None) -> list[tuple[int, float]]:
    """(row, float32 score) best first, ties by row; rows scoring 0 are no hits."""
    scored = []
    for r, row in enumerate(as_dicts(base)):
        if allowed is not None and not allowed[r]:
            continue
        s = 0.0
        for i in sorted(row):
            if i in query:
                s += float(np.float64(np.float32(query[i])) * np.float64(np.float32(row[i])))
        s32 = float(np.float32(s))
        if s32 > 0:
            scored.append((r, s32))
    scored.sort(key=lambda x: (-x[1], x[0]))
    return scored[:topk]
