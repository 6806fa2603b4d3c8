"""Exact search of a GrowingStore against a numpy brute-force reference."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from common.errors import InvalidArgument
from segcore.segments import GrowingStore, UnknownMetricError

METRICS = ["L2", "IP", "COSINE"]


def reference(metric: str, queries: np.ndarray, base: np.ndarray) -> tuple[np.ndarray, bool]:
    """float64 distances (nq, n) and whether larger is better."""
    q = queries.astype(np.float64)
    b = base.astype(np.float64)
    if metric == "L2":
        return ((q[:, None, :] - b[None, :, :]) ** 2).sum(-1), False
    if metric == "IP":
        return q @ b.T, True
    qn = np.linalg.norm(q, axis=1, keepdims=True)
    bn = np.linalg.norm(b, axis=1, keepdims=True)
    qn[qn == 0] = np.inf
    bn[bn == 0] = np.inf
    return (q / qn) @ (b / bn).T, True


def reference_topk(dist: np.ndarray, larger: bool, k: int) -> np.ndarray:
    scores = -dist if larger else dist
    cols = np.broadcast_to(np.arange(dist.shape[1]), dist.shape)
    return np.lexsort((cols, scores), axis=-1)[:, :k]


def filled_store(schema, make_batch, n: int, seed: int = 0) -> tuple[GrowingStore, np.ndarray]:
    rng = np.random.default_rng(seed)
    base = rng.standard_normal((n, schema.field("vec").dim)).astype(np.float32)
    store = GrowingStore(schema)
    for start in range(0, n, 37):  # many batches: exercises chunk merging
        stop = min(start + 37, n)
        store.apply_insert(
            make_batch(schema, list(range(start, stop)), 1 + start, base[start:stop])
        )
    return store, base


@pytest.mark.parametrize("metric", METRICS)
def test_each_metric_matches_brute_force(dim, int_schema, make_batch, metric) -> None:
    store, base = filled_store(int_schema, make_batch, 500)
    queries = np.random.default_rng(1).standard_normal((5, dim)).astype(np.float32)
    result = store.search(field="vec", vectors=queries, metric=metric, topk=10, read_ts=10**6)
    dist, larger = reference(metric, queries, base)
    expected = reference_topk(dist, larger, 10)

    assert result.column_names == ["query", "pk", "distance"]
    assert result.schema.field("query").type == pa.int32()
    assert result.schema.field("distance").type == pa.float32()
    assert result["query"].to_pylist() == np.repeat(np.arange(5), 10).tolist()
    ids = np.array(result["pk"].to_pylist()).reshape(5, 10)
    np.testing.assert_array_equal(ids, expected)
    got = np.array(result["distance"].to_pylist()).reshape(5, 10)
    np.testing.assert_allclose(got, np.take_along_axis(dist, expected, 1), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("metric", ["l2", "Ip", "cosine"])
def test_metric_names_are_case_insensitive(dim, int_schema, make_batch, metric) -> None:
    store, _ = filled_store(int_schema, make_batch, 20)
    result = store.search(field="vec", vectors=np.ones(dim), metric=metric, topk=3, read_ts=100)
    assert result.num_rows == 3


def test_unknown_metric_is_a_value_error(dim, int_schema, make_batch) -> None:
    store, _ = filled_store(int_schema, make_batch, 5)
    for binary_metric in ("HAMMING", "JACCARD"):  # metrics of binary vectors, not of this float field
        with pytest.raises(ValueError, match=f"metric {binary_metric} cannot search the float vector field"):
            store.search(field="vec", vectors=np.ones(dim), metric=binary_metric, topk=3, read_ts=100)
    with pytest.raises(InvalidArgument):
        store.search(field="vec", vectors=np.ones(dim), metric="NOPE", topk=3, read_ts=100)
    assert issubclass(UnknownMetricError, ValueError)


def test_topk_larger_than_candidates_returns_all(dim, int_schema, make_batch) -> None:
    store, _ = filled_store(int_schema, make_batch, 4)
    result = store.search(field="vec", vectors=np.ones((2, dim)), metric="IP", topk=50, read_ts=100)
    assert result.num_rows == 8
    for q in (0, 1):
        d = [
            d
            for qq, d in zip(
                result["query"].to_pylist(), result["distance"].to_pylist(), strict=True
            )
            if qq == q
        ]
        assert d == sorted(d, reverse=True)


def test_only_visible_rows_are_searched(int_schema, make_batch, keys) -> None:
    store, base = filled_store(int_schema, make_batch, 100)
    store.apply_delete(keys(int_schema, list(range(0, 100, 2))), 10**5)
    read = 10**5
    result = store.search(field="vec", vectors=base[:4], metric="L2", topk=100, read_ts=read)
    assert set(result["pk"].to_pylist()) == set(range(1, 100, 2))
    # Before the delete, each query finds its own (even or odd) row first.
    before = store.search(field="vec", vectors=base[:4], metric="L2", topk=1, read_ts=read - 1)
    assert before["pk"].to_pylist() == [0, 1, 2, 3]
    # And rows inserted after the read timestamp are not seen.
    early = store.search(field="vec", vectors=base[:4], metric="L2", topk=100, read_ts=1)
    assert set(early["pk"].to_pylist()) == set(range(37))


def test_mask_restricts_candidates(int_schema, make_batch) -> None:
    store, base = filled_store(int_schema, make_batch, 200)
    mask = np.zeros(200, dtype=bool)
    mask[150:160] = True
    result = store.search(
        field="vec", vectors=base[:3], metric="COSINE", topk=5, read_ts=10**6, mask=mask
    )
    dist, _ = reference("COSINE", base[:3], base[150:160])
    expected = 150 + reference_topk(dist, True, 5)
    np.testing.assert_array_equal(np.array(result["pk"].to_pylist()).reshape(3, 5), expected)
    none = store.search(
        field="vec",
        vectors=base[:3],
        metric="L2",
        topk=5,
        read_ts=10**6,
        mask=np.zeros(200, dtype=bool),
    )
    assert none.num_rows == 0


def test_ties_rank_by_row_position(dim, int_schema, make_batch) -> None:
    vectors = np.zeros((12, dim), dtype=np.float32)
    vectors[:, 0] = [3, 1, 1, 2, 1, 1, 1, 0, 1, 2, 1, 1]
    store = GrowingStore(int_schema)
    store.apply_insert(make_batch(int_schema, list(range(12)), 1, vectors))
    query = np.zeros((1, dim), dtype=np.float32)
    result = store.search(field="vec", vectors=query, metric="L2", topk=4, read_ts=1)
    assert result["pk"].to_pylist() == [7, 1, 2, 4]
    orthogonal = query.copy()
    orthogonal[0, 1:] = 1.0
    result = store.search(field="vec", vectors=orthogonal, metric="IP", topk=3, read_ts=1)
    assert result["pk"].to_pylist() == [0, 1, 2]  # every inner product is 0


def test_cosine_with_zero_vectors_scores_zero(dim, int_schema, make_batch) -> None:
    vectors = np.zeros((3, dim), dtype=np.float32)
    vectors[1, 0] = 2.0
    store = GrowingStore(int_schema)
    store.apply_insert(make_batch(int_schema, [10, 11, 12], 1, vectors))
    result = store.search(field="vec", vectors=np.eye(dim)[0], metric="COSINE", topk=3, read_ts=1)
    assert result["pk"].to_pylist() == [11, 10, 12]
    np.testing.assert_allclose(result["distance"].to_pylist(), [1.0, 0.0, 0.0], atol=1e-6)
    zero_query = store.search(
        field="vec", vectors=np.zeros(dim), metric="COSINE", topk=3, read_ts=1
    )
    assert zero_query["distance"].to_pylist() == [0.0, 0.0, 0.0]


def test_output_fields_stay_aligned_with_keys(any_schema, make_batch) -> None:
    store, base = filled_store(any_schema, make_batch, 300)
    result = store.search(
        field="vec",
        vectors=base[[5, 250]],
        metric="L2",
        topk=7,
        read_ts=10**6,
        output_fields=["label", "pk", "vec", "_ts", "label"],
    )
    assert result.column_names == ["query", "pk", "distance", "label", "vec", "_ts"]
    assert result["label"].to_pylist() == [f"l{k}" for k in result["pk"].to_pylist()]
    stored = {
        k: v
        for k, v in zip(
            store.table()["pk"].to_pylist(), store.table()["vec"].to_pylist(), strict=True
        )
    }
    for k, v in zip(result["pk"].to_pylist(), result["vec"].to_pylist(), strict=True):
        assert v == stored[k]
    assert result["distance"].to_pylist()[0] == pytest.approx(0.0, abs=1e-4)
    assert result["distance"].to_pylist()[7] == pytest.approx(0.0, abs=1e-4)


def test_empty_store_returns_empty_typed_result(dim, any_schema) -> None:
    store = GrowingStore(any_schema)
    result = store.search(
        field="vec",
        vectors=np.ones((3, dim)),
        metric="IP",
        topk=5,
        read_ts=9,
        output_fields=["label", "vec"],
    )
    assert result.num_rows == 0
    assert result.schema.field("pk").type == any_schema.field("pk").arrow_type()
    assert result.column_names == ["query", "pk", "distance", "label", "vec"]


def test_null_vectors_are_never_returned(dim, nullable_vector_schema, make_batch) -> None:
    schema = nullable_vector_schema
    vectors: list[np.ndarray | None] = [np.ones(dim), None, np.full(dim, 2.0)]
    store = GrowingStore(schema)
    store.apply_insert(make_batch(schema, [1, 2, 3], 1, vectors))
    result = store.search(
        field="vec", vectors=np.ones(dim), metric="L2", topk=10, read_ts=1, output_fields=["vec"]
    )
    assert result["pk"].to_pylist() == [1, 3]
    assert store.table()["vec"].null_count == 1
    assert store.query(read_ts=1, output_fields=["vec"])["vec"].to_pylist()[1] is None


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"field": "label"}, "not a vector field"),
        ({"vectors": np.ones((2, 3))}, "must be"),
        ({"topk": 0}, "topk"),
        ({"output_fields": ["nope"]}, "unknown output field"),
        ({"mask": np.ones(3, dtype=bool)}, "mask has shape"),
        ({"mask": np.ones(5, dtype=np.int8)}, "bool"),
    ],
)
def test_invalid_search_arguments(dim, int_schema, make_batch, kwargs, message) -> None:
    store, _ = filled_store(int_schema, make_batch, 5)
    args = {"field": "vec", "vectors": np.ones(dim), "metric": "L2", "topk": 2, "read_ts": 100}
    with pytest.raises(ValueError, match=message):
        store.search(**(args | kwargs))


def test_nan_distances_rank_last(dim, int_schema, make_batch) -> None:
    vectors = np.ones((3, dim), dtype=np.float32)
    vectors[0, 0] = np.nan
    store = GrowingStore(int_schema)
    store.apply_insert(make_batch(int_schema, [1, 2, 3], 1, vectors))
    result = store.search(field="vec", vectors=np.ones(dim), metric="IP", topk=3, read_ts=1)
    assert result["pk"].to_pylist() == [2, 3, 1]
