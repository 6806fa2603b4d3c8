"""Records of offline jobs in etcd: compaction plans and imports (``datacoord/job/<id>``).

A job record is the unit of visibility of what a Spark job wrote. Its segments
are recorded FLUSHED with ``SegmentMeta.job_id`` = the job's id and stay hidden
while the record is not COMMITTED; the commit is one etcd transaction that
writes the record COMMITTED (and drops a compaction's inputs), so every output
appears, and every input disappears, at once.

States only move forward::

    PENDING --submitted--> RUNNING --outputs recorded, one txn--> COMMITTED
    PENDING / RUNNING --error, conflict, coordinator restart (compaction)--> FAILED

An import that was PENDING or RUNNING when the coordinator stopped runs again
(same timestamp, same ids: it rewrites the same files); a compaction plan fails
and the next round plans again. A compaction *request* (what pymilvus'
``compact()`` returns) groups the plans it started: ``datacoord/compaction/<id>``.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields, replace
from enum import StrEnum
from typing import Any


class JobKind(StrEnum):
    MIX = "MIX"  # merge segments, drop deleted and expired rows
    L0 = "L0"  # fold L0 deletes into segments as delta logs
    IMPORT = "IMPORT"


class JobState(StrEnum):
    PENDING = "PENDING"
    RUNNING = "RUNNING"
    COMMITTED = "COMMITTED"
    FAILED = "FAILED"

    @property
    def finished(self) -> bool:
        return self in (JobState.COMMITTED, JobState.FAILED)


_ORDER = {JobState.PENDING: 0, JobState.RUNNING: 1, JobState.COMMITTED: 2, JobState.FAILED: 2}


def can_move(current: JobState, wanted: JobState) -> bool:
    """Forward only; a finished job never changes.

    >>> can_move(JobState.PENDING, JobState.COMMITTED), can_move(JobState.FAILED, JobState.RUNNING)
    (True, False)
    """
    return not current.finished and _ORDER[wanted] > _ORDER[current]


@dataclass(frozen=True, slots=True, kw_only=True)
class JobRecord:
    job_id: int
    kind: JobKind
    collection_id: int
    state: JobState = JobState.PENDING
    created_at: float = 0.0
    finished_at: float = 0.0
    error: str = ""
    # Compaction plans.
    request_id: int = 0
    vchannel: str = ""
    partition_id: int = 0
    inputs: tuple[int, ...] = ()  # MIX: L1 segments merged; L0: L0 segments folded
    targets: tuple[int, ...] = ()  # L0: the L1 segments the deletes went into
    l0: tuple[int, ...] = ()  # MIX: L0 segments dropped with the inputs (their deletes are applied)
    outputs: tuple[int, ...] = ()  # segments written (MIX, IMPORT)
    # Ids the job may write segments under (garbage collection keeps their files while it runs).
    segment_id_base: int = 0
    segment_id_count: int = 0
    # Imports.
    files: tuple[str, ...] = ()
    partition_name: str = ""
    options: dict[str, str] = field(default_factory=dict)
    import_ts: int = 0
    auto_id_base: int = 0
    rows: int = 0
    progress: float = 0.0
    revealed: bool = False  # its segments' job_id was cleared after the commit

    def moved(self, state: JobState, *, now: float, **changes: Any) -> JobRecord:
        if not can_move(self.state, state):
            raise ValueError(f"job {self.job_id} cannot move from {self.state} to {state}")
        finished = now if state.finished else self.finished_at
        return replace(self, state=state, finished_at=finished, **changes)

    def reserves(self, segment_id: int) -> bool:
        return self.segment_id_base <= segment_id < self.segment_id_base + self.segment_id_count

    def to_json(self) -> bytes:
        d = asdict(self)
        d["kind"] = self.kind.value
        d["state"] = self.state.value
        return json.dumps(d).encode()

    @staticmethod
    def from_json(raw: bytes) -> JobRecord:
        d = json.loads(raw)
        names = {f.name for f in fields(JobRecord)}
        d = {k: v for k, v in d.items() if k in names}
        d["kind"] = JobKind(d["kind"])
        d["state"] = JobState(d["state"])
        for key in ("inputs", "targets", "l0", "outputs", "files"):
            d[key] = tuple(d.get(key, ()))
        return JobRecord(**d)


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionRequest:
    """One ``compact()`` call: the plans it started (L0 plans first, then mix plans)."""

    request_id: int
    collection_id: int
    created_at: float
    l0_only: bool = False
    target_bytes: int = 0
    phase: str = "L0"  # L0 -> MIX -> DONE
    job_ids: tuple[int, ...] = ()

    def to_json(self) -> bytes:
        return json.dumps(asdict(self)).encode()

    @staticmethod
    def from_json(raw: bytes) -> CompactionRequest:
        d = json.loads(raw)
        names = {f.name for f in fields(CompactionRequest)}
        d = {k: v for k, v in d.items() if k in names}
        d["job_ids"] = tuple(d.get("job_ids", ()))
        return CompactionRequest(**d)
