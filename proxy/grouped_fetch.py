"""How many hits per shard a grouping search fetches, and when to fetch more.

A search with ``group_by_field`` asks each shard for its best hits and groups
them at the proxy (``segcore/segments/reduce.py``). Milvus's segment search
walks its index until it has ``topk`` groups (each up to ``group_size``); here
each shard returns a fixed number of hits, so a group whose rows all rank
below that many hits of other groups would be missing, not just short. The
proxy therefore starts at ``GROUP_OVERFETCH`` x (topk + offset) x group_size
hits and, while some query has fewer groups than it asked for and some shard
returned all it was asked for that query (so more rows exist), asks again for
``GROUP_OVERFETCH`` times as many, up to ``GROUP_FETCH_LIMIT``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from segcore.segments.growing import QUERY_COLUMN

#: First fetch: this many times (topk + offset) x group_size hits per shard; each retry multiplies by it.
GROUP_OVERFETCH = 4
#: Most hits per shard and query a grouping search fetches.
GROUP_FETCH_LIMIT = 16_384


def first_fetch(topk_with_offset: int, group_size: int) -> int:
    """Hits per shard and query of a grouping search's first fetch."""
    return min(topk_with_offset * group_size * GROUP_OVERFETCH, GROUP_FETCH_LIMIT)


def next_fetch(parts: Sequence[pa.Table], *, nq: int, groups_wanted: int, group_by: str, fetched: int) -> int | None:
    """The larger per-shard fetch to ask for, or None when the hits in ``parts`` are enough.

    More is needed when a query found fewer than ``groups_wanted`` distinct values of ``group_by``
    while some shard returned all ``fetched`` hits it was asked for that query.
    """
    if fetched >= GROUP_FETCH_LIMIT or nq == 0:
        return None
    full = np.zeros(nq, dtype=bool)
    pairs: list[pa.Table] = []
    for part in parts:
        if part.num_rows == 0:
            continue
        queries = part.column(QUERY_COLUMN).to_numpy()
        full |= np.bincount(queries, minlength=nq)[:nq] >= fetched
        pairs.append(pa.table({"q": part.column(QUERY_COLUMN), "g": part.column(group_by)}))
    if not full.any():
        return None
    found = np.zeros(nq, dtype=np.int64)
    if pairs:
        distinct = pa.concat_tables(pairs).group_by(["q", "g"]).aggregate([])
        found = np.bincount(distinct.column("q").to_numpy(), minlength=nq)[:nq]
    if not (full & (found < groups_wanted)).any():
        return None
    return min(fetched * GROUP_OVERFETCH, GROUP_FETCH_LIMIT)
