"""``newest_per_key``: query answers of segments in two partitions merged, one row per key (the newest)."""

from __future__ import annotations

import pyarrow as pa

from common.schema import TIMESTAMP_COLUMN
from segcore.segments.dedupe import newest_per_key


def _rows(keys: list[object], ts: list[int], tags: list[str]) -> pa.Table:
    return pa.table({"pk": keys, TIMESTAMP_COLUMN: pa.array(ts, pa.uint64()), "tag": tags})


def test_a_key_in_two_answers_keeps_its_newest_row_and_the_rows_come_sorted() -> None:
    merged = pa.concat_tables([_rows([3, 1, 2], [10, 10, 10], ["a3", "a1", "a2"]),
                               _rows([2, 4, 1], [20, 5, 5], ["b2", "b4", "b1"])])
    got = newest_per_key(merged, "pk")
    assert got.column("pk").to_pylist() == [1, 2, 3, 4]
    assert got.column("tag").to_pylist() == ["a1", "b2", "a3", "b4"]
    assert newest_per_key(merged, "pk", limit=2).column("tag").to_pylist() == ["a1", "b2"]


def test_string_keys_equal_timestamps_and_empty_answers() -> None:
    merged = pa.concat_tables([_rows(["b", "a"], [7, 7], ["x", "y"]), _rows(["b"], [7], ["z"])])
    assert newest_per_key(merged, "pk").column("tag").to_pylist() == ["y", "x"]  # a tie keeps the first
    empty = _rows([], [], []).cast(pa.schema([("pk", pa.int64()), (TIMESTAMP_COLUMN, pa.uint64()), ("tag", pa.string())]))
    assert newest_per_key(empty, "pk").num_rows == 0
