"""The rows a read may return from a segment besides MVCC visibility: in its filter and not expired."""

from __future__ import annotations

import numpy as np

from common.expr import Expr, evaluate
from common.expr.ast import And, Or
from segcore.index.scalar.chunked import ChunkedFilter
from segcore.index.scalar.planner import IndexedFilter
from segcore.segments.growing import GrowingStore


def read_mask(
    store: GrowingStore,
    *,
    expr: Expr | None,
    expire_before: int,
    indexes: IndexedFilter | ChunkedFilter | None = None,
) -> np.ndarray | None:
    """Bool per stored row: matches ``expr`` (the read's filter, parsed once per read; None: no
    filter) and was written at or after ``expire_before`` (the collection's TTL; 0: nothing
    expires). None: every row may be returned.

    ``indexes``: the segment's scalar indexes (a sealed segment's, or a growing store's per-chunk
    ones: ``segcore/segments/growing_indexes.py``); a filter they cover entirely is
    answered from them alone, else each covered predicate is and the rest is scanned.
    """
    mask = None
    if expr is not None:
        if indexes:
            mask = indexes.mask(expr)
        if mask is None:
            mask = evaluate(expr, store.table(), indexes=indexes or None)
    kept = store.unexpired(expire_before)
    if kept is None:
        return mask
    return kept if mask is None else mask & kept


#: A filter's rows are taken from its indexes as a list when at most this share of the segment matches;
#: above it a mask is cheaper (a long list of positions costs a sort where a mask needs one pass).
ROWS_SHARE = 1 / 32


def indexed_rows(
    indexes: IndexedFilter | None, expr: Expr | None, num_rows: int, *, any_size_leaf: bool = False
) -> np.ndarray | None:
    """The positions matching ``expr``, from the segment's scalar indexes alone, when the filter is made
    of indexed ``==``, ranges and ``in`` (``IndexedFilter.rows``) and few rows match; ``None``: use
    ``read_mask``. ``any_size_leaf``: a filter of one such predicate is listed however many rows match
    (its rows are a slice of the index or a concatenation of them, never sorted or merged: for a
    limited query over keys in row order, which reads only the first of them)."""
    if expr is None or not indexes:
        return None
    if any_size_leaf and not isinstance(expr, And | Or):
        return indexes.rows(expr)
    return indexes.rows(expr, limit=int(num_rows * ROWS_SHARE))
