"""What the shard manager tells its caller to append."""

from __future__ import annotations

from dataclasses import dataclass

from common.message import Flush
from streamingnode.shard.policy import SealReason


@dataclass(frozen=True, slots=True, kw_only=True)
class SealInstruction:
    """Append a Flush message for this segment (``flush()``).

    The decision is already in effect when the caller receives it: the segment
    is SEALED and takes no new inserts. The Flush must come after every insert
    already assigned to the segment and, when the decision came from handling
    a message (an Insert, ManualFlush, DropCollection, DropPartition), before
    that message. Once appended, call ``ShardManager.segment_flushed``.
    """

    segment_id: int
    collection_id: int
    partition_id: int
    vchannel: str
    reason: SealReason

    def flush(self) -> Flush:
        """The Flush that carries this seal out (on ``vchannel``)."""
        return Flush(
            vchannel=self.vchannel,
            collection_id=self.collection_id,
            partition_id=self.partition_id,
            segment_id=self.segment_id,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class InsertPlan:
    """Where an insert goes.

    Exactly one of:

    * ``segment_id`` set: write the Insert with this ``segment_id``; its rows and
      bytes are reserved in that segment until ``commit_insert`` (appended) or
      ``abort_insert`` (the append failed);
    * ``needs_new_segment``: first append the Flush of ``seal`` (if any), then
      allocate an id, append a CreateSegment, call ``segment_created`` and plan
      again: the second plan always answers the fresh segment.
    """

    segment_id: int | None
    needs_new_segment: bool
    seal: SealInstruction | None = None

    def __post_init__(self) -> None:
        if (self.segment_id is None) != self.needs_new_segment:
            raise ValueError("an insert plan names a segment or asks for a new one, not both")
