"""``merge_rows``: query answers merged at any level, sorted by key, the newest row per key, paged."""

from __future__ import annotations

import pyarrow as pa
import pytest

from common.schema import TIMESTAMP_COLUMN
from segcore.segments.reduce import merge_counts, merge_rows


def _rows(keys: list[object], ts: list[int], tags: list[str]) -> pa.Table:
    schema = pa.schema([("pk", pa.int64() if not keys or isinstance(keys[0], int) else pa.string()),
                        (TIMESTAMP_COLUMN, pa.uint64()), ("tag", pa.string())])
    return pa.table({"pk": keys, TIMESTAMP_COLUMN: pa.array(ts, pa.uint64()), "tag": tags}, schema=schema)


def test_a_key_in_two_answers_keeps_its_newest_row_and_the_rows_come_sorted() -> None:
    parts = [_rows([1, 2, 3], [10, 10, 10], ["a1", "a2", "a3"]), _rows([1, 2, 4], [5, 20, 5], ["b1", "b2", "b4"])]
    got = merge_rows(parts, pk_field="pk")
    assert got.column("pk").to_pylist() == [1, 2, 3, 4]
    assert got.column("tag").to_pylist() == ["a1", "b2", "a3", "b4"]
    assert merge_rows(parts, pk_field="pk", limit=2).column("tag").to_pylist() == ["a1", "b2"]
    assert merge_rows(parts, pk_field="pk", offset=1, limit=2).column("tag").to_pylist() == ["b2", "a3"]


def test_string_keys_equal_timestamps_and_empty_answers() -> None:
    parts = [_rows(["a", "b"], [7, 7], ["y", "x"]), _rows(["b"], [7], ["z"])]
    assert merge_rows(parts, pk_field="pk").column("tag").to_pylist() == ["y", "x"]  # a tie keeps the first
    assert merge_rows([_rows([], [], []), _rows([], [], [])], pk_field="pk").num_rows == 0


def test_distinct_keys_are_sorted_not_deduped_and_ts_can_be_dropped() -> None:
    parts = [_rows([1, 3], [1, 1], ["a", "c"]), _rows([2], [9], ["b"])]
    got = merge_rows(parts, pk_field="pk", distinct_keys=True, keep_ts=False)
    assert got.column_names == ["pk", "tag"]
    assert got.column("tag").to_pylist() == ["a", "b", "c"]


def test_one_input_is_only_paged() -> None:
    one = _rows([1, 2, 3], [1, 1, 1], ["a", "b", "c"])
    assert merge_rows([one], pk_field="pk") is one
    assert merge_rows([one], pk_field="pk", offset=2).column("tag").to_pylist() == ["c"]


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="no query results"):
        merge_rows([], pk_field="pk")
    with pytest.raises(ValueError, match="must not be negative"):
        merge_rows([_rows([1], [1], ["a"])], pk_field="pk", offset=-1)
    with pytest.raises(ValueError, match="different columns"):
        merge_rows([_rows([1], [1], ["a"]), pa.table({"pk": [2]})], pk_field="pk")
    assert merge_counts([3, 0, 4]) == 7
