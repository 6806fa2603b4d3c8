"""The reduce of every read at every level (worker, delegator, proxy): a search's
hits (``merge_topk``) and a query's rows (``merge_rows``, ``merge_counts``).

**Search.** Inputs are tables shaped like :meth:`GrowingStore.search` output (``query``,
the primary key, ``distance``, then output fields; optionally ``_ts``, the
row's write timestamp). Pure and vectorised: the proxy (or delegator) calls
it on what its sub-requests returned.

Per query the steps run in this order:

1. dedupe by primary key (the newest version when ``_ts`` is present, else
   the best distance): the surviving row *is* the entity, so
2. the range (``radius`` / ``range_filter``) applies to that row only (an
   older version inside the range never stands in for a newer one outside);
3. rank best first, then page: ``offset``/``topk`` count hits, or whole
   groups under ``group_by``.

Levels (worker, delegator, proxy) each call it; inner calls pass ``offset=0``
and ``topk=topk + offset`` (the same count of groups when grouping) and keep
the ``_ts`` and group-by columns. Without grouping, that equals one call over
everything as long as a key's copies agree (replicas of one row). It is not
exact otherwise, as in Milvus:

* a newer version that an inner call dropped (below its page, or outside
  the range) lets an older copy elsewhere win; MVCC deletes, not this
  reduce, are what hide overwritten rows;
* with ``group_by``, an inner call drops a group's hits where that group
  ranks below its page, though the group may rank high overall.

**Query.** Inputs are tables of rows sorted by primary key, one row per key
each (a segment's visible rows, or a lower level's answer), with the same
columns, ``_ts`` among them where a key may have rows in two inputs (a key
inserted into two partitions: each row is live, as in Milvus, ``count(*)``
counts each, and a query keeps the newest, Milvus's
``MergeSegcoreRetrieveResults``). The answer is sorted by key, one row per
key, then paged: workers and delegators pass ``limit`` (offset plus limit of
the request), the proxy ``offset`` and ``limit``. Vchannels partition the keys,
so the proxy passes ``distinct_keys`` and no ``_ts`` reaches it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from common.schema import TIMESTAMP_COLUMN
from segcore.segments.growing import DISTANCE_COLUMN, QUERY_COLUMN
from segcore.segments.metric import larger_is_better

__all__ = ["TIMESTAMP_COLUMN", "in_range", "larger_is_better", "merge_counts", "merge_rows", "merge_topk"]

_SEQ = "__seq"


def merge_topk(
    results: Sequence[pa.Table],
    *,
    topk: int,
    metric: str,
    pk_field: str,
    offset: int = 0,
    radius: float | None = None,
    range_filter: float | None = None,
    group_by: str | None = None,
    group_size: int = 1,
    distinct_keys: bool = False,
) -> pa.Table:
    """Per query: dedupe by primary key, filter by range, rank, skip ``offset``, keep ``topk``.

    ``distinct_keys``: the caller knows no key occurs twice for a query (each
    input holds other keys: the proxy merging vchannels, which partition the
    keys, each already deduped by its delegator), so the dedupe is skipped.

    Dedupe: a key found more than once for a query keeps one row. When the
    inputs carry a ``_ts`` column (uint64 write timestamp) that is the row
    with the largest ``_ts`` (the newest version), ties broken by distance;
    without it, the row with the best distance.

    Range: see :func:`in_range`. Applied after dedupe, before paging.

    Ranking: best distance first; equal distances rank in input order
    (earlier table, then earlier row).

    Paging without ``group_by``: skip ``offset`` hits, keep ``topk``. The
    output is sorted by query then rank.

    Paging with ``group_by`` (the name of a scalar column present in every
    input): hits are grouped per query by that column's value (null is a
    group of its own); a group ranks by its best hit and keeps its best
    ``group_size`` hits; ``offset`` skips whole groups and ``topk`` counts
    groups, so a query returns up to ``topk * group_size`` hits. The output
    is sorted by query, then group rank, then rank within the group (groups
    stay contiguous, as Milvus returns them). A group shorter than
    ``group_size`` is returned as it is: Milvus' ``strict_group_size`` asks
    the segment search to try harder to fill groups, it never drops one,
    and nothing here can tell "not found" from "does not exist".

    Returns:
        The inputs' columns (``_ts`` and the group-by column included: the
        latter is each hit's group value) for the kept rows.

    Raises:
        ValueError: no inputs, mismatched columns, ``topk < 1``,
            ``offset < 0``, ``group_size < 1``, an unknown metric, or a
            ``group_by`` column the inputs lack.
    """
    descending = larger_is_better(metric)
    if topk < 1:
        raise ValueError(f"topk must be at least 1, got {topk}")
    if offset < 0:
        raise ValueError(f"offset must not be negative, got {offset}")
    if group_size < 1:
        raise ValueError(f"group_size must be at least 1, got {group_size}")
    if not results:
        raise ValueError("no search results to merge")
    try:
        merged = pa.concat_tables(results)
    except pa.ArrowInvalid as err:
        raise ValueError("search results to merge have different columns") from err
    if group_by is not None and group_by not in merged.column_names:
        raise ValueError(f"search results lack the group by column {group_by!r}")
    if merged.num_rows == 0:
        return merged.combine_chunks()

    all_queries = merged.column(QUERY_COLUMN).to_numpy()
    all_distances = merged.column(DISTANCE_COLUMN).to_numpy()
    plain = distinct_keys and offset == 0 and group_by is None and radius is None and range_filter is None
    if plain and len(results) == 1 and _is_page(all_queries, all_distances, topk, descending):
        return merged.combine_chunks()  # one input that is already the answer (one vchannel's hits)
    if distinct_keys:
        kept = np.arange(merged.num_rows)
    else:
        kept = _one_row_per_key(merged, all_queries, pk_field, descending)
    kept = kept[in_range(all_distances[kept], metric, radius=radius, range_filter=range_filter)]
    # Ranked: by query, then best distance, then input order (lexsort's last key leads).
    scores = -all_distances[kept] if descending else all_distances[kept]
    ranked = kept[np.lexsort((kept, scores, all_queries[kept]))]
    queries = all_queries[ranked]
    if group_by is None:
        rank = _position_in_runs(_run_starts(queries))
        page = ranked[(rank >= offset) & (rank < offset + topk)]
    else:
        groups = _group_codes(merged.column(group_by).take(ranked))
        page = ranked[_page_groups(queries, groups, offset, topk, group_size)]
    return merged.take(page).combine_chunks()


def in_range(
    distances: np.ndarray,
    metric: str,
    *,
    radius: float | None = None,
    range_filter: float | None = None,
) -> np.ndarray:
    """Boolean mask of the ``distances`` inside a Milvus range search's bounds.

    Milvus' semantics, bounds compared in float32 like the distances:

    * ``L2`` (smaller is better): ``range_filter <= d < radius``;
    * ``IP`` / ``COSINE`` (larger is better): ``radius < d <= range_filter``.

    A bound left ``None`` does not filter. Bounds in the wrong order (e.g.
    ``range_filter >= radius`` for L2) keep nothing; the proxy refuses them
    before they get here.
    """
    larger = larger_is_better(metric)
    d = np.asarray(distances, dtype=np.float32)
    mask = np.ones(d.shape, dtype=bool)
    if radius is not None:
        bound = np.float32(radius)
        mask &= (d > bound) if larger else (d < bound)
    if range_filter is not None:
        bound = np.float32(range_filter)
        mask &= (d <= bound) if larger else (d >= bound)
    return mask


def _one_row_per_key(
    merged: pa.Table, all_queries: np.ndarray, pk_field: str, descending: bool
) -> np.ndarray:
    """Row numbers (into ``merged``) of the one row kept per (query, key)."""
    n = merged.num_rows
    pks = merged.column(pk_field)
    if pa.types.is_integer(pks.type) and pks.null_count == 0:
        return _one_row_per_int_key(merged, all_queries, pks.to_numpy(), descending)
    columns = {
        QUERY_COLUMN: merged.column(QUERY_COLUMN),
        pk_field: merged.column(pk_field),
        DISTANCE_COLUMN: merged.column(DISTANCE_COLUMN),
        _SEQ: pa.array(np.arange(n, dtype=np.int64)),
    }
    order = [(QUERY_COLUMN, "ascending"), (pk_field, "ascending")]
    if TIMESTAMP_COLUMN in merged.column_names:
        columns[TIMESTAMP_COLUMN] = merged.column(TIMESTAMP_COLUMN)
        order.append((TIMESTAMP_COLUMN, "descending"))
    order += [
        (DISTANCE_COLUMN, "descending" if descending else "ascending"),
        (_SEQ, "ascending"),
    ]
    by_key = pc.sort_indices(pa.table(columns), sort_keys=order).to_numpy()
    queries = all_queries[by_key]
    keys = merged.column(pk_field).take(by_key)
    first = np.ones(n, dtype=bool)
    first[1:] = (queries[1:] != queries[:-1]) | pc.not_equal(
        keys.slice(1), keys.slice(0, n - 1)
    ).to_numpy()
    return by_key[first]


def _one_row_per_int_key(
    merged: pa.Table, all_queries: np.ndarray, keys: np.ndarray, descending: bool
) -> np.ndarray:
    """``_one_row_per_key`` for integer keys, in numpy: a few microseconds where Arrow's
    multi-column sort costs ~0.1 ms, which a worker pays per search of several segments."""
    distances = merged.column(DISTANCE_COLUMN).to_numpy()
    sort_keys = [-distances if descending else distances]  # lexsort: the last key leads
    if TIMESTAMP_COLUMN in merged.column_names:
        sort_keys.append(~merged.column(TIMESTAMP_COLUMN).to_numpy())  # uint64: newest first
    by_key = np.lexsort((*sort_keys, keys, all_queries))  # stable: ties keep input order
    queries, ordered = all_queries[by_key], keys[by_key]
    first = np.ones(len(by_key), dtype=bool)
    first[1:] = (queries[1:] != queries[:-1]) | (ordered[1:] != ordered[:-1])
    result: np.ndarray = by_key[first]
    return result


def _group_codes(column: pa.ChunkedArray) -> np.ndarray:
    """An integer per value of ``column`` (equal values, equal codes; null its own code)."""
    encoded = pc.dictionary_encode(column.combine_chunks(), null_encoding="encode")
    return np.asarray(encoded.indices.to_numpy(zero_copy_only=False), dtype=np.int64)


def _page_groups(
    queries: np.ndarray, groups: np.ndarray, offset: int, topk: int, group_size: int
) -> np.ndarray:
    """Positions (into the ranked hits) of the grouped page, in output order.

    ``queries`` and ``groups`` describe the hits ranked by query then best
    first.
    """
    m = len(queries)
    position = np.arange(m)
    # Hits of each (query, group) together, still best first inside.
    by_group = np.lexsort((position, groups, queries))
    run_start = _run_starts(queries[by_group], groups[by_group])
    within = _position_in_runs(run_start)
    run_of = np.cumsum(run_start) - 1
    # A group ranks by its best hit, i.e. the position of its run's first row.
    best = position[by_group][run_start]
    groups_in_rank_order = np.argsort(best, kind="stable")
    ordinal = np.empty(len(best), dtype=np.int64)
    ordinal[groups_in_rank_order] = _position_in_runs(
        _run_starts(queries[best[groups_in_rank_order]])
    )
    group_rank = ordinal[run_of]
    keep = np.flatnonzero(
        (within < group_size) & (group_rank >= offset) & (group_rank < offset + topk)
    )
    out = np.lexsort((within[keep], group_rank[keep], queries[by_group][keep]))
    result: np.ndarray = by_group[keep][out]
    return result


def _is_page(queries: np.ndarray, distances: np.ndarray, topk: int, descending: bool) -> bool:
    """Whether rows sorted this way are what the ranking and paging would return unchanged:
    queries ascending, each query's distances best first, at most ``topk`` rows per query."""
    if len(queries) == 0:
        return True
    if len(queries) <= _SMALL_PAGE:
        return _is_small_page(queries.tolist(), distances.tolist(), topk, descending)
    if (np.diff(queries) < 0).any():
        return False
    start = _run_starts(queries)
    same = ~start[1:]
    later, earlier = distances[1:][same], distances[:-1][same]
    if ((later > earlier) if descending else (later < earlier)).any():
        return False
    return bool((_position_in_runs(start) < topk).all())  # the rank the paging keeps below topk


# Up to this many hits (an nq=1 search's) the check runs over Python lists: a dozen numpy calls on
# ten elements cost ~30 us, the loop ~2 us.
_SMALL_PAGE = 64


def _is_small_page(queries: list[int], distances: list[float], topk: int, descending: bool) -> bool:
    """``_is_page`` over lists (same answer: a NaN distance compares false either way)."""
    run = 0
    for i in range(1, len(queries)):
        q, prev = queries[i], queries[i - 1]
        if q < prev:
            return False
        if q != prev:
            run = 0
            continue
        later, earlier = distances[i], distances[i - 1]
        if (later > earlier) if descending else (later < earlier):
            return False
        run += 1
        if run >= topk:
            return False
    return True


def _run_starts(*keys: np.ndarray) -> np.ndarray:
    """Where a run of equal consecutive ``keys`` tuples begins."""
    n = len(keys[0])
    start = np.zeros(n, dtype=bool)
    start[:1] = True
    for key in keys:
        start[1:] |= key[1:] != key[:-1]
    return start


def _position_in_runs(run_start: np.ndarray) -> np.ndarray:
    """Each element's index inside its run (runs begin where ``run_start``)."""
    n = len(run_start)
    starts = np.flatnonzero(run_start)
    lengths = np.diff(np.append(starts, n))
    result: np.ndarray = np.arange(n) - np.repeat(starts, lengths)
    return result


def merge_rows(
    tables: Sequence[pa.Table],
    *,
    pk_field: str,
    limit: int | None = None,
    offset: int = 0,
    distinct_keys: bool = False,
    keep_ts: bool = True,
) -> pa.Table:
    """A query's rows from several inputs: sorted by key, one per key (the newest), paged.

    Each input must hold its rows sorted by ``pk_field``, one row per key. A key in two
    inputs keeps the row with the largest ``_ts`` (equal: the earlier input's); without a
    ``_ts`` column, or with ``distinct_keys`` (no key is in two inputs), nothing is deduped.
    Then ``offset`` rows are skipped and ``limit`` kept (None: all). ``keep_ts=False`` drops
    the ``_ts`` column from the answer.

    Raises:
        ValueError: no inputs, mismatched columns, a negative ``offset`` or ``limit``.
    """
    if not tables:
        raise ValueError("no query results to merge")
    if offset < 0 or (limit is not None and limit < 0):
        raise ValueError(f"offset and limit must not be negative, got {offset} and {limit}")
    if len(tables) == 1:
        table = tables[0]  # sorted by key, one row per key already
    else:
        try:
            table = pa.concat_tables(tables)
        except pa.ArrowInvalid as err:
            raise ValueError("query results to merge have different columns") from err
        if not distinct_keys and TIMESTAMP_COLUMN in table.column_names:
            table = _newest_per_key(table, pk_field)
        elif table.num_rows:
            table = table.take(pc.sort_indices(table, sort_keys=[(pk_field, "ascending")]))
    if offset or (limit is not None and limit < table.num_rows):
        table = table.slice(offset, limit)
    if not keep_ts and TIMESTAMP_COLUMN in table.column_names:
        table = table.drop_columns([TIMESTAMP_COLUMN])
    return table


def merge_counts(counts: Sequence[int]) -> int:
    """A ``count(*)`` from its parts: every live row counts, a key in two partitions twice."""
    return sum(counts)


def _newest_per_key(table: pa.Table, pk: str) -> pa.Table:
    """``table``'s rows sorted by ``pk``, one per key: the largest ``_ts``, a tie the row first
    in ``table`` (the sort is stable)."""
    if table.num_rows == 0:
        return table
    order = pc.sort_indices(table, sort_keys=[(pk, "ascending"), (TIMESTAMP_COLUMN, "descending")])
    ordered = table.take(order)
    keys = ordered.column(pk).combine_chunks()
    first = np.ones(len(keys), dtype=bool)
    if len(keys) > 1:
        first[1:] = pc.not_equal(keys.slice(1), keys.slice(0, len(keys) - 1)).to_numpy(zero_copy_only=False)
    return ordered if first.all() else ordered.filter(pa.array(first))
