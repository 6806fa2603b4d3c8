"""Pieces shared by the WAL benchmarks: the timestamp source, the message, the statistics."""

from __future__ import annotations

import logging
import statistics
import sys
import time

import structlog

from common.message import Insert
from coordinator.tso import LOGICAL_BITS
from protos.common_pb2 import Message

VCHANNEL = "v0"


class MonotonicTSO:
    """Hybrid timestamps ``(ms << 18) | logical`` from this process's clock, without RPCs.

    The benchmarks measure the WAL and its transport, not the coordinator:
    a real node pays one ``AllocTimestamp`` RPC per range of timestamps on top
    (``streamingnode/wal/timestamps.py``).
    Strictly increasing within one process; not persisted.
    """

    def __init__(self) -> None:
        self._next = 0

    async def allocate(self, count: int) -> int:
        first = max(int(time.time() * 1000) << LOGICAL_BITS, self._next)
        self._next = first + count
        return first

    async def allocate_fresh(self, count: int) -> int:
        return await self.allocate(count)


def insert_typed(size: int) -> Insert:
    """An Insert of one row into collection 1 on :data:`VCHANNEL` whose body is ``size`` bytes."""
    return Insert(vchannel=VCHANNEL, collection_id=1, partition_id=0, rows=1, ipc=b"b" * size)


def insert_message(size: int) -> Message:
    """:func:`insert_typed`, encoded."""
    return insert_typed(size).encode()


def percentile_ms(values: list[float], q: int) -> float:
    """The ``q``-th percentile of ``values`` (seconds), in milliseconds."""
    if len(values) < 2:
        return round(values[0] * 1e3, 3) if values else 0.0
    return round(statistics.quantiles(values, n=100, method="inclusive")[q - 1] * 1e3, 3)


def per_s(count: float, seconds: float, digits: int | None = None) -> float:
    """``count / seconds`` rounded (to an int when ``digits`` is None)."""
    return round(count / seconds, digits) if seconds > 0 else 0.0


def configure_logging() -> None:
    """Warnings and errors only, on stderr: stdout carries the results."""
    structlog.configure(
        wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
    )
