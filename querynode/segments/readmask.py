"""The rows a read may return from a segment besides MVCC visibility: in its filter and not expired."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from querynode.segments.growing import GrowingStore
from services.expr import evaluate, parse_filter
from services.schema import CollectionSchema


def read_mask(
    store: GrowingStore,
    schema: CollectionSchema,
    *,
    filter: str,
    filter_params: Mapping[str, Any],
    expire_before: int,
) -> np.ndarray | None:
    """Bool per stored row: matches ``filter`` and was written at or after ``expire_before``
    (the collection's TTL; 0: nothing expires). None: every row may be returned."""
    mask = evaluate(parse_filter(filter, schema, filter_params or None), store.table()) if filter.strip() else None
    kept = store.unexpired(expire_before)
    if kept is None:
        return mask
    return kept if mask is None else mask & kept
