"""FLOAT16, BFLOAT16 and INT8 rows: the conversions (against numpy and ml_dtypes), distances against a float64
reference on the up-converted values (over several conversion chunks), and the growing store keeping them in their
own width, bit-exact, searched exactly."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pyarrow as pa
import pytest

from common.narrow_vectors import CHUNK_CELLS, float_chunks, from_float32, row_sqnorms, to_float32
from common.schema import TIMESTAMP_COLUMN, CollectionSchema, DataType, FieldSchema
from segcore.segments.growing import GrowingStore
from segcore.segments.metric import Metric
from segcore.segments.narrow_vectors import matrix_distances
from tests.segcore.index.reference import reference_distances, reference_topk

DIM = 16
NARROW = {DataType.FLOAT16_VECTOR: np.float16, DataType.BFLOAT16_VECTOR: ml_dtypes.bfloat16, DataType.INT8_VECTOR: np.int8}


def narrow_rows(dtype: DataType, n: int, seed: int) -> np.ndarray:
    """``n`` rows stored as the server keeps them (bfloat16 as its bits, uint16)."""
    rng = np.random.default_rng(seed)
    if dtype == DataType.INT8_VECTOR:
        return rng.integers(-128, 128, (n, DIM)).astype(np.int8)
    rows = (rng.standard_normal((n, DIM)) * 4).astype(NARROW[dtype])
    return rows.view(np.uint16) if dtype == DataType.BFLOAT16_VECTOR else rows


def test_bfloat16_bits_widen_exactly_for_every_pattern() -> None:
    bits = np.arange(1 << 16, dtype=np.uint16)
    got = to_float32(bits[None, :])[0]
    want = bits.view(ml_dtypes.bfloat16).astype(np.float32)
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    assert same.all()


def test_rounding_to_the_half_types_matches_numpy_and_ml_dtypes() -> None:
    rng = np.random.default_rng(1)
    values = np.concatenate([
        rng.standard_normal(20_000).astype(np.float32) * 1000,
        # bfloat16 ties: exactly half-way between two bfloat16 values, both parities.
        (np.arange(1, 200, dtype=np.uint32) << 16 | 0x8000).view(np.float32),
        np.array([0.0, -0.0, 65504.0, 1e-8, -3.4e38], dtype=np.float32),
    ])
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(from_float32(values, DataType.FLOAT16_VECTOR), values.astype(np.float16))
    np.testing.assert_array_equal(
        from_float32(values, DataType.BFLOAT16_VECTOR), values.astype(ml_dtypes.bfloat16).view(np.uint16)
    )
    nan = from_float32(np.array([np.nan], np.float32), DataType.BFLOAT16_VECTOR)
    assert np.isnan(to_float32(nan[None, :])).all()


@pytest.mark.parametrize("dtype", list(NARROW), ids=lambda d: d.name)
@pytest.mark.parametrize("metric", [Metric.L2, Metric.IP, Metric.COSINE], ids=lambda m: m.value)
def test_distances_over_several_chunks_match_float64_on_the_upconverted_values(dtype: DataType, metric: Metric) -> None:
    rows = CHUNK_CELLS // DIM * 2 + 123  # three conversion chunks, the last one partial
    base = narrow_rows(dtype, rows, seed=2)
    assert len(list(float_chunks(base))) == 3
    queries = to_float32(narrow_rows(dtype, 4, seed=3))
    values = to_float32(base)
    got = matrix_distances(metric, queries, base, row_sqnorms(base))
    assert got.dtype == np.float32
    want = reference_distances(metric, queries, values)
    scale = np.abs(want).max()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6 * scale)


SCHEMA = CollectionSchema(
    name="n",
    fields=(
        FieldSchema(field_id=100, name="pk", dtype=DataType.INT64, is_primary=True),
        FieldSchema(field_id=101, name="f16", dtype=DataType.FLOAT16_VECTOR, dim=DIM),
        FieldSchema(field_id=102, name="b16", dtype=DataType.BFLOAT16_VECTOR, dim=DIM),
        FieldSchema(field_id=103, name="i8", dtype=DataType.INT8_VECTOR, dim=DIM),
    ),
)
FIELDS = {"f16": DataType.FLOAT16_VECTOR, "b16": DataType.BFLOAT16_VECTOR, "i8": DataType.INT8_VECTOR}


def _batch(pks: range, data: dict[str, np.ndarray], ts: int) -> pa.Table:
    cols: dict[str, pa.Array] = {"pk": pa.array(list(pks), pa.int64())}
    for name in FIELDS:
        rows = data[name][pks.start : pks.stop]
        cols[name] = pa.array([r.tobytes() for r in rows], pa.binary(rows.shape[1] * rows.itemsize))
    cols[TIMESTAMP_COLUMN] = pa.array([ts] * len(pks), pa.uint64())
    return pa.table(cols)


@pytest.fixture
def data() -> dict[str, np.ndarray]:
    return {name: narrow_rows(dtype, 300, seed=i) for i, (name, dtype) in enumerate(FIELDS.items())}


@pytest.fixture
def store(data: dict[str, np.ndarray]) -> GrowingStore:
    s = GrowingStore(SCHEMA)
    s.apply_insert(_batch(range(0, 200), data, 10))
    s.apply_insert(_batch(range(200, 300), data, 20))
    return s


def test_rows_stay_in_their_width_and_come_back_bit_exact(store: GrowingStore, data: dict[str, np.ndarray]) -> None:
    for name in FIELDS:
        matrix = store.vector_matrix(name)
        assert matrix.dtype == data[name].dtype and matrix.shape == (300, DIM)
        assert matrix.nbytes == 300 * DIM * data[name].itemsize  # no float32 copy
        np.testing.assert_array_equal(matrix, data[name])
    got = store.query(read_ts=30, output_fields=list(FIELDS), limit=5)
    for name in FIELDS:
        assert got.column(name).to_pylist() == [data[name][i].tobytes() for i in range(5)]


@pytest.mark.parametrize("metric", [Metric.L2, Metric.IP, Metric.COSINE], ids=lambda m: m.value)
def test_exact_search_ranks_like_the_reference_and_respects_versions(
    store: GrowingStore, data: dict[str, np.ndarray], metric: Metric
) -> None:
    for name in FIELDS:
        values = to_float32(data[name])
        queries = values[[3, 250]] + 0.5
        hits = store.search(field=name, vectors=queries, metric=metric.value, topk=5, read_ts=30)
        rows, dist = reference_topk(metric, queries, values, 5)
        assert hits.column("pk").to_pylist() == rows.ravel().tolist()
        np.testing.assert_allclose(hits.column("distance").to_numpy(), dist.ravel(), rtol=1e-4, atol=1e-3)
        # At ts 15 only the first batch is visible.
        early = store.search(field=name, vectors=queries, metric=metric.value, topk=5, read_ts=15)
        rows, _ = reference_topk(metric, queries, values[:200], 5)
        assert early.column("pk").to_pylist() == rows.ravel().tolist()
