"""LoadFailures: the retry backoff of a segment whose load failed, and what a failure reports."""

from __future__ import annotations

from common.errors import ErrorCode, InvalidArgument
from querynode.delegator.load_failures import LoadFailures


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_retried_at_once_then_backing_off_up_to_the_cap() -> None:
    clock = Clock()
    failures = LoadFailures(clock)
    assert failures.due(7)
    waits = []
    for _ in range(8):
        f = failures.record(7, 3, RuntimeError("disk"))
        waits.append(f.retry_at - clock.now)
        clock.now = f.retry_at
    assert waits == [0.0, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]
    clock.now -= 0.5
    assert not failures.due(7)
    clock.now += 0.5
    assert failures.due(7)
    failures.forget(7)
    assert failures.get(7) is None and failures.record(7, 3, RuntimeError("x")).attempts == 1


def test_a_failure_names_the_segment_node_attempts_and_reason() -> None:
    failures = LoadFailures(Clock())
    failures.record(7, 3, InvalidArgument("bad index"))
    f = failures.record(7, 3, InvalidArgument("bad index"))
    assert f.code == ErrorCode.INVALID_ARGUMENT
    assert f.describe() == "segment 7 failed to load on query node 3 (2 attempts): bad index"
    other = failures.record(8, 4, ValueError("boom"))
    assert other.code == ErrorCode.UNEXPECTED and other.reason == "ValueError: boom"
    assert sorted(x.segment_id for x in failures) == [7, 8]
