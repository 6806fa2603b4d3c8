"""The rows a query returns, chosen over the int64 key array (``keyorder.py``), are those of a plain
sort of the visible candidates by key: for keys that ascend with the row (the scan from the segment's
start) and for keys in any order, every limit, every density of candidates and of visible rows."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from common.schema import TIMESTAMP_COLUMN, CollectionSchema, DataType, FieldSchema
from segcore.segments.growing import GrowingStore
from segcore.segments.keyorder import keys_ascend, ordered_mask, ordered_rows

SCHEMA = CollectionSchema(
    name="c",
    fields=(
        FieldSchema(field_id=100, name="id", dtype=DataType.INT64, is_primary=True),
        FieldSchema(field_id=101, name="k", dtype=DataType.INT64),
    ),
)


def _reference(rows: np.ndarray, visible: np.ndarray, keys: np.ndarray, limit: int | None) -> list[int]:
    kept = sorted((int(keys[r]), int(r)) for r in rows if visible[r])
    return [r for _, r in kept][:limit]


@pytest.mark.parametrize("ascending", [True, False])
@pytest.mark.parametrize("size", [1, 50, 20_000])
def test_ordered_rows_are_the_sorted_visible_candidates(ascending: bool, size: int) -> None:
    rng = np.random.default_rng(size)
    keys = np.cumsum(rng.integers(1, 5, size)) if ascending else rng.permutation(size * 3)[:size] - size
    keys = keys.astype(np.int64)
    assert keys_ascend(keys) == (ascending or size == 1)
    for density in (0.001, 0.05, 0.5, 1.0):
        for visible_share in (0.0, 0.3, 1.0):
            visible = rng.random(size) < visible_share
            rows = rng.permutation(np.flatnonzero(rng.random(size) < density))
            for limit in (None, 1, 3, 100, size + 1):
                got = ordered_rows(rows, visible, keys, ascending=keys_ascend(keys), limit=limit)
                assert got.tolist() == _reference(rows, visible, keys, limit)
                mask = np.zeros(size, dtype=bool)
                mask[rows] = True
                got = ordered_mask(mask, visible, keys, ascending=keys_ascend(keys), limit=limit)
                assert got.tolist() == _reference(rows, visible, keys, limit)
                every = ordered_mask(None, visible, keys, ascending=keys_ascend(keys), limit=limit)
                assert every.tolist() == _reference(np.arange(size), visible, keys, limit)


def test_keys_ascend_only_when_strictly_increasing() -> None:
    assert keys_ascend(np.array([], dtype=np.int64))
    assert keys_ascend(np.array([-5, 0, 7], dtype=np.int64))
    assert not keys_ascend(np.array([1, 1, 2], dtype=np.int64))
    assert not keys_ascend(np.array([2, 1], dtype=np.int64))


def _batch(ids: np.ndarray, ts: int) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "k": pa.array(ids % 10, pa.int64()),
                     TIMESTAMP_COLUMN: pa.array(np.full(len(ids), ts), pa.uint64())})


@pytest.mark.parametrize("ordered", [True, False])
def test_store_query_by_rows_keeps_the_smallest_visible_keys(ordered: bool) -> None:
    """A store of 30,000 rows (keys in row order, or shuffled), some deleted: a selective index's rows
    read with a small limit give the smallest visible keys, as the mask does and as a sort does."""
    rng = np.random.default_rng(11)
    ids = np.arange(30_000, dtype=np.int64) * 2
    if not ordered:
        ids = rng.permutation(ids)
    store = GrowingStore(SCHEMA)
    store.apply_insert(_batch(ids[:10_000], 10))
    store.apply_insert(_batch(ids[10_000:], 20))
    deleted = rng.choice(ids, 3_000, replace=False)
    store.cut(pa.array(deleted, pa.int64()), np.full(len(deleted), 30, dtype=np.uint64))
    k = ids % 10
    for read_ts in (15, 25, 35):
        for wanted in (k < 1, k < 5):
            rows = rng.permutation(np.flatnonzero(wanted))
            live = (np.isin(ids, deleted, invert=True) | (read_ts < 30)) & (np.arange(len(ids)) < (
                10_000 if read_ts < 20 else len(ids)))
            expected = np.sort(ids[wanted & live])
            for limit in (1, 7, 100, None):
                by_rows = store.query(read_ts=read_ts, rows=rows, output_fields=["k"], limit=limit)
                by_mask = store.query(read_ts=read_ts, mask=wanted, output_fields=["k"], limit=limit)
                assert by_rows.equals(by_mask)
                assert by_rows["id"].to_pylist() == expected[:limit].tolist()
                assert by_rows["k"].to_pylist() == (expected[:limit] % 10).tolist()
