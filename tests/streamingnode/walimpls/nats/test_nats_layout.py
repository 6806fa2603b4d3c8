"""Names, term markers and record frames of the ``nats`` backend (no server)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from common.errors import InvalidArgument, StrataError
from streamingnode.walimpls.impls.nats.layout import (
    FIRST_ID,
    RECORDS,
    ChannelNames,
    TermMarker,
    decode_frame,
    encode_frame,
    frame_header,
    frame_size,
)


def test_channel_names() -> None:
    names = ChannelNames.of("strata", "by-dev-dml_0")
    assert names.stream == "strata_by-dev-dml_0"
    assert names.data_subject == "strata.by-dev-dml_0.data"
    assert names.term_subject == "strata.by-dev-dml_0.term"
    assert names.owner_subject(7) == "strata.by-dev-dml_0.owner.7"


@pytest.mark.parametrize("channel", ["", "a.b", "a b", "a*", "a>", "a/b", "x" * 161, "ü"])
def test_bad_channel_names_are_refused(channel: str) -> None:
    with pytest.raises(InvalidArgument, match="invalid channel name"):
        ChannelNames.of("strata", channel)


def test_bad_prefix_is_refused() -> None:
    with pytest.raises(InvalidArgument, match="invalid stream prefix"):
        ChannelNames.of("a.b", "ch")


def test_marker_round_trip_and_corruption() -> None:
    marker = TermMarker(term=4, owner="abc")
    assert TermMarker.decode(marker.encode(), "here") == marker
    for bad in (b"", b"{}", b"not json", b'{"term": -1, "owner": "x"}', b'{"term": 1, "owner": ""}'):
        with pytest.raises(StrataError, match="bad term marker at here"):
            TermMarker.decode(bad, "here")


@given(st.lists(st.binary(max_size=40), min_size=1, max_size=20))
def test_frames_round_trip(payloads: list[bytes]) -> None:
    body = encode_frame(payloads)
    assert len(body) == frame_size([len(p) for p in payloads])
    assert decode_frame(body, len(payloads), "here") == payloads


def test_a_single_record_frame_is_the_payload_itself() -> None:
    assert encode_frame([b"abc"]) == b"abc"
    assert decode_frame(b"", 1, "here") == [b""]


@pytest.mark.parametrize(
    ("body", "count"),
    [
        (b"\x00\x00\x00\x05abc", 2),  # cut inside a record
        (b"\x00\x00\x00\x01a\x00\x00", 2),  # cut inside a length
        (b"\x00\x00\x00\x01a\x00\x00\x00\x01bXX", 2),  # bytes after the last record
    ],
)
def test_damaged_frames_are_corruption(body: bytes, count: int) -> None:
    with pytest.raises(StrataError, match="wal corrupted: frame at here"):
        decode_frame(body, count, "here")


def test_frame_numbering_from_headers() -> None:
    frame = frame_header({FIRST_ID: "7", RECORDS: "3"}, 12, "here")
    assert (frame.seq, frame.first_id, frame.count, frame.last_id) == (12, 7, 3, 9)
    assert frame_header({FIRST_ID: "4"}, 2, "here").count == 1
    for headers in (None, {}, {FIRST_ID: "x"}, {FIRST_ID: "0"}, {FIRST_ID: "3", RECORDS: "0"}):
        with pytest.raises(StrataError, match="wal corrupted"):
            frame_header(headers, 1, "here")
