"""SegmentStats: min/max plus bloom, vectorised membership, the stats-log byte format."""

from __future__ import annotations

import struct

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from common.errors import InvalidArgument
from common.schema import DataType
from common.storage import CorruptObject, PkBloomFilter, SegmentStats


def test_int_stats_range_and_membership() -> None:
    stats = SegmentStats.build(pa.array([5, -3, 12, 7], pa.int64()))
    assert (stats.rows, stats.min_pk, stats.max_pk, stats.pk_type) == (4, -3, 12, DataType.INT64)
    got = stats.may_contain(pa.array([-3, 5, 7, 12, -4, 13, 10**12], pa.int64()))
    assert got.tolist()[:4] == [True] * 4
    assert got.tolist()[4:] == [False, False, False]  # outside [min, max]: certainly absent


def test_varchar_stats_order_by_utf8_bytes() -> None:
    stats = SegmentStats.build(pa.array(["b", "é", "a~", "zz"]))
    assert (stats.min_pk, stats.max_pk) == ("a~", "é")
    got = stats.may_contain(pa.array(["a~", "zz", "é", "a", "ê"]))
    assert got.tolist() == [True, True, True, False, False]


@settings(max_examples=50, deadline=None)
@given(
    st.one_of(
        st.lists(st.integers(-(2**63), 2**63 - 1), max_size=100),
        st.lists(st.text(max_size=12), max_size=100),
    ),
)
def test_round_trip_and_no_false_negatives(keys: list[int] | list[str]) -> None:
    arr = pa.array(keys, pa.string() if keys and isinstance(keys[0], str) else pa.int64())
    stats = SegmentStats.build(arr)
    again = SegmentStats.from_bytes(stats.to_bytes())
    assert again == stats
    assert again.may_contain(arr).all()


def test_empty_stats() -> None:
    stats = SegmentStats.build(pa.array([], pa.string()))
    assert (stats.rows, stats.min_pk, stats.max_pk, stats.pk_type) == (0, None, None, DataType.VARCHAR)
    assert SegmentStats.from_bytes(stats.to_bytes()) == stats
    assert not stats.may_contain(pa.array(["x"])).any()


def test_header_layout() -> None:
    blob = SegmentStats.build(pa.array([3, 9], pa.int64())).to_bytes()
    assert blob[:16] == b"SPST" + struct.pack("<HBBQ", 1, 5, 1, 2)
    assert struct.unpack_from("<qqQ", blob, 16)[:2] == (3, 9)
    bloom_len = struct.unpack_from("<Q", blob, 32)[0]
    assert len(blob) == 40 + bloom_len
    assert PkBloomFilter.from_bytes(blob[40:]).count == 2


def test_misuse_is_refused() -> None:
    stats = SegmentStats.build(pa.array([1, 2]))
    with pytest.raises(InvalidArgument):
        stats.may_contain(pa.array(["1"]))
    with pytest.raises(InvalidArgument):
        stats.may_contain(pa.array([1, None]))
    with pytest.raises(InvalidArgument):
        SegmentStats(rows=1, min_pk=None, max_pk=None, bloom=stats.bloom)
    with pytest.raises(InvalidArgument):
        SegmentStats(rows=1, min_pk="a", max_pk="b", bloom=stats.bloom)


@pytest.mark.parametrize("cut", [0, 8, 20, 39, -1])
def test_truncated_or_foreign_bytes_are_corrupt(cut: int) -> None:
    blob = SegmentStats.build(pa.array(["a", "b"])).to_bytes()
    with pytest.raises(CorruptObject):
        SegmentStats.from_bytes(blob[:cut])
    with pytest.raises(CorruptObject):
        SegmentStats.from_bytes(b"NOPE" + blob[4:])
    with pytest.raises(CorruptObject):
        SegmentStats.from_bytes(blob + b"\x00")
