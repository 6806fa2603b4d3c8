"""GrowingStore.query / count / table."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from segcore.segments import GrowingStore


def test_query_returns_visible_rows_in_key_order(any_schema, make_batch, keys) -> None:
    store = GrowingStore(any_schema)
    store.apply_insert(make_batch(any_schema, [5, 3, 9], 1))
    store.apply_insert(make_batch(any_schema, [1, 7], 2))
    store.apply_delete(keys(any_schema, [9]), 3)
    result = store.query(read_ts=3, output_fields=["label"])
    expected = sorted(keys(any_schema, [1, 3, 5, 7]).to_pylist())
    assert result.column_names == ["pk", "label"]
    assert result["pk"].to_pylist() == expected
    assert result["label"].to_pylist() == [f"l{k}" for k in expected]
    assert store.count(read_ts=3) == 4
    assert store.count(read_ts=2) == 5


def test_varchar_keys_sort_as_strings(str_schema, make_batch) -> None:
    store = GrowingStore(str_schema)
    store.apply_insert(make_batch(str_schema, ["b", "a10", "a9", "", "é"], 1))
    assert store.query(read_ts=1)["pk"].to_pylist() == ["", "a10", "a9", "b", "é"]
    assert store.query(read_ts=1, limit=2)["pk"].to_pylist() == ["", "a10"]


@pytest.mark.parametrize("limit", [0, 1, 3, 10, 1000])
def test_limit_keeps_the_smallest_keys(int_schema, make_batch, limit) -> None:
    store = GrowingStore(int_schema)
    pks = list(np.random.default_rng(3).permutation(50))
    for i in range(0, 50, 10):
        store.apply_insert(make_batch(int_schema, pks[i : i + 10], 1 + i))
    result = store.query(read_ts=100, limit=limit, output_fields=["label", "vec"])
    assert result["pk"].to_pylist() == list(range(min(limit, 50)))
    assert result["label"].to_pylist() == [f"l{k}" for k in range(min(limit, 50))]
    assert result.schema.field("vec").type == int_schema.field("vec").arrow_type()


def test_query_and_count_honour_the_mask(int_schema, make_batch, keys) -> None:
    store = GrowingStore(int_schema)
    store.apply_insert(make_batch(int_schema, [0, 1, 2, 3], 1))
    store.apply_delete(keys(int_schema, [1]), 2)
    mask = np.array([True, True, False, True])
    assert store.query(read_ts=2, mask=mask)["pk"].to_pylist() == [0, 3]
    assert store.count(read_ts=2, mask=mask) == 2
    assert store.count(read_ts=1, mask=mask) == 3


def test_mask_from_a_filter_over_the_table(int_schema, make_batch) -> None:
    import pyarrow.compute as pc

    store = GrowingStore(int_schema)
    store.apply_insert(make_batch(int_schema, [1, 2, 3], 1, seq=[10, 20, 30]))
    store.apply_insert(make_batch(int_schema, [4], 2, seq=[40]))
    mask = pc.greater(store.table()["seq"], 15).to_numpy()
    assert store.query(read_ts=2, mask=mask, output_fields=["seq"]).to_pydict() == {
        "pk": [2, 3, 4],
        "seq": [20, 30, 40],
    }


def test_empty_store(any_schema) -> None:
    store = GrowingStore(any_schema)
    assert store.num_rows == 0
    assert store.count(read_ts=5) == 0
    result = store.query(read_ts=5, output_fields=["vec", "label"], limit=3)
    assert result.num_rows == 0
    assert result.column_names == ["pk", "vec", "label"]
    assert store.table().schema == any_schema.arrow_schema()
    assert store.table().num_rows == 0


def test_table_is_cached_between_inserts(int_schema, make_batch, keys) -> None:
    store = GrowingStore(int_schema)
    store.apply_insert(make_batch(int_schema, [1, 2], 1))
    first = store.table()
    assert store.table() is first
    store.apply_delete(keys(int_schema, [1]), 2)
    assert store.table() is first  # deletes do not change stored rows
    store.apply_insert(make_batch(int_schema, [3], 3))
    second = store.table()
    assert second is not first
    assert second["pk"].to_pylist() == [1, 2, 3]
    assert first.num_rows == 2  # an old view stays valid


def test_table_holds_every_stored_row_including_deleted(int_schema, make_batch, keys) -> None:
    store = GrowingStore(int_schema)
    vectors = np.arange(3 * 8, dtype=np.float32).reshape(3, 8)
    store.apply_insert(make_batch(int_schema, [1, 1, 2], 7, vectors))
    store.apply_delete(keys(int_schema, [2]), 8)
    table = store.table()
    assert table["pk"].to_pylist() == [1, 1, 2]
    assert table["_ts"].to_pylist() == [7, 7, 7]
    assert table["vec"].to_pylist() == vectors.tolist()


def test_invalid_query_arguments(int_schema, make_batch) -> None:
    store = GrowingStore(int_schema)
    store.apply_insert(make_batch(int_schema, [1], 1))
    with pytest.raises(ValueError, match="limit"):
        store.query(read_ts=1, limit=-1)
    with pytest.raises(ValueError, match="unknown output field"):
        store.query(read_ts=1, output_fields=["missing"])
    with pytest.raises(ValueError, match="mask"):
        store.count(read_ts=1, mask=pa.array([True]))  # type: ignore[arg-type]


def test_sliced_batches_keep_their_vectors(int_schema, make_batch) -> None:
    vectors = np.arange(4 * 8, dtype=np.float32).reshape(4, 8)
    store = GrowingStore(int_schema)
    store.apply_insert(make_batch(int_schema, [1, 2, 3, 4], 1, vectors).slice(1, 2))
    result = store.query(read_ts=1, output_fields=["vec", "label"])
    assert result.to_pydict() == {
        "pk": [2, 3],
        "vec": vectors[1:3].tolist(),
        "label": ["l2", "l3"],
    }
