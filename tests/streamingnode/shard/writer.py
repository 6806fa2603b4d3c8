"""The caller's half of the shard protocol, appending to a list instead of a WAL.

``LogWriter`` does what the WAL writer must do with a ``ShardManager``:
self-generated messages go before the message that caused them (Flush of the
sealed segment, then CreateSegment, then the Insert), every seal instruction
becomes a Flush, and ``now_ms`` is the timetick of the message being appended.
``replay`` rebuilds a manager from the log the way the WAL does on open.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from protos.common_pb2 import MessageType
from streamingnode.shard import SealInstruction, SealPolicy, ShardManager, ShardSnapshot
from streamingnode.shard.headers import assign_insert, create_segment_header, flush_header, manual_flush_header


@dataclass(frozen=True, slots=True)
class Entry:
    type: int
    vchannel: str
    header: dict[str, Any]
    timetick_ms: int


@dataclass
class LogWriter:
    policy: SealPolicy
    now_ms: int = 1_000
    next_segment_id: int = 100
    log: list[Entry] = field(default_factory=list)
    manager: ShardManager = field(init=False)

    def __post_init__(self) -> None:
        self.manager = ShardManager(self.policy)

    def append(self, kind: int, vchannel: str, header: dict[str, Any]) -> None:
        self.log.append(Entry(kind, vchannel, dict(header), self.now_ms))

    def flush(self, seals: Iterable[SealInstruction]) -> None:
        for seal in seals:
            self.append(MessageType.FLUSH, seal.vchannel, flush_header(seal))
            self.manager.segment_flushed(seal.segment_id)

    def create_collection(self, collection_id: int, vchannels: Sequence[str]) -> None:
        for v in vchannels:
            self.manager.collection_created(collection_id, [v])
            self.append(MessageType.CREATE_COLLECTION, v, {"collection_id": collection_id})

    def drop_collection(self, collection_id: int, vchannel: str) -> list[SealInstruction]:
        seals = self.manager.collection_dropped(collection_id, vchannel)
        self.flush(seals)
        self.append(MessageType.DROP_COLLECTION, vchannel, {"collection_id": collection_id})
        return seals

    def drop_partition(self, collection_id: int, partition_id: int, vchannel: str) -> list[SealInstruction]:
        seals = self.manager.partition_dropped(collection_id, partition_id, vchannel)
        self.flush(seals)
        self.append(
            MessageType.DROP_PARTITION, vchannel, {"collection_id": collection_id, "partition_id": partition_id}
        )
        return seals

    def manual_flush(self, collection_id: int, vchannel: str, flush_ts: int) -> list[SealInstruction]:
        seals = self.manager.manual_flush(collection_id, flush_ts, vchannel)
        self.flush(seals)
        head = manual_flush_header(
            collection_id=collection_id, flush_ts=flush_ts, segment_ids=[s.segment_id for s in seals]
        )
        self.append(MessageType.MANUAL_FLUSH, vchannel, head)
        return seals

    def insert(self, vchannel: str, collection_id: int, partition_id: int, rows: int, nbytes: int) -> int:
        """Appends an Insert (and what it needs before it); returns its segment id."""
        args: dict[str, Any] = {
            "vchannel": vchannel,
            "collection_id": collection_id,
            "partition_id": partition_id,
            "rows": rows,
            "bytes": nbytes,
            "now_ms": self.now_ms,
        }
        plan = self.manager.plan_insert(**args)
        if plan.seal is not None:
            self.flush([plan.seal])
        if plan.needs_new_segment:
            sid = self.next_segment_id
            self.next_segment_id += 1
            head = create_segment_header(segment_id=sid, collection_id=collection_id, partition_id=partition_id)
            self.append(MessageType.CREATE_SEGMENT, vchannel, head)
            self.manager.segment_created(sid, collection_id, partition_id, vchannel, self.now_ms)
            plan = self.manager.plan_insert(**args)
            assert plan.segment_id == sid, "the fresh segment takes the insert"
        assert plan.segment_id is not None
        base = {"collection_id": collection_id, "partition_id": partition_id, "rows": rows}
        self.append(MessageType.INSERT, vchannel, assign_insert(base, segment_id=plan.segment_id, nbytes=nbytes))
        self.manager.commit_insert(plan.segment_id, rows, nbytes, self.now_ms)
        return plan.segment_id

    def tick(self, advance_ms: int = 0) -> list[SealInstruction]:
        self.now_ms += advance_ms
        seals = self.manager.tick(self.now_ms)
        self.flush(seals)
        return seals


def replay(policy: SealPolicy, log: Iterable[Entry], start: ShardSnapshot | None = None) -> ShardManager:
    """A manager rebuilt from ``log`` (after ``start``, if given)."""
    m = ShardManager(policy) if start is None else ShardManager.from_snapshot(start, policy)
    for e in log:
        m.observe(e.type, e.vchannel, e.header, e.timetick_ms)
    return m
