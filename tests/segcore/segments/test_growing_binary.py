"""A growing store with a binary vector field beside a float one: storage, exact search per metric, MVCC, filters."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from common.schema import TIMESTAMP_COLUMN, CollectionSchema, DataType, FieldSchema
from segcore.segments.growing import GrowingStore
from tests.segcore.segments.binary_reference import random_codes, reference_topk

BITS = 40  # 5 bytes: not a whole number of 64-bit words
SCHEMA = CollectionSchema(
    name="b",
    fields=(
        FieldSchema(field_id=100, name="pk", dtype=DataType.INT64, is_primary=True),
        FieldSchema(field_id=101, name="bits", dtype=DataType.BINARY_VECTOR, dim=BITS),
        FieldSchema(field_id=102, name="vec", dtype=DataType.FLOAT_VECTOR, dim=3),
        FieldSchema(field_id=103, name="tag", dtype=DataType.INT64),
    ),
)


def _batch(pks: range, codes: np.ndarray, ts: int) -> pa.Table:
    n = len(pks)
    return pa.table(
        {
            "pk": pa.array(list(pks), pa.int64()),
            "bits": pa.array([c.tobytes() for c in codes], pa.binary(BITS // 8)),
            "vec": pa.FixedSizeListArray.from_arrays(pa.array(np.ones(3 * n, np.float32)), 3),
            "tag": pa.array([p % 3 for p in pks], pa.int64()),
            TIMESTAMP_COLUMN: pa.array([ts] * n, pa.uint64()),
        }
    )


@pytest.fixture
def codes() -> np.ndarray:
    return random_codes(400, BITS // 8, seed=11, density=0.3)


@pytest.fixture
def store(codes: np.ndarray) -> GrowingStore:
    s = GrowingStore(SCHEMA)
    s.apply_insert(_batch(range(0, 250), codes[:250], 10))
    s.apply_insert(_batch(range(250, 400), codes[250:], 20))
    return s


def test_codes_are_kept_as_a_uint8_matrix_and_returned_bit_exact(store: GrowingStore, codes: np.ndarray) -> None:
    matrix = store.vector_matrix("bits")
    assert matrix.dtype == np.uint8 and matrix.shape == (400, BITS // 8)
    np.testing.assert_array_equal(matrix, codes)
    table = store.table()
    assert table.schema.field("bits").type == pa.binary(5)
    assert table.column("bits").to_pylist() == [c.tobytes() for c in codes]
    got = store.query(read_ts=30, output_fields=["bits"], limit=7)
    assert got.column("bits").to_pylist() == [codes[i].tobytes() for i in range(7)]


@pytest.mark.parametrize("metric", ["HAMMING", "JACCARD", "SUBSTRUCTURE", "SUPERSTRUCTURE"])
def test_exact_search_matches_the_reference(store: GrowingStore, codes: np.ndarray, metric: str) -> None:
    queries = np.concatenate([random_codes(3, BITS // 8, seed=5, density=0.05), codes[[7, 300]]])
    hits = store.search(field="bits", vectors=queries, metric=metric, topk=6, read_ts=30, output_fields=["bits"])
    expected = reference_topk(metric, queries, codes, 6)
    for q, want in enumerate(expected):
        mine = hits.filter(pa.compute.equal(hits.column("query"), q))
        assert mine.column("pk").to_pylist() == [r for r, _ in want]
        np.testing.assert_allclose(mine.column("distance").to_numpy(), [d for _, d in want], rtol=1e-6)
        assert mine.column("bits").to_pylist() == [codes[r].tobytes() for r, _ in want]


def test_deleted_rows_and_masked_rows_are_never_hits(store: GrowingStore, codes: np.ndarray) -> None:
    store.apply_delete(pa.array([7], pa.int64()), 25)
    query = codes[7:8]
    before = store.search(field="bits", vectors=query, metric="HAMMING", topk=1, read_ts=24)
    assert before.column("pk").to_pylist() == [7] and before.column("distance").to_pylist() == [0.0]
    after = store.search(field="bits", vectors=query, metric="HAMMING", topk=5, read_ts=30)
    assert 7 not in after.column("pk").to_pylist()
    allowed = np.arange(400) % 3 == 1
    masked = store.search(field="bits", vectors=query, metric="JACCARD", topk=5, read_ts=30, mask=allowed)
    visible = allowed.copy()
    visible[7] = False
    assert masked.column("pk").to_pylist() == [r for r, _ in reference_topk("JACCARD", query, codes, 5, visible)[0]]


def test_the_float_field_beside_it_still_searches_and_metrics_do_not_cross(store: GrowingStore) -> None:
    hits = store.search(field="vec", vectors=np.ones((1, 3)), metric="L2", topk=2, read_ts=30)
    assert hits.column("distance").to_pylist() == [0.0, 0.0]
    with pytest.raises(ValueError, match="metric L2 cannot search the binary vector field 'bits'"):
        store.search(field="bits", vectors=np.zeros((1, 5), np.uint8), metric="L2", topk=2, read_ts=30)
    with pytest.raises(ValueError, match=r"query vectors must be \(nq, 5\)"):
        store.search(field="bits", vectors=np.zeros((1, 4), np.uint8), metric="HAMMING", topk=2, read_ts=30)


def test_a_batch_of_the_wrong_width_changes_nothing(store: GrowingStore, codes: np.ndarray) -> None:
    bad = _batch(range(400, 402), codes[:2], 40).set_column(1, "bits", pa.array([b"\x00" * 4] * 2, pa.binary(4)))
    with pytest.raises(ValueError):
        store.apply_insert(bad)
    assert store.num_rows == 400
