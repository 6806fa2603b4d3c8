"""Building blocks of the growing store: buffers, pk index, chunked rows, top-k."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from segcore.segments.buffers import GrowableArray
from segcore.segments.pk_index import MISSING, IntPkIndex, StrPkIndex
from segcore.segments.rows import ChunkedRows
from segcore.segments.search import select_topk


def test_growable_array_keeps_rows_across_growth() -> None:
    buf = GrowableArray(np.float32, width=3)
    expected = []
    for i in range(200):
        rows = np.full((i % 5 + 1, 3), i, dtype=np.float32)
        buf.append(rows)
        expected.append(rows)
    np.testing.assert_array_equal(buf.view(), np.concatenate(expected))
    buf.extend_filled(2, 7.0)
    assert len(buf) == sum(len(r) for r in expected) + 2
    assert buf.view()[-1].tolist() == [7.0, 7.0, 7.0]


@pytest.mark.parametrize("index_type", [IntPkIndex, StrPkIndex])
def test_pk_index_codes_are_stable_and_dense(index_type) -> None:
    rng = np.random.default_rng(0)
    index = index_type()
    reference: dict[object, int] = {}
    as_arrow = (
        (lambda v: pa.array(v, pa.int64()))
        if index_type is IntPkIndex
        else (lambda v: pa.array([f"s{x}" for x in v]))
    )
    for _ in range(60):
        batch = rng.integers(-500, 500, size=int(rng.integers(1, 40))).tolist()
        keys = as_arrow(batch)
        known = dict(reference)
        before = index.lookup(keys)
        codes = index.add(keys)
        for key, code, old in zip(keys.to_pylist(), codes.tolist(), before.tolist(), strict=True):
            assert old == known.get(key, MISSING)
            assert reference.setdefault(key, code) == code
    assert len(index) == len(reference)
    assert sorted(reference.values()) == list(range(len(reference)))


def test_int_pk_index_keeps_few_runs() -> None:
    index = IntPkIndex()
    for start in range(0, 10_000, 10):
        index.add(pa.array(np.arange(start, start + 10, dtype=np.int64)))
    assert len(index._runs) <= 16  # O(log n)
    np.testing.assert_array_equal(index.lookup(pa.array([0, 9_999, 10_000])), [0, 9_999, MISSING])


def test_chunked_rows_take_in_any_order_with_repeats() -> None:
    schema = pa.schema([pa.field("a", pa.int64()), pa.field("b", pa.string())])
    rows = ChunkedRows(schema)
    for start in range(0, 1000, 7):
        stop = min(start + 7, 1000)
        rows.append(pa.table({"a": range(start, stop), "b": [str(i) for i in range(start, stop)]}))
    assert rows.num_rows == 1000
    assert rows.table().num_rows == 1000
    assert len(rows._chunks) <= 20
    wanted = np.array([999, 0, 500, 500, 3, 998, 7], dtype=np.int64)
    taken = rows.take(wanted, ["b", "a"])
    assert taken.column_names == ["b", "a"]
    assert taken["a"].to_pylist() == wanted.tolist()
    assert taken["b"].to_pylist() == [str(i) for i in wanted]
    assert rows.take(np.empty(0, np.int64), ["a"]).num_rows == 0


def test_select_topk_breaks_ties_by_column() -> None:
    scores = np.array(
        [
            [1.0, 0.0, 1.0, 1.0, 1.0, 2.0],
            [5.0, 4.0, 3.0, 2.0, 1.0, 0.0],
            [0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        ]
    )
    np.testing.assert_array_equal(select_topk(scores, 3), [[1, 0, 2], [5, 4, 3], [0, 1, 2]])
    np.testing.assert_array_equal(select_topk(scores, 10)[2], [0, 1, 2, 3, 4, 5])
    assert select_topk(scores, 0).shape == (3, 0)


def test_select_topk_matches_a_stable_sort_on_random_ties() -> None:
    rng = np.random.default_rng(5)
    scores = rng.integers(0, 4, size=(50, 40)).astype(np.float32)
    for k in (1, 5, 17, 39, 40):
        expected = np.argsort(scores, axis=1, kind="stable")[:, :k]
        np.testing.assert_array_equal(select_topk(scores, k), expected)
