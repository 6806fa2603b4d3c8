"""When a grouping search fetches more hits per shard (proxy/grouped_fetch.py)."""

from __future__ import annotations

import pyarrow as pa

from proxy.grouped_fetch import GROUP_FETCH_LIMIT, GROUP_OVERFETCH, first_fetch, next_fetch
from segcore.segments.growing import QUERY_COLUMN


def _part(queries: list[int], groups: list[int]) -> pa.Table:
    return pa.table({QUERY_COLUMN: pa.array(queries, pa.int64()), "tag": pa.array(groups, pa.int64())})


def test_first_fetch_is_overfetched_and_capped() -> None:
    assert first_fetch(3, 2) == 3 * 2 * GROUP_OVERFETCH
    assert first_fetch(10_000, 10) == GROUP_FETCH_LIMIT


def test_a_query_short_of_groups_with_a_full_shard_fetches_more() -> None:
    # Query 0: 4 hits (all asked for) of 2 groups, 3 wanted: more rows may hold the third group.
    parts = [_part([0, 0, 0, 0, 1], [5, 5, 6, 6, 7]), _part([], [])]
    assert next_fetch(parts, nq=2, groups_wanted=3, group_by="tag", fetched=4) == 4 * GROUP_OVERFETCH


def test_enough_groups_or_an_exhausted_shard_fetch_no_more() -> None:
    # Enough groups for every query.
    assert next_fetch([_part([0, 0, 0, 0], [1, 2, 3, 3])], nq=1, groups_wanted=3, group_by="tag", fetched=4) is None
    # Short of groups, but every shard returned fewer hits than asked: nothing more exists.
    parts = [_part([0, 0, 0], [1, 1, 2]), _part([0, 0], [2, 2])]
    assert next_fetch(parts, nq=1, groups_wanted=3, group_by="tag", fetched=4) is None
    # At the limit already.
    full = _part([0] * GROUP_FETCH_LIMIT, [1] * GROUP_FETCH_LIMIT)
    assert next_fetch([full], nq=1, groups_wanted=3, group_by="tag", fetched=GROUP_FETCH_LIMIT) is None


def test_groups_are_counted_across_shards_and_nulls_are_a_group() -> None:
    parts = [_part([0, 0], [1, 1]), pa.table({QUERY_COLUMN: pa.array([0, 0], pa.int64()),
                                              "tag": pa.array([None, 2], pa.int64())})]
    assert next_fetch(parts, nq=1, groups_wanted=3, group_by="tag", fetched=2) is None
    assert next_fetch(parts, nq=1, groups_wanted=4, group_by="tag", fetched=2) == 2 * GROUP_OVERFETCH
