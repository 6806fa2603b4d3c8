"""A read given the rows a scalar index found answers as the same read given their mask: visibility
(superseded, deleted, not yet written rows) still applies, and ``count(*)`` counts the same."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from common.schema import TIMESTAMP_COLUMN, CollectionSchema, DataType, FieldSchema
from segcore.segments.growing import GrowingStore

SCHEMA = CollectionSchema(
    name="c",
    fields=(
        FieldSchema(field_id=100, name="id", dtype=DataType.INT64, is_primary=True),
        FieldSchema(field_id=101, name="k", dtype=DataType.INT64),
    ),
)


def _batch(ids: list[int], ks: list[int], ts: int) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "k": pa.array(ks, pa.int64()),
                     TIMESTAMP_COLUMN: pa.array([ts] * len(ids), pa.uint64())})


def test_rows_read_as_their_mask() -> None:
    store = GrowingStore(SCHEMA)
    store.apply_insert(_batch(list(range(20)), [i % 4 for i in range(20)], 10))
    store.apply_insert(_batch([3, 7, 7], [1, 2, 3], 20))  # upserts, and a key written twice at once
    store.cut(pa.array([5, 9], pa.int64()), np.array([30, 30], dtype=np.uint64))
    rng = np.random.default_rng(3)
    for read_ts in (15, 25, 35):
        for _ in range(20):
            mask = rng.random(store.num_rows) < 0.4
            rows = rng.permutation(np.flatnonzero(mask))
            for limit in (None, 3):
                by_rows = store.query(read_ts=read_ts, rows=rows, output_fields=["k"], limit=limit)
                by_mask = store.query(read_ts=read_ts, mask=mask, output_fields=["k"], limit=limit)
                assert by_rows.equals(by_mask)
            assert store.count(read_ts=read_ts, rows=rows) == store.count(read_ts=read_ts, mask=mask)
