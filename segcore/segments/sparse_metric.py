"""Inner products of sparse rows (``IP``, the metric of ``SPARSE_FLOAT_VECTOR``), computed exactly.

Scores are accumulated in float64 in ascending index order per row and
rounded to float32 at the end; the inverted index (``segcore/index/
sparse_inverted.py``) sums in the same order, so both give bit-identical
distances. A row that shares no positive pair with the query scores 0 and is
never a hit (Milvus returns only rows that match the query; an empty row
never matches).
"""

from __future__ import annotations

import numpy as np

from segcore.segments.sparse_rows import SparseRows

#: Largest score block (queries x rows) computed at once: 32 MiB of float64.
BLOCK_CELLS = 4 * 1024 * 1024


def sparse_ip(queries: SparseRows, base: SparseRows, row_of: np.ndarray | None = None) -> np.ndarray:
    """``(nq, rows)`` float64 inner products of ``queries`` with every row of ``base``.

    ``row_of`` is each pair of ``base``'s row (``base.row_ids()``, computed when None).
    Work: one pass over ``base``'s pairs per block of queries, plus the pairs that match.
    """
    nq, n = len(queries), len(base)
    out = np.zeros((nq, n), dtype=np.float64)
    if nq == 0 or n == 0 or queries.nnz == 0 or base.nnz == 0:
        return out
    rows = base.row_ids() if row_of is None else row_of
    terms, inverse = np.unique(queries.indices, return_inverse=True)
    # Weight of each distinct query term per query: (nq, terms).
    weights = np.zeros((nq, len(terms)), dtype=np.float64)
    weights[queries.row_ids(), inverse] = queries.values
    pos = np.searchsorted(terms, base.indices)
    pos_clipped = np.minimum(pos, len(terms) - 1)
    matched = np.flatnonzero(terms[pos_clipped] == base.indices)
    if len(matched) == 0:
        return out
    term_of = pos_clipped[matched]
    matched_rows = rows[matched]
    matched_values = base.values[matched].astype(np.float64)
    for q in range(nq):
        contrib = weights[q, term_of] * matched_values
        out[q] = np.bincount(matched_rows, weights=contrib, minlength=n)
    return out
