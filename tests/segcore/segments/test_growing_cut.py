"""``GrowingStore.cut``: a delete with a timestamp per key, whatever the order, and ``newest_insert_ts``."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from common.schema import TIMESTAMP_COLUMN, CollectionSchema, DataType, FieldSchema
from segcore.segments.growing import GrowingStore

SCHEMA = CollectionSchema(
    name="c",
    fields=(
        FieldSchema(field_id=100, name="id", dtype=DataType.INT64, is_primary=True),
        FieldSchema(field_id=101, name="v", dtype=DataType.FLOAT_VECTOR, dim=2),
    ),
)


def _store(inserts: list[tuple[int, int]]) -> GrowingStore:
    """Rows ``(key, ts)`` inserted in timestamp order."""
    store = GrowingStore(SCHEMA)
    for key, ts in sorted(inserts, key=lambda r: r[1]):
        store.apply_insert(
            pa.table(
                {
                    "id": pa.array([key], pa.int64()),
                    "v": pa.array([[0.0, 1.0]], pa.list_(pa.float32(), 2)),
                    TIMESTAMP_COLUMN: pa.array([ts], pa.uint64()),
                }
            )
        )
    return store


INSERTS = st.lists(st.tuples(st.integers(0, 5), st.integers(1, 40)), min_size=1, max_size=25)
CUTS = st.lists(st.tuples(st.integers(0, 7), st.integers(1, 45)), max_size=25)


@settings(max_examples=150, deadline=None)
@given(inserts=INSERTS, cuts=CUTS, seed=st.integers(0, 2**32 - 1))
def test_cut_pairs_in_any_order_or_repeated_give_the_same_visibility(
    inserts: list[tuple[int, int]], cuts: list[tuple[int, int]], seed: int
) -> None:
    ordered, shuffled = _store(inserts), _store(inserts)
    for key, ts in sorted(cuts, key=lambda c: c[1]):
        ordered.apply_delete(pa.array([key], pa.int64()), ts)
    rng = np.random.default_rng(seed)
    pairs = cuts + cuts[: len(cuts) // 2]  # some twice
    order = rng.permutation(len(pairs))
    if pairs:
        shuffled.cut(
            pa.array([pairs[i][0] for i in order], pa.int64()),
            np.array([pairs[i][1] for i in order], dtype=np.uint64),
        )
    for read_ts in range(0, 50):
        assert np.array_equal(ordered.visible_mask(read_ts), shuffled.visible_mask(read_ts)), read_ts


def test_newest_insert_ts_and_primary_keys() -> None:
    store = _store([(1, 5), (2, 6), (1, 9)])
    store.apply_delete(pa.array([1], pa.int64()), 10)  # deleted versions still count as inserted
    got = store.newest_insert_ts(pa.array([1, 2, 3], pa.int64()))
    assert got.tolist() == [9, 6, 0]
    assert sorted(store.primary_keys().to_pylist()) == [1, 2]
