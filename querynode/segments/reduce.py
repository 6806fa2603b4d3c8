"""The final top-k reduce: merge per-shard / per-segment search results.

Inputs are tables shaped like :meth:`GrowingStore.search` output (``query``,
the primary key, ``distance``, then output fields). Pure and vectorised: the
proxy (or delegator) calls it on what its sub-requests returned.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from querynode.segments.growing import DISTANCE_COLUMN, QUERY_COLUMN
from querynode.segments.metric import larger_is_better

__all__ = ["larger_is_better", "merge_topk"]

_SEQ = "__seq"


def merge_topk(
    results: Sequence[pa.Table],
    *,
    topk: int,
    metric: str,
    pk_field: str,
    offset: int = 0,
) -> pa.Table:
    """Per query: dedupe by primary key, rank best first, skip ``offset``, keep ``topk``.

    A key found more than once for a query keeps its best distance. Equal
    distances rank in input order (earlier table, then earlier row). The
    output has the inputs' columns, sorted by query then rank.

    Raises:
        ValueError: no inputs, mismatched columns, ``topk < 1``,
            ``offset < 0`` or an unknown metric.
    """
    descending = larger_is_better(metric)
    if topk < 1:
        raise ValueError(f"topk must be at least 1, got {topk}")
    if offset < 0:
        raise ValueError(f"offset must not be negative, got {offset}")
    if not results:
        raise ValueError("no search results to merge")
    try:
        merged = pa.concat_tables(results)
    except pa.ArrowInvalid as err:
        raise ValueError("search results to merge have different columns") from err
    n = merged.num_rows
    if n == 0:
        return merged.combine_chunks()

    direction = "descending" if descending else "ascending"
    keyed = pa.table(
        {
            QUERY_COLUMN: merged.column(QUERY_COLUMN),
            pk_field: merged.column(pk_field),
            DISTANCE_COLUMN: merged.column(DISTANCE_COLUMN),
            _SEQ: pa.array(np.arange(n, dtype=np.int64)),
        }
    )

    # 1. Best hit of each (query, key): first of its group when sorted by distance.
    by_key = pc.sort_indices(
        keyed,
        sort_keys=[
            (QUERY_COLUMN, "ascending"),
            (pk_field, "ascending"),
            (DISTANCE_COLUMN, direction),
            (_SEQ, "ascending"),
        ],
    ).to_numpy()
    grouped = keyed.take(by_key)
    queries = grouped.column(QUERY_COLUMN).to_numpy()
    keys = grouped.column(pk_field)
    first = np.ones(n, dtype=bool)
    first[1:] = (queries[1:] != queries[:-1]) | pc.not_equal(
        keys.slice(1), keys.slice(0, n - 1)
    ).to_numpy()
    best = by_key[first]

    # 2. Rank the survivors within each query and cut the page.
    survivors = keyed.take(best)
    by_rank = pc.sort_indices(
        survivors,
        sort_keys=[(QUERY_COLUMN, "ascending"), (DISTANCE_COLUMN, direction), (_SEQ, "ascending")],
    ).to_numpy()
    ranked = best[by_rank]
    ranked_queries = merged.column(QUERY_COLUMN).take(ranked).to_numpy()
    group_start = np.ones(len(ranked), dtype=bool)
    group_start[1:] = ranked_queries[1:] != ranked_queries[:-1]
    starts = np.flatnonzero(group_start)
    rank = np.arange(len(ranked)) - np.repeat(starts, np.diff(np.append(starts, len(ranked))))
    keep = (rank >= offset) & (rank < offset + topk)
    return merged.take(ranked[keep]).combine_chunks()
