"""Sparse rows: Milvus' packed bytes, Arrow round trips, checks, padded query batches, the growing column."""

from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from segcore.segments.sparse_metric import sparse_ip
from segcore.segments.sparse_rows import (
    SparseRows,
    check_rows,
    drop_smallest,
    pad_queries,
    queries_from_bytes,
    queries_to_bytes,
    row_bytes,
    rows_from_bytes,
    unpad_queries,
)
from segcore.segments.sparse_vectors import SparseVectorColumn
from tests.segcore.segments.sparse_reference import as_dicts, random_rows


def test_bytes_are_milvus_pairs_sorted_by_index() -> None:
    raw = struct.pack("<IfIf", 7, 0.5, 2, 1.25)
    rows = rows_from_bytes([raw, b""])
    assert as_dicts(rows) == [{2: 1.25, 7: 0.5}, {}]
    assert row_bytes(rows) == [struct.pack("<IfIf", 2, 1.25, 7, 0.5), b""]
    with pytest.raises(ValueError, match="invalid data length in sparse float vector: 5"):
        rows_from_bytes([b"12345"])


def test_arrow_and_parquet_round_trip_bit_exact(tmp_path) -> None:
    rows = random_rows(np.random.default_rng(1), 300)
    valid = np.ones(300, dtype=bool)
    valid[[3, 10]] = False
    array = rows.to_arrow(valid)
    pq.write_table(pa.table({"v": array}), tmp_path / "t.parquet")
    back, back_valid = SparseRows.from_arrow(pq.read_table(tmp_path / "t.parquet").column("v"))
    assert back_valid.tolist() == valid.tolist()
    want = as_dicts(rows)
    got = as_dicts(back)
    for i in range(300):
        assert got[i] == ({} if not valid[i] else want[i])
    kept = rows.take(np.flatnonzero(valid))
    assert back.values.view(np.uint32).tolist() == kept.values.view(np.uint32).tolist()  # bit-exact
    # sliced arrays decode too
    sliced, _ = SparseRows.from_arrow(rows.to_arrow().slice(5, 7))
    assert as_dicts(sliced) == want[5:12]


@pytest.mark.parametrize(
    ("pairs", "message"),
    [
        ([(2**32 - 1, 1.0)], "must be less than 2^32-1"),
        ([(3, 1.0), (3, 2.0)], "unsorted or same indices"),
        ([(3, float("nan"))], "nan or"),
        ([(3, float("inf"))], "nan or"),
        ([(3, -0.5)], "negative value"),
    ],
)
def test_check_rows_refuses_what_milvus_refuses(pairs, message) -> None:
    raw = b"".join(struct.pack("<If", i, v) for i, v in pairs)
    problem = check_rows(rows_from_bytes([struct.pack("<If", 1, 1.0), raw]))
    assert problem is not None and message in problem


def test_check_rows_accepts_empty_rows_and_zero_values() -> None:
    assert check_rows(rows_from_bytes([b"", struct.pack("<IfIf", 0, 0.0, 2**32 - 2, 3.0)])) is None


def test_padded_queries_round_trip_through_bytes() -> None:
    rows = random_rows(np.random.default_rng(2), 9)
    padded = pad_queries(rows)
    assert padded.shape[0] == 9
    back = unpad_queries(queries_from_bytes(queries_to_bytes(padded)))
    assert as_dicts(back) == as_dicts(rows)
    assert as_dicts(unpad_queries(padded[3:5])) == as_dicts(rows)[3:5]


def test_drop_smallest_drops_each_rows_smallest_share() -> None:
    rows = rows_from_bytes([struct.pack("<IfIfIfIf", 1, 0.4, 2, 0.1, 3, 0.3, 4, 0.2), b""])
    assert as_dicts(drop_smallest(rows, 0.5)) == [{1: np.float32(0.4), 3: np.float32(0.3)}, {}]


def test_sparse_ip_matches_dict_reference() -> None:
    rng = np.random.default_rng(3)
    base, queries = random_rows(rng, 200), random_rows(rng, 5)
    got = sparse_ip(queries, base)
    for q, query in enumerate(as_dicts(queries)):
        for r, row in enumerate(as_dicts(base)):
            want = sum(float(np.float64(query[i]) * np.float64(v)) for i, v in sorted(row.items()) if i in query)
            assert got[q, r] == pytest.approx(want, rel=1e-12, abs=0)


def test_growing_column_appends_and_reads_back() -> None:
    rng = np.random.default_rng(4)
    column = SparseVectorColumn()
    parts = [random_rows(rng, n) for n in (5, 0, 40, 1)]
    for part in parts:
        rows, valid = SparseVectorColumn.decode(part.to_arrow())
        column.append(rows, valid)
    every = [d for part in parts for d in as_dicts(part)]
    assert as_dicts(column.matrix()) == every
    assert column.matrix().row_ids().tolist() == np.repeat(np.arange(46), np.diff(column.matrix().indptr)).tolist()
    taken, _ = SparseRows.from_arrow(column.take(np.array([45, 0, 7])))
    assert as_dicts(taken) == [every[45], every[0], every[7]]
