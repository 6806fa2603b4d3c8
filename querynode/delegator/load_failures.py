"""Sealed segments a delegator could not load: why, how often, and when to try again.

A segment whose load failed is tried again when the coordinator next sends it
(every checker round): at once after the first failure, then not before a
backoff of 1 s, doubling up to 30 s, so a segment that cannot be loaded (a
corrupt file, an index the worker cannot build) does not keep a worker busy.
A failure is forgotten once the segment is published or released.

Pure bookkeeping, no I/O: the clock is injected.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import grpc

from common.errors import ErrorCode, StrataError

FIRST_BACKOFF_SECONDS = 1.0
MAX_BACKOFF_SECONDS = 30.0


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadFailure:
    segment_id: int
    node_id: int  # the worker it was to be loaded on
    code: ErrorCode
    reason: str
    attempts: int
    retry_at: float  # clock time before which it is not tried again

    def describe(self) -> str:
        tries = "1 attempt" if self.attempts == 1 else f"{self.attempts} attempts"
        return f"segment {self.segment_id} failed to load on query node {self.node_id} ({tries}): {self.reason}"


def failure_code(err: BaseException) -> ErrorCode:
    """The error code a load failure is reported with (a worker that did not answer: UNAVAILABLE)."""
    if isinstance(err, StrataError):
        return err.code
    if isinstance(err, grpc.aio.AioRpcError):
        return ErrorCode.UNAVAILABLE
    return ErrorCode.UNEXPECTED


def failure_reason(err: BaseException) -> str:
    if isinstance(err, StrataError):
        return err.message
    if isinstance(err, grpc.aio.AioRpcError):
        return f"{err.code().name}: {err.details()}"
    return f"{type(err).__name__}: {err}"


class LoadFailures:
    """The last failure of each segment that has not loaded since."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._failures: dict[int, LoadFailure] = {}

    def record(self, segment_id: int, node_id: int, err: BaseException) -> LoadFailure:
        """Note a failed attempt; the next one waits out the (doubled) backoff."""
        previous = self._failures.get(segment_id)
        attempts = 1 if previous is None else previous.attempts + 1
        backoff = 0.0 if attempts == 1 else min(FIRST_BACKOFF_SECONDS * 2 ** (attempts - 2), MAX_BACKOFF_SECONDS)
        failure = LoadFailure(
            segment_id=segment_id,
            node_id=node_id,
            code=failure_code(err),
            reason=failure_reason(err),
            attempts=attempts,
            retry_at=self._clock() + backoff,
        )
        self._failures[segment_id] = failure
        return failure

    def due(self, segment_id: int) -> bool:
        """Whether the segment may be tried now (never failed, or its backoff has passed)."""
        failure = self._failures.get(segment_id)
        return failure is None or self._clock() >= failure.retry_at

    def forget(self, segment_id: int) -> None:
        self._failures.pop(segment_id, None)

    def get(self, segment_id: int) -> LoadFailure | None:
        return self._failures.get(segment_id)

    def __iter__(self) -> Iterator[LoadFailure]:
        return iter(list(self._failures.values()))

    def __len__(self) -> int:
        return len(self._failures)
