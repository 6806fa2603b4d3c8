"""MVCC visibility of a GrowingStore: timestamps, deletes, upserts, PK dedupe."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from common.schema import CollectionSchema, DataType, FieldSchema
from segcore.segments import GrowingStore

Keys = Callable[[CollectionSchema, Sequence[Any]], pa.Array]


def visible_pks(store: GrowingStore, read_ts: int) -> list[Any]:
    return store.query(read_ts=read_ts)["pk"].to_pylist()


def visible_seq(store: GrowingStore, read_ts: int) -> dict[Any, int]:
    t = store.query(read_ts=read_ts, output_fields=["seq"])
    return dict(zip(t["pk"].to_pylist(), t["seq"].to_pylist(), strict=True))


def test_rows_are_invisible_before_their_timestamp(any_schema, make_batch, keys) -> None:
    store = GrowingStore(any_schema)
    store.apply_insert(make_batch(any_schema, [1, 2], 10))
    store.apply_insert(make_batch(any_schema, [3], 20))
    assert visible_pks(store, 9) == []
    assert visible_pks(store, 10) == keys(any_schema, [1, 2]).to_pylist()
    assert visible_pks(store, 19) == keys(any_schema, [1, 2]).to_pylist()
    assert visible_pks(store, 20) == keys(any_schema, [1, 2, 3]).to_pylist()
    assert store.num_rows == 3


def test_delete_hides_older_rows_from_its_timestamp_on(any_schema, make_batch, keys) -> None:
    store = GrowingStore(any_schema)
    store.apply_insert(make_batch(any_schema, [1, 2, 3], 10))
    store.apply_delete(keys(any_schema, [2]), 15)
    assert store.count(read_ts=14) == 3
    assert visible_pks(store, 15) == keys(any_schema, [1, 3]).to_pylist()
    assert visible_pks(store, 100) == keys(any_schema, [1, 3]).to_pylist()
    assert store.num_rows == 3  # deleted rows are still stored


@pytest.mark.parametrize("delete_first", [True, False])
def test_delete_at_t_never_hides_row_inserted_at_t(
    any_schema, make_batch, keys, delete_first
) -> None:
    store = GrowingStore(any_schema)
    if delete_first:
        store.apply_delete(keys(any_schema, [1]), 10)
        store.apply_insert(make_batch(any_schema, [1], 10))
    else:
        store.apply_insert(make_batch(any_schema, [1], 10))
        store.apply_delete(keys(any_schema, [1]), 10)
    assert visible_pks(store, 10) == keys(any_schema, [1]).to_pylist()


@pytest.mark.parametrize("delete_first", [True, False])
def test_upsert_replaces_the_row_at_its_timestamp(
    any_schema, make_batch, keys, delete_first
) -> None:
    store = GrowingStore(any_schema)
    store.apply_insert(make_batch(any_schema, [1, 2], 10, seq=[1, 2]))
    upsert = make_batch(any_schema, [1], 20, seq=[3])
    if delete_first:
        store.apply_delete(keys(any_schema, [1]), 20)
        store.apply_insert(upsert)
    else:
        store.apply_insert(upsert)
        store.apply_delete(keys(any_schema, [1]), 20)
    k1, k2 = keys(any_schema, [1, 2]).to_pylist()
    assert visible_seq(store, 19) == {k1: 1, k2: 2}
    assert visible_seq(store, 20) == {k1: 3, k2: 2}
    assert store.count(read_ts=20) == 2


def test_newest_duplicate_wins(any_schema, make_batch, keys) -> None:
    store = GrowingStore(any_schema)
    store.apply_insert(make_batch(any_schema, [1], 10, seq=[1]))
    store.apply_insert(make_batch(any_schema, [1], 20, seq=[2]))
    (k1,) = keys(any_schema, [1]).to_pylist()
    assert visible_seq(store, 15) == {k1: 1}
    assert visible_seq(store, 25) == {k1: 2}


def test_equal_timestamp_duplicates_are_all_counted_and_read_as_the_last_inserted(
    any_schema, make_batch, keys
) -> None:
    # Milvus counts every row of a key inserted twice in one insert; a read of the key sees one.
    store = GrowingStore(any_schema)
    store.apply_insert(make_batch(any_schema, [1, 2, 1], 10, seq=[1, 2, 3]))
    store.apply_insert(make_batch(any_schema, [2], 10, seq=[4]))
    k1, k2 = keys(any_schema, [1, 2]).to_pylist()
    assert visible_seq(store, 10) == {k1: 3, k2: 4}
    assert store.count(read_ts=10) == 4
    assert store.visible_mask(10).tolist() == [False, False, True, True]


def test_equal_timestamp_duplicates_end_together(any_schema, make_batch, keys) -> None:
    store = GrowingStore(any_schema)
    store.apply_insert(make_batch(any_schema, [1, 1, 2], 10, seq=[1, 2, 3]))
    store.apply_delete(keys(any_schema, [1]), 20)
    k1, k2 = keys(any_schema, [1, 2]).to_pylist()
    assert store.count(read_ts=19) == 3
    assert visible_seq(store, 20) == {k2: 3}
    assert store.count(read_ts=20) == 1
    # A newer version supersedes both rows of the older pair.
    store.apply_insert(make_batch(any_schema, [2, 2], 30, seq=[4, 5]))
    store.apply_insert(make_batch(any_schema, [2], 40, seq=[6]))
    assert store.count(read_ts=35) == 2 and visible_seq(store, 35) == {k2: 5}
    assert store.count(read_ts=40) == 1 and visible_seq(store, 40) == {k2: 6}
    # A late delete between them ends the pair at 30..35 only.
    store.apply_delete(keys(any_schema, [2]), 33)
    assert store.count(read_ts=32) == 2 and store.count(read_ts=34) == 0
    assert visible_seq(store, 40) == {k2: 6}


def test_delete_after_reinsert_hides_all_versions(any_schema, make_batch, keys) -> None:
    store = GrowingStore(any_schema)
    store.apply_insert(make_batch(any_schema, [1], 10, seq=[1]))
    store.apply_insert(make_batch(any_schema, [1], 20, seq=[2]))
    store.apply_delete(keys(any_schema, [1]), 30)
    (k1,) = keys(any_schema, [1]).to_pylist()
    assert visible_seq(store, 10) == {k1: 1}
    assert visible_seq(store, 29) == {k1: 2}
    assert visible_seq(store, 30) == {}


def test_reinsert_after_delete_is_visible(any_schema, make_batch, keys) -> None:
    store = GrowingStore(any_schema)
    store.apply_insert(make_batch(any_schema, [1], 10, seq=[1]))
    store.apply_delete(keys(any_schema, [1]), 15)
    store.apply_insert(make_batch(any_schema, [1], 20, seq=[2]))
    (k1,) = keys(any_schema, [1]).to_pylist()
    assert visible_seq(store, 12) == {k1: 1}
    assert visible_seq(store, 17) == {}
    assert visible_seq(store, 20) == {k1: 2}


def test_late_delete_cuts_the_version_live_at_its_timestamp(any_schema, make_batch, keys) -> None:
    store = GrowingStore(any_schema)
    store.apply_insert(make_batch(any_schema, [1], 5, seq=[1]))
    store.apply_insert(make_batch(any_schema, [1], 10, seq=[2]))
    store.apply_delete(keys(any_schema, [1]), 8)  # older than the newest version
    (k1,) = keys(any_schema, [1]).to_pylist()
    assert visible_seq(store, 7) == {k1: 1}
    assert visible_seq(store, 9) == {}
    assert visible_seq(store, 10) == {k1: 2}


def test_delete_of_unknown_key_is_ignored_and_keeps_later_inserts(
    any_schema, make_batch, keys
) -> None:
    store = GrowingStore(any_schema)
    store.apply_delete(keys(any_schema, [7]), 5)
    store.apply_insert(make_batch(any_schema, [7], 5))
    store.apply_delete(keys(any_schema, [8, 9]), 6)
    assert visible_pks(store, 6) == keys(any_schema, [7]).to_pylist()


def test_repeated_keys_in_one_delete(any_schema, make_batch, keys) -> None:
    store = GrowingStore(any_schema)
    store.apply_insert(make_batch(any_schema, [1, 2], 5))
    store.apply_delete(keys(any_schema, [1, 1, 1]), 6)
    assert visible_pks(store, 6) == keys(any_schema, [2]).to_pylist()


def test_out_of_order_insert_is_refused_and_changes_nothing(any_schema, make_batch, keys) -> None:
    store = GrowingStore(any_schema)
    store.apply_insert(make_batch(any_schema, [1], 10))
    store.apply_delete(keys(any_schema, [2]), 12)
    with pytest.raises(ValueError, match="after ts 12"):
        store.apply_insert(make_batch(any_schema, [2], 11))
    assert store.num_rows == 1
    assert store.table().num_rows == 1
    assert store.high_water_ts == 12


def test_decreasing_timestamps_inside_a_batch_are_refused(int_schema, make_batch) -> None:
    batch = pa.concat_tables([make_batch(int_schema, [1], 10), make_batch(int_schema, [2], 9)])
    store = GrowingStore(int_schema)
    with pytest.raises(ValueError, match="non-decreasing"):
        store.apply_insert(batch)
    assert store.num_rows == 0


def test_rows_of_a_batch_may_carry_increasing_timestamps(int_schema, make_batch) -> None:
    batch = pa.concat_tables(
        [make_batch(int_schema, [1], 10, seq=[1]), make_batch(int_schema, [1, 2], 12, seq=[2, 3])]
    )
    store = GrowingStore(int_schema)
    store.apply_insert(batch)
    assert visible_seq(store, 11) == {1: 1}
    assert visible_seq(store, 12) == {1: 2, 2: 3}


def test_visible_mask_is_cached_until_a_write(int_schema, make_batch, keys) -> None:
    store = GrowingStore(int_schema)
    store.apply_insert(make_batch(int_schema, [1, 2], 10))
    first = store.visible_mask(10)
    assert store.visible_mask(10) is first
    assert not first.flags.writeable
    store.apply_delete(keys(int_schema, [1]), 11)
    assert store.visible_mask(11).tolist() == [False, True]
    store.apply_insert(make_batch(int_schema, [3], 12))
    assert store.visible_mask(12).tolist() == [False, True, True]
    assert first.tolist() == [True, True]  # a reader's old mask is not mutated


def test_invalid_timestamps_and_keys(int_schema, make_batch) -> None:
    store = GrowingStore(int_schema)
    with pytest.raises(ValueError):
        store.visible_mask(-1)
    with pytest.raises(ValueError):
        store.apply_delete(pa.array([1]), 2**64)
    with pytest.raises(ValueError):
        store.apply_delete(pa.array([1, None], pa.int64()), 3)
    bad = make_batch(int_schema, [1], 3).set_column(0, "pk", pa.array([None], pa.int64()))
    with pytest.raises(ValueError, match="null"):
        store.apply_insert(bad)
    with pytest.raises(ValueError, match="lacks column"):
        store.apply_insert(make_batch(int_schema, [1], 3).drop_columns(["label"]))


def test_insert_accepts_castable_and_chunked_columns(int_schema, make_batch) -> None:
    batch = make_batch(int_schema, [1, 2], 3)
    chunked = pa.concat_tables([batch.slice(0, 1), batch.slice(1, 1)])
    chunked = chunked.set_column(0, "pk", chunked["pk"].cast(pa.int32()))
    store = GrowingStore(int_schema)
    store.apply_insert(chunked)
    assert store.query(read_ts=3)["pk"].to_pylist() == [1, 2]
    assert store.table().schema == int_schema.arrow_schema()


def test_many_batches_keep_versions_straight(int_schema, make_batch) -> None:
    store = GrowingStore(int_schema)
    expected: dict[int, int] = {}
    for ts in range(1, 60):
        pks = [(ts * 7 + i) % 23 for i in range(5)]
        seqs = [ts * 10 + i for i in range(5)]
        store.apply_insert(make_batch(int_schema, pks, ts, seq=seqs))
        expected.update(zip(pks, seqs, strict=True))
    assert visible_seq(store, 59) == dict(sorted(expected.items()))


def test_unsupported_primary_key_type_is_refused() -> None:
    float_pk = CollectionSchema(
        name="c",
        fields=(FieldSchema(field_id=1, name="pk", dtype=DataType.FLOAT, is_primary=True),),
    )
    with pytest.raises(ValueError, match="FLOAT"):
        GrowingStore(float_pk)


def test_store_without_vector_fields() -> None:
    schema = CollectionSchema(
        name="c",
        fields=(FieldSchema(field_id=1, name="pk", dtype=DataType.INT64, is_primary=True),),
    )
    store = GrowingStore(schema)
    assert store.visible_mask(0).dtype == np.bool_
    store.apply_insert(pa.table({"pk": [3, 1], "_ts": pa.array([4, 4], pa.uint64())}))
    assert store.query(read_ts=4)["pk"].to_pylist() == [1, 3]
