"""What the query nodes report of their delegators and workers (``GetDataDistribution``), as the query
coordinator keeps it: each delegator's state (``ChannelState``) with its segments' failed loads
(``SegmentFailure``), a node's distribution (``NodeDist``), and the view of a collection's channels
read from them (``ChannelView``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from common.errors import ErrorCode
from protos import querynode_pb2

# A segment that failed to load this many times in a row (0 + 1 + 2 s of backoff) holds up its load
# with an error (load_collection fails with it, reads fail at once) instead of a longer wait.
PERSISTENT_AFTER_ATTEMPTS = 3
# Load failures of a worker that is gone or not serving: the checker places the segment again.
TRANSIENT_LOAD_ERRORS = frozenset(
    {ErrorCode.UNAVAILABLE, ErrorCode.NODE_NOT_FOUND, ErrorCode.NOT_READY, ErrorCode.SEGMENT_NOT_FOUND}
)


@dataclass(frozen=True, slots=True)
class ChannelState:
    """What a query node reports about one delegator."""

    tsafe: int
    sealed: frozenset[int]
    serviceable: bool  # its initial segments are loaded: it takes SyncDistribution
    replica_id: int = 0
    offline: frozenset[int] = frozenset()  # segments to load again before it can serve
    # segment -> its last failed load, for segments that have not loaded since
    failures: Mapping[int, SegmentFailure] = field(default_factory=dict)

    @property
    def ready_to_read(self) -> bool:
        return self.serviceable and not self.offline

    @property
    def load_error(self) -> str:
        """Why it cannot serve, when an offline segment keeps failing to load for a reason that
        placing it elsewhere does not fix (not a lost worker: the checker moves those)."""
        for sid in sorted(self.offline):
            f = self.failures.get(sid)
            if f is not None and f.persistent:
                return f.reason
        return ""


@dataclass(frozen=True, slots=True)
class SegmentFailure:
    """A delegator's report of a segment's failed loads."""

    code: int
    attempts: int
    reason: str

    @property
    def persistent(self) -> bool:
        """Failed often enough, and not for a lost worker, to be reported rather than waited out."""
        return self.attempts >= PERSISTENT_AFTER_ATTEMPTS and self.code not in TRANSIENT_LOAD_ERRORS


@dataclass(slots=True)
class NodeDist:
    channels: dict[str, ChannelState] = field(default_factory=dict)
    segments: dict[tuple[int, int], int] = field(default_factory=dict)  # (collection, segment) -> rows
    # (collection, segment) -> the vector indexes in place on the worker
    indexes: dict[tuple[int, int], tuple[int, ...]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ChannelView:
    vchannel: str
    pchannel: str
    node_id: int
    address: str
    ready: bool
    replica_id: int = 1
    load_error: str = ""


def node_dist(resp: querynode_pb2.GetDataDistributionResponse) -> NodeDist:
    """A query node's ``GetDataDistribution`` answer as the coordinator keeps it."""
    return NodeDist(
        channels={
            c.vchannel: ChannelState(
                c.tsafe,
                frozenset(c.sealed_segments),
                c.serviceable,
                c.replica_id,
                frozenset(c.offline_segments),
                {f.segment_id: SegmentFailure(f.code, f.attempts, f.reason) for f in c.load_failures},
            )
            for c in resp.channels
        },
        segments={(s.collection_id, s.segment_id): s.rows for s in resp.segments},
        indexes={(s.collection_id, s.segment_id): tuple(s.index_ids) for s in resp.segments},
    )
