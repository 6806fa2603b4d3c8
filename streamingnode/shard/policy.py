"""When a growing segment is sealed: the limits and the reasons.

Defaults, next to Milvus 2.6's (``dataCoord.segment.*``):

| field | Strata | Milvus | why Strata differs |
|---|---|---|---|
| ``max_rows`` | 1,000,000 | derived: max size / estimated row size | a fixed cap is simpler and bounds a growing segment's Arrow tables |
| ``max_bytes`` | 128 MiB | ``maxSize`` 1024 MB x ``sealProportion`` 0.12 (~123 MB, jittered) | about Milvus's: the WAL is kept from the oldest growing segment on, so this bounds it; compaction merges small ones |
| ``max_lifetime_ms`` | 10 min | ``maxLife`` 24 h | a vchannel's checkpoint (and WAL truncation) waits for its oldest growing segment to be flushed; 10 min bounds that |
| ``max_idle_ms`` | 2 min | ``maxIdleTime`` 10 min, only if >= ``minSizeFromIdleToSealed`` 16 MB | data that stops arriving reaches object storage soon; Strata seals idle segments of any size |
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING

from common.errors import InvalidArgument

if TYPE_CHECKING:
    from streamingnode.shard.segments import GrowingSegment

MiB = 1024 * 1024
MINUTE_MS = 60_000


class SealReason(enum.Enum):
    """Why a segment was sealed (carried by a ``SealInstruction``)."""

    ROWS = "rows"  # the row cap: full, or the next insert would pass it
    BYTES = "bytes"  # the byte cap: full, or the next insert would pass it
    LIFETIME = "lifetime"  # growing for max_lifetime_ms since its CreateSegment
    IDLE = "idle"  # no insert for max_idle_ms
    MANUAL_FLUSH = "manual_flush"  # a ManualFlush of its collection
    COLLECTION_DROPPED = "collection_dropped"
    PARTITION_DROPPED = "partition_dropped"
    SCHEMA_CHANGE = "schema_change"  # its collection's schema changed: later rows go to segments of the new one
    APPEND_FAILED = "append_failed"  # the append carrying its CreateSegment failed: it may not be in the log


@dataclass(frozen=True, slots=True, kw_only=True)
class SealPolicy:
    """Limits of one growing segment; any limit reached seals it.

    Args:
        max_rows: rows a segment may hold. An insert that would pass it goes to
            a new segment; a single insert larger than this still goes, whole,
            into one fresh segment (inserts are never split).
        max_bytes: same, for the inserts' byte sizes as reported by the caller.
        max_lifetime_ms: a segment is sealed this long after its CreateSegment.
        max_idle_ms: a segment is sealed when no insert reached it for this long
            (measured from its last insert, or its creation if it has none).
    """

    max_rows: int = 1_000_000
    max_bytes: int = 128 * MiB
    max_lifetime_ms: int = 10 * MINUTE_MS
    max_idle_ms: int = 2 * MINUTE_MS

    def validate(self) -> None:
        for name in ("max_rows", "max_bytes", "max_lifetime_ms", "max_idle_ms"):
            value = getattr(self, name)
            if not isinstance(value, int) or value <= 0:
                raise InvalidArgument(f"seal policy {name} must be a positive integer, got {value!r}")

    def reason_to_seal(self, seg: GrowingSegment, now_ms: int) -> SealReason | None:
        """Why ``seg`` must be sealed now, on its own (``tick``); None if it may keep growing.

        In order: full (rows, then bytes, in-flight inserts included), lifetime,
        idle (only when no insert is in flight).
        """
        if seg.total_rows >= self.max_rows:
            return SealReason.ROWS
        if seg.total_bytes >= self.max_bytes:
            return SealReason.BYTES
        return self._time_reason(seg, now_ms)

    def reason_to_roll_over(self, seg: GrowingSegment, rows: int, nbytes: int, now_ms: int) -> SealReason | None:
        """Why an insert of ``rows``/``nbytes`` must not go into ``seg`` but into a new segment.

        In order: the insert would pass the row cap, the byte cap, then the time
        limits of ``reason_to_seal``. An empty segment takes any insert, however
        large, so an oversized insert lands whole in one fresh segment.
        """
        if not seg.is_empty:
            if seg.total_rows + rows > self.max_rows:
                return SealReason.ROWS
            if seg.total_bytes + nbytes > self.max_bytes:
                return SealReason.BYTES
        return self._time_reason(seg, now_ms)

    def _time_reason(self, seg: GrowingSegment, now_ms: int) -> SealReason | None:
        if now_ms - seg.created_ms >= self.max_lifetime_ms:
            return SealReason.LIFETIME
        if seg.pending_rows == 0 and now_ms - seg.last_write_ms >= self.max_idle_ms:
            return SealReason.IDLE
        return None
