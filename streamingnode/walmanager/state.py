"""The ``(term, available)`` state of one pchannel, its order, and the worker's next step.

Everything here is pure: no I/O, no tasks. ``lifetime.py`` feeds states in and
performs the :class:`Step` that :func:`next_step` returns.

Order (ARCHITECTURE §4.3): a lower term comes first; within one term the
available state comes before the unavailable one. A state only ever moves to a
later one. Examples:

* ``(1, T) -> (1, F)``: legal (term 1 is closed or removed);
* ``(1, F) -> (2, T)``: legal (term 2 is opened);
* ``(1, T) -> (2, F)``: legal (removed at a newer term);
* ``(1, F) -> (1, T)``: never (a term, once given up, is not reopened);
* ``(2, T) -> (1, T)``: never (terms do not go back).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


@dataclass(frozen=True, slots=True)
class WALState:
    """Where a pchannel is (current) or should be (expected).

    ``error`` is set only on a current state that records a failed open:
    ``(term, False, "why")``. It takes no part in the order.
    """

    term: int
    available: bool
    error: str | None = None

    def order_key(self) -> tuple[int, int]:
        """The state as a tuple that sorts in state order."""
        return (self.term, 0 if self.available else 1)

    def before(self, other: WALState) -> bool:
        """True if ``self`` is strictly earlier than ``other``."""
        return self.order_key() < other.order_key()

    def same_position(self, other: WALState) -> bool:
        """True if neither state is before the other (errors are ignored)."""
        return self.order_key() == other.order_key()

    def __str__(self) -> str:
        flag = "T" if self.available else "F"
        suffix = f", {self.error}" if self.error is not None else ""
        return f"({self.term}, {flag}{suffix})"


INITIAL = WALState(-1, False)
"""Both states of a new lifetime: nothing was ever asked for nor opened."""


class Step(Enum):
    """What the worker does next, one step at a time."""

    WAIT = "wait"  # current has reached expected: nothing to do
    CLOSE = "close"  # close the open WAL, publish (current term, False)
    MARK_REMOVED = "mark-removed"  # no WAL open and expected is unavailable: publish (expected term, False)
    OPEN = "open"  # no WAL open and expected is available: open it, publish the outcome


def next_step(current: WALState, expected: WALState, *, wal_open: bool) -> Step:
    """The one step that brings ``current`` closer to ``expected``.

    ``wal_open`` says whether a WAL is open; that is exactly when ``current``
    is available. A WAL is always closed before another step, so a change of
    term never has two WALs open, and the expected state is read again after
    each close (a newer request replaces an older one that was not started).
    """
    if not current.before(expected):
        return Step.WAIT
    if wal_open:
        return Step.CLOSE
    if not expected.available:
        return Step.MARK_REMOVED
    return Step.OPEN
