"""Segment assignment and seal decisions of one pchannel (the WAL's shard interceptor, no I/O)."""

from streamingnode.shard.instructions import InsertPlan, SealInstruction
from streamingnode.shard.manager import CollectionShard, ShardManager, ShardSnapshot
from streamingnode.shard.policy import SealPolicy, SealReason
from streamingnode.shard.segments import GrowingSegment, SegmentState

__all__ = [
    "CollectionShard",
    "GrowingSegment",
    "InsertPlan",
    "SealInstruction",
    "SealPolicy",
    "SealReason",
    "SegmentState",
    "ShardManager",
    "ShardSnapshot",
]
