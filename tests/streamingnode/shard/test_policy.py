"""Seal policy limits and the order in which reasons are chosen, on single segments."""

from __future__ import annotations

from dataclasses import replace

import pytest

from common.errors import ErrorCode, InvalidArgument
from streamingnode.shard import GrowingSegment, SealPolicy, SealReason
from streamingnode.shard.policy import MINUTE_MS, MiB

POLICY = SealPolicy(max_rows=10, max_bytes=100, max_lifetime_ms=1_000, max_idle_ms=300)


def segment(rows: int = 0, nbytes: int = 0, created_ms: int = 0, last_write_ms: int | None = None) -> GrowingSegment:
    return GrowingSegment(
        segment_id=1,
        collection_id=1,
        partition_id=1,
        vchannel="v0",
        rows=rows,
        bytes=nbytes,
        created_ms=created_ms,
        last_write_ms=created_ms if last_write_ms is None else last_write_ms,
    )


def test_defaults_are_documented_values() -> None:
    p = SealPolicy()
    p.validate()
    assert (p.max_rows, p.max_bytes) == (1_000_000, 128 * MiB)
    assert (p.max_lifetime_ms, p.max_idle_ms) == (10 * MINUTE_MS, 2 * MINUTE_MS)


@pytest.mark.parametrize("name", ["max_rows", "max_bytes", "max_lifetime_ms", "max_idle_ms"])
@pytest.mark.parametrize("value", [0, -1])
def test_validate_rejects_non_positive_limits(name: str, value: int) -> None:
    with pytest.raises(InvalidArgument, match=name) as err:
        replace(POLICY, **{name: value}).validate()
    assert err.value.code is ErrorCode.INVALID_ARGUMENT


def test_a_fresh_segment_keeps_growing() -> None:
    assert POLICY.reason_to_seal(segment(), now_ms=0) is None
    assert POLICY.reason_to_roll_over(segment(), rows=5, nbytes=50, now_ms=0) is None


@pytest.mark.parametrize(
    ("seg", "now_ms", "reason"),
    [
        (segment(rows=10), 0, SealReason.ROWS),  # full
        (segment(rows=9), 0, None),
        (segment(rows=1, nbytes=100), 0, SealReason.BYTES),
        (segment(rows=1, nbytes=99), 0, None),
        (segment(rows=1, last_write_ms=999), 1_000, SealReason.LIFETIME),  # written recently, but too old
        (segment(rows=1, last_write_ms=900), 999, None),
        (segment(rows=1, last_write_ms=100), 400, SealReason.IDLE),
        (segment(rows=1, last_write_ms=100), 399, None),
        (segment(), 300, SealReason.IDLE),  # an empty segment idles from its creation
        (segment(rows=10, nbytes=100), 5_000, SealReason.ROWS),  # precedence: rows, bytes, lifetime, idle
        (segment(rows=1, nbytes=100), 5_000, SealReason.BYTES),
        (segment(rows=1), 5_000, SealReason.LIFETIME),
    ],
)
def test_reason_to_seal(seg: GrowingSegment, now_ms: int, reason: SealReason | None) -> None:
    assert POLICY.reason_to_seal(seg, now_ms) is reason


def test_in_flight_inserts_count_toward_caps_and_prevent_idle() -> None:
    seg = segment(rows=4).reserved(6, 10)
    assert POLICY.reason_to_seal(seg, now_ms=0) is SealReason.ROWS
    busy = segment(rows=1).reserved(1, 1)
    assert POLICY.reason_to_seal(busy, now_ms=500) is None
    assert POLICY.reason_to_seal(busy.released(1, 1), now_ms=500) is SealReason.IDLE


@pytest.mark.parametrize(
    ("seg", "rows", "nbytes", "reason"),
    [
        (segment(rows=6), 4, 0, None),  # exactly at the cap fits
        (segment(rows=6), 5, 0, SealReason.ROWS),
        (segment(rows=1, nbytes=60), 1, 40, None),
        (segment(rows=1, nbytes=60), 1, 41, SealReason.BYTES),
        (segment(rows=6, nbytes=60), 5, 41, SealReason.ROWS),
        (segment(), 25, 1_000, None),  # an empty segment takes an oversized insert whole
        (segment(rows=1), 25, 0, SealReason.ROWS),
    ],
)
def test_reason_to_roll_over(seg: GrowingSegment, rows: int, nbytes: int, reason: SealReason | None) -> None:
    assert POLICY.reason_to_roll_over(seg, rows, nbytes, now_ms=0) is reason


def test_roll_over_applies_time_limits_even_to_empty_segments() -> None:
    assert POLICY.reason_to_roll_over(segment(), 1, 1, now_ms=1_000) is SealReason.LIFETIME
    assert POLICY.reason_to_roll_over(segment(rows=1), 1, 1, now_ms=300) is SealReason.IDLE
