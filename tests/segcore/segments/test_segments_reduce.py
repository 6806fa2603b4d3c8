"""merge_topk: the proxy's final reduce over per-shard search results."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pytest

from segcore.segments import larger_is_better, merge_topk


def hits(rows: Sequence[tuple[int, object, float]], pk_type: pa.DataType | None = None) -> pa.Table:
    pk_type = pk_type or pa.int64()
    queries, pks, dists = zip(*rows, strict=True) if rows else ((), (), ())
    return pa.table(
        {
            "query": pa.array(queries, pa.int32()),
            "id": pa.array(pks, pk_type),
            "distance": pa.array(dists, pa.float32()),
            "tag": pa.array([f"t{p}-{d}" for p, d in zip(pks, dists, strict=True)]),
        }
    )


def rows_of(table: pa.Table) -> list[tuple[int, object, float]]:
    return list(
        zip(
            table["query"].to_pylist(),
            table["id"].to_pylist(),
            table["distance"].to_pylist(),
            strict=True,
        )
    )


def test_merges_shards_best_first_per_query_for_l2() -> None:
    a = hits([(0, 1, 0.5), (0, 2, 1.5), (1, 3, 0.25)])
    b = hits([(0, 4, 1.0), (1, 5, 0.125), (1, 6, 2.0)])
    merged = merge_topk([a, b], topk=2, metric="L2", pk_field="id")
    assert rows_of(merged) == [(0, 1, 0.5), (0, 4, 1.0), (1, 5, 0.125), (1, 3, 0.25)]
    assert merged.column_names == ["query", "id", "distance", "tag"]


def test_larger_is_better_for_ip_and_cosine() -> None:
    a = hits([(0, 1, 0.5), (0, 2, 0.75)])
    b = hits([(0, 3, 0.625)])
    for metric in ("IP", "cosine"):
        merged = merge_topk([a, b], topk=3, metric=metric, pk_field="id")
        assert [r[1] for r in rows_of(merged)] == [2, 3, 1]
    assert larger_is_better("ip") and larger_is_better("COSINE") and not larger_is_better("l2")


@pytest.mark.parametrize(("metric", "kept"), [("L2", 0.25), ("IP", 0.75)])
def test_duplicate_keys_keep_the_best_distance(metric, kept) -> None:
    a = hits([(0, 7, 0.75), (0, 8, 0.5)])
    b = hits([(0, 7, 0.25), (1, 7, 0.5)])
    merged = merge_topk([a, b], topk=10, metric=metric, pk_field="id")
    per_query0 = {pk: d for q, pk, d in rows_of(merged) if q == 0}
    assert per_query0[7] == kept
    assert len([r for r in rows_of(merged) if r[0] == 0]) == 2
    assert [r for r in rows_of(merged) if r[0] == 1] == [(1, 7, 0.5)]
    # The whole row of the winning hit is kept (output fields included).
    tags = dict(zip(merged["id"].to_pylist()[:2], merged["tag"].to_pylist()[:2], strict=True))
    assert tags[7] == f"t7-{kept}"


def test_offset_skips_ranks_per_query() -> None:
    a = hits([(0, i, float(i)) for i in range(6)] + [(1, 10 + i, float(i)) for i in range(2)])
    merged = merge_topk([a], topk=2, metric="L2", pk_field="id", offset=3)
    assert rows_of(merged) == [(0, 3, 3.0), (0, 4, 4.0)]  # query 1 has only 2 hits
    merged = merge_topk([a], topk=10, metric="L2", pk_field="id", offset=1)
    assert [r[1] for r in rows_of(merged)] == [1, 2, 3, 4, 5, 11]


def test_dedupe_happens_before_offset() -> None:
    a = hits([(0, 1, 0.0), (0, 2, 1.0)])
    b = hits([(0, 1, 0.5), (0, 3, 2.0)])
    merged = merge_topk([a, b], topk=5, metric="L2", pk_field="id", offset=1)
    assert [r[1] for r in rows_of(merged)] == [2, 3]


def test_equal_distances_rank_in_input_order() -> None:
    a = hits([(0, 9, 1.0)])
    b = hits([(0, 4, 1.0), (0, 6, 1.0)])
    merged = merge_topk([a, b], topk=3, metric="IP", pk_field="id")
    assert [r[1] for r in rows_of(merged)] == [9, 4, 6]


def test_varchar_keys() -> None:
    a = hits([(0, "x", 0.5), (0, "y", 0.25)], pa.string())
    b = hits([(0, "x", 0.125)], pa.string())
    merged = merge_topk([a, b], topk=5, metric="L2", pk_field="id")
    assert rows_of(merged) == [(0, "x", 0.125), (0, "y", 0.25)]


def test_empty_inputs() -> None:
    merged = merge_topk([hits([]), hits([])], topk=3, metric="L2", pk_field="id")
    assert merged.num_rows == 0
    assert merged.column_names == ["query", "id", "distance", "tag"]


@pytest.mark.parametrize(
    "kwargs",
    [{"topk": 0}, {"offset": -1}, {"metric": "MANHATTAN"}, {"results": []}],
)
def test_invalid_arguments(kwargs) -> None:
    args = {"results": [hits([(0, 1, 1.0)])], "topk": 3, "metric": "L2", "pk_field": "id"} | kwargs
    with pytest.raises(ValueError):
        merge_topk(**args)


def test_mismatched_columns_are_refused() -> None:
    with pytest.raises(ValueError, match="different columns"):
        merge_topk(
            [hits([(0, 1, 1.0)]), hits([(0, 1, 1.0)]).drop_columns(["tag"])],
            topk=3,
            metric="L2",
            pk_field="id",
        )
