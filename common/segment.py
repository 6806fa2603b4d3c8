"""Segment metadata (as the data coordinator stores it and flushers and query nodes see it) and its legal transitions.

States (milvus-proto numbers), which only move forward:

    GROWING --Flush consumed--> SEALED --final sync starts--> FLUSHING --SaveBinlogPaths(flushed)--> FLUSHED
    any --collection dropped / empty at flush--> DROPPED

Skips forward are legal (a flusher that crashed may report FLUSHED for a
segment it never reported SEALED). A step backwards, or anything after
DROPPED, is not applied: replays after a crash repeat old reports, and they
must change nothing (``next_state`` returns None).

Segments written by an offline job (compaction outputs, imported segments) are
recorded FLUSHED with ``job_id`` set before the job commits: they stay hidden
from readers until the job's record says COMMITTED (``coordinator/data/jobs.py``),
so one etcd write makes all of them visible at once. ``compacted`` marks an
input a compaction replaced (DROPPED); ``deleted_rows`` counts rows of the
segment that its delta logs delete (L0 compaction writes them).
"""

from __future__ import annotations

import enum
import json
from dataclasses import asdict, dataclass, replace
from typing import Any

from common.position import Position


class SegmentState(enum.IntEnum):
    GROWING = 2
    SEALED = 3
    FLUSHED = 4
    FLUSHING = 5
    DROPPED = 6

    @property
    def rank(self) -> int:
        """Lifecycle order (the enum values follow Milvus, not the order)."""
        return _RANK[self]


_RANK = {
    SegmentState.GROWING: 0,
    SegmentState.SEALED: 1,
    SegmentState.FLUSHING: 2,
    SegmentState.FLUSHED: 3,
    SegmentState.DROPPED: 4,
}


class SegmentLevel(enum.IntEnum):
    """A segment's level, with milvus-proto's numbers; segment manifests name it ("L0", "L1")."""

    L0 = 1  # deletes only (delta logs, no rows)
    L1 = 2  # rows (and maybe deletes)


def next_state(current: SegmentState, wanted: SegmentState) -> SegmentState | None:
    """The state to store when ``wanted`` is reported in ``current``; None: ignore the report.

    >>> next_state(SegmentState.GROWING, SegmentState.FLUSHED)
    <SegmentState.FLUSHED: 4>
    >>> next_state(SegmentState.FLUSHED, SegmentState.SEALED) is None
    True
    """
    if current == SegmentState.DROPPED:
        return None
    if wanted.rank <= current.rank:
        return None
    return wanted


@dataclass(frozen=True, slots=True, kw_only=True)
class SegmentMeta:
    segment_id: int
    collection_id: int
    partition_id: int
    vchannel: str
    state: SegmentState
    level: SegmentLevel = SegmentLevel.L1
    rows: int = 0
    manifest: str = ""  # path of the newest manifest in object storage; "" before the first sync
    start_position: Position | None = None
    position: Position | None = None  # everything of the segment up to here is in the manifest's files
    dropped_at: float = 0.0  # wall-clock seconds when it became DROPPED (garbage collection)
    job_id: int = 0  # written by this offline job: hidden until the job committed (0: by a flusher)
    compacted: bool = False  # DROPPED because a compaction replaced it
    deleted_rows: int = 0  # rows its own delta logs delete (set by L0 compaction)
    flushed_at: float = 0.0  # wall-clock seconds when it became FLUSHED (compaction waits for it to settle)

    @property
    def is_live(self) -> bool:
        return self.state != SegmentState.DROPPED

    def moved_to(self, state: SegmentState, *, now: float) -> SegmentMeta | None:
        """This segment in ``state``, or None if the transition is not applied (see module doc)."""
        nxt = next_state(self.state, state)
        if nxt is None:
            return None
        return replace(
            self,
            state=nxt,
            dropped_at=now if nxt == SegmentState.DROPPED else self.dropped_at,
            flushed_at=now if nxt == SegmentState.FLUSHED else self.flushed_at,
        )

    def to_json(self) -> bytes:
        d: dict[str, Any] = asdict(self)
        d["state"] = int(self.state)
        d["level"] = int(self.level)
        d["start_position"] = None if self.start_position is None else self.start_position.to_dict()
        d["position"] = None if self.position is None else self.position.to_dict()
        return json.dumps(d).encode()

    @staticmethod
    def from_json(raw: bytes) -> SegmentMeta:
        d = json.loads(raw)
        d["state"] = SegmentState(d["state"])
        d["level"] = SegmentLevel(d["level"])
        for key in ("start_position", "position"):
            d[key] = None if d[key] is None else Position.from_dict(d[key])
        return SegmentMeta(**d)
