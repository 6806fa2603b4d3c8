"""Read holds: the records an open reader of a WAL still needs are not truncated under it.

Each ``SwitchableScanner`` of a WAL holds the position it would restart the
backend from (its start, then the ``last_confirmed`` of the last message it
consumed): ``WAL.truncate`` never passes the lowest hold. So a reader that is
slower than the flusher, or a delegator whose stream is open while it loads
its sealed segments for minutes, keeps its place in the log instead of
finding it truncated. (Before, a truncation could pass a reader: a new stream
was refused with ``PositionTruncated``, and a local backend scanner between
two files skipped the deleted ones.)

A reader that delivers nothing for ``max_age`` seconds (its consumer stopped
pulling; an idle WAL still delivers a volatile TimeTick every tick) no
longer holds the log, so one stuck consumer cannot fill the disk: it is
*abandoned*, and its scanner fails with ``PositionTruncated`` at its next
step, as a reader whose position was truncated does. Pure bookkeeping; the
clock is injected.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import structlog

from streamingnode.walimpls.wal import MessageID

DEFAULT_MAX_AGE_SECONDS = 600.0


@dataclass(slots=True, eq=False)
class ReadHold:
    """One reader's hold. ``position`` None: it needs the log from its first record."""

    position: MessageID | None
    moved_at: float
    abandoned: bool = False


class ReadHolds:
    """The holds of one WAL's open readers."""

    def __init__(
        self, channel: str, *, max_age: float = DEFAULT_MAX_AGE_SECONDS, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if max_age <= 0:
            raise ValueError(f"max_age must be positive, got {max_age}")
        self._max_age = max_age
        self._clock = clock
        self._holds: list[ReadHold] = []
        self._log = structlog.get_logger().bind(component="wal-holds", pchannel=channel)

    def open(self, position: MessageID | None) -> ReadHold:
        """Hold the log from ``position`` on (None: from its first record) until ``close``."""
        hold = ReadHold(position, self._clock())
        self._holds.append(hold)
        return hold

    def move(self, hold: ReadHold, position: MessageID | None) -> None:
        """The reader delivered a message and would now restart at ``position``."""
        hold.position = position
        hold.moved_at = self._clock()

    def close(self, hold: ReadHold) -> None:
        if hold in self._holds:
            self._holds.remove(hold)

    def bound(self, upto: MessageID) -> MessageID | None:
        """The highest truncation bound at or below ``upto`` that keeps every live hold's records;
        None when a hold needs the whole log. Holds idle past ``max_age`` are abandoned first."""
        now = self._clock()
        for hold in self._holds:
            if not hold.abandoned and now - hold.moved_at > self._max_age:
                hold.abandoned = True
                self._log.warning("reader abandoned: it read nothing for too long", position=str(hold.position),
                                  idle_seconds=round(now - hold.moved_at, 1))
        live = [h for h in self._holds if not h.abandoned]
        self._holds = live
        if any(h.position is None for h in live):
            return None
        return min([upto, *(h.position for h in live if h.position is not None)])

    def __len__(self) -> int:
        return len(self._holds)
