"""Segment states only move forward; replays of old reports change nothing."""

from __future__ import annotations

import itertools

from common.position import Position
from common.segment import SegmentLevel, SegmentMeta, SegmentState, next_state

S = SegmentState
ORDER = [S.GROWING, S.SEALED, S.FLUSHING, S.FLUSHED, S.DROPPED]


def test_every_forward_step_is_taken_and_every_other_report_ignored() -> None:
    for current, wanted in itertools.product(ORDER, ORDER):
        got = next_state(current, wanted)
        if current != S.DROPPED and ORDER.index(wanted) > ORDER.index(current):
            assert got == wanted, (current, wanted)
        else:
            assert got is None, (current, wanted)


def test_dropping_records_when_and_json_round_trips() -> None:
    seg = SegmentMeta(
        segment_id=7,
        collection_id=1,
        partition_id=2,
        vchannel="v",
        state=S.GROWING,
        level=SegmentLevel.L0,
        start_position=Position(b"\x00\x01", 5),
    )
    dropped = seg.moved_to(S.DROPPED, now=123.5)
    assert dropped is not None and dropped.dropped_at == 123.5
    assert dropped.moved_to(S.FLUSHED, now=200) is None
    assert SegmentMeta.from_json(dropped.to_json()) == dropped


def test_a_remote_unexpected_error_is_not_rebuilt_as_an_unrelated_subclass() -> None:
    from common.errors import ErrorCode, SegmentNotFound, StrataError, error_from_code
    from common.etcd.metastore import NotLeader

    err = error_from_code(ErrorCode.UNEXPECTED, "boom")
    assert type(err) is StrataError and not isinstance(err, NotLeader)
    assert isinstance(error_from_code(ErrorCode.SEGMENT_NOT_FOUND, "gone"), SegmentNotFound)
