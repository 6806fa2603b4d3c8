"""One growing segment as the shard manager sees it: identity, size, times, state.

Values are immutable; the manager replaces a segment's value on every change,
so a snapshot is a cheap copy of references and two snapshots compare with ``==``.

States (only forward):

* ``GROWING``: receives inserts;
* ``GROWING -> SEALED``: a seal decision was made (a ``SealInstruction`` was
  handed to the caller); it takes no new inserts and the caller owes a Flush;
* ``SEALED -> (forgotten)`` / ``GROWING -> (forgotten)``: a Flush of it was
  appended (``segment_flushed``); the flusher owns it from then on.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace

from streamingnode.shard.policy import SealReason


class SegmentState(enum.Enum):
    GROWING = "growing"
    SEALED = "sealed"


# (vchannel, collection_id, partition_id): inserts with the same key share a segment.
SegmentKey = tuple[str, int, int]


@dataclass(frozen=True, slots=True, kw_only=True)
class GrowingSegment:
    """A segment created on this pchannel and not yet flushed.

    ``rows``/``bytes`` count persisted inserts (``commit_insert`` or a replayed
    Insert). ``pending_rows``/``pending_bytes`` count inserts assigned by
    ``plan_insert`` whose append has not been confirmed yet; they are always 0
    after a replay. Times are milliseconds (the physical part of the hybrid
    timetick of the CreateSegment message and of the last Insert).
    """

    segment_id: int
    collection_id: int
    partition_id: int
    vchannel: str
    rows: int = 0
    bytes: int = 0
    created_ms: int
    last_write_ms: int
    state: SegmentState = SegmentState.GROWING
    seal_reason: SealReason | None = None
    pending_rows: int = 0
    pending_bytes: int = 0

    @property
    def key(self) -> SegmentKey:
        return (self.vchannel, self.collection_id, self.partition_id)

    @property
    def total_rows(self) -> int:
        """Persisted plus in-flight rows: what the caps are checked against."""
        return self.rows + self.pending_rows

    @property
    def total_bytes(self) -> int:
        return self.bytes + self.pending_bytes

    @property
    def is_empty(self) -> bool:
        """No insert persisted or in flight: any insert fits, however large."""
        return self.total_rows == 0 and self.total_bytes == 0

    @property
    def is_growing(self) -> bool:
        return self.state is SegmentState.GROWING

    def reserved(self, rows: int, nbytes: int) -> GrowingSegment:
        return replace(self, pending_rows=self.pending_rows + rows, pending_bytes=self.pending_bytes + nbytes)

    def released(self, rows: int, nbytes: int) -> GrowingSegment:
        """Drops a reservation (never below zero: a replayed segment has none)."""
        return replace(
            self,
            pending_rows=max(0, self.pending_rows - rows),
            pending_bytes=max(0, self.pending_bytes - nbytes),
        )

    def committed(self, rows: int, nbytes: int, now_ms: int) -> GrowingSegment:
        """Counts a persisted insert at ``now_ms`` (time never goes back)."""
        return replace(
            self,
            rows=self.rows + rows,
            bytes=self.bytes + nbytes,
            last_write_ms=max(self.last_write_ms, now_ms),
        )

    def sealed(self, reason: SealReason) -> GrowingSegment:
        return replace(self, state=SegmentState.SEALED, seal_reason=reason)
