"""The rows a read may return from a segment besides MVCC visibility: in its filter and not expired."""

from __future__ import annotations

import numpy as np

from common.expr import Expr, evaluate
from segcore.segments.growing import GrowingStore


def read_mask(store: GrowingStore, *, expr: Expr | None, expire_before: int) -> np.ndarray | None:
    """Bool per stored row: matches ``expr`` (the read's filter, parsed once per read; None: no
    filter) and was written at or after ``expire_before`` (the collection's TTL; 0: nothing
    expires). None: every row may be returned."""
    mask = evaluate(expr, store.table()) if expr is not None else None
    kept = store.unexpired(expire_before)
    if kept is None:
        return mask
    return kept if mask is None else mask & kept
