"""Value types of the WAL interface and the backend registry."""

from __future__ import annotations

from pathlib import Path

import pytest

from common.errors import InvalidArgument
from streamingnode.walimpls import (
    DeliverPolicy,
    DeliverPolicyKind,
    MessageID,
    build_opener,
    register_backend,
    registered_backends,
)
from streamingnode.walimpls.impls.local import LocalWALOpener, local_opener


def test_message_id_bytes_round_trip_and_order() -> None:
    ids = [MessageID(s) for s in (1, 2, 255, 256, 2**40, 2**64 - 1)]
    for mid in ids:
        assert MessageID.from_bytes(mid.to_bytes()) == mid
    assert sorted(ids, key=lambda m: m.to_bytes()) == sorted(ids)
    assert MessageID(3) < MessageID(10)
    assert hash(MessageID(7)) == hash(MessageID(7))


@pytest.mark.parametrize("seq", [0, -1, 2**64])
def test_message_id_range(seq: int) -> None:
    with pytest.raises(InvalidArgument):
        MessageID(seq)


def test_message_id_from_bad_bytes() -> None:
    with pytest.raises(InvalidArgument):
        MessageID.from_bytes(b"\x01\x02")


def test_deliver_policies() -> None:
    mid = MessageID(5)
    assert DeliverPolicy.all().kind is DeliverPolicyKind.ALL
    assert DeliverPolicy.latest().message_id is None
    assert DeliverPolicy.start_from(mid) == DeliverPolicy(DeliverPolicyKind.START_FROM, mid)
    assert DeliverPolicy.start_after(mid).message_id == mid
    with pytest.raises(InvalidArgument):
        DeliverPolicy(DeliverPolicyKind.START_FROM)
    with pytest.raises(InvalidArgument):
        DeliverPolicy(DeliverPolicyKind.ALL, mid)


def test_registry_builds_local(tmp_path: Path) -> None:
    assert "local" in registered_backends()
    opener = build_opener("local", root_dir=tmp_path, segment_bytes=4096, sync=False)
    assert isinstance(opener, LocalWALOpener)
    register_backend("local", local_opener)  # same factory again: fine


def test_registry_errors(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgument, match="unknown wal backend"):
        build_opener("kafka")
    with pytest.raises(InvalidArgument, match="bad options"):
        build_opener("local", root_dir=tmp_path, no_such_option=1)
    with pytest.raises(InvalidArgument, match="segment_bytes"):
        build_opener("local", root_dir=tmp_path, segment_bytes=0)
    with pytest.raises(InvalidArgument, match="already registered"):
        register_backend("local", lambda **_: local_opener(tmp_path))
