"""The caller's half of the shard protocol, appending to a list instead of a WAL.

``LogWriter`` does what the WAL writer must do with a ``ShardManager``:
self-generated messages go before the message that caused them (Flush of the
sealed segment, then CreateSegment, then the Insert), every seal instruction
becomes a Flush, and ``now_ms`` is the timetick of the message being appended.
``replay`` rebuilds a manager from the log the way the WAL does on open.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from common.message import (
    CreateCollection,
    CreateSegment,
    DropCollection,
    DropPartition,
    Insert,
    ManualFlush,
    TypedMessage,
    decode,
)
from common.schema import CollectionSchema, DataType, FieldSchema
from protos.common_pb2 import Message, MessageType
from streamingnode.shard import InsertPlan, SealInstruction, SealPolicy, ShardManager, ShardSnapshot

_SCHEMA = CollectionSchema(
    name="c", fields=(FieldSchema(field_id=100, name="id", dtype=DataType.INT64, is_primary=True),)
)


@dataclass(frozen=True, slots=True)
class Entry:
    message: TypedMessage  # as a reader of the WAL decodes it
    timetick_ms: int

    @property
    def type(self) -> MessageType:
        return self.message.TYPE


def entry(message: TypedMessage, timetick_ms: int) -> Entry:
    """``message`` as a replay reads it back from the WAL."""
    return Entry(decode(message.encode()), timetick_ms)


def old_entry(kind: MessageType, vchannel: str, header: dict[str, Any], timetick_ms: int) -> Entry:
    """A message as a WAL written by an older version holds it: the JSON header written by hand."""
    return Entry(decode(Message(type=kind, vchannel=vchannel, header=json.dumps(header).encode())), timetick_ms)


def created(collection_id: int, vchannel: str) -> CreateCollection:
    return CreateCollection(vchannel=vchannel, collection_id=collection_id, schema=_SCHEMA)


@dataclass
class LogWriter:
    policy: SealPolicy
    now_ms: int = 1_000
    next_segment_id: int = 100
    log: list[Entry] = field(default_factory=list)
    manager: ShardManager = field(init=False)

    def __post_init__(self) -> None:
        self.manager = ShardManager(self.policy)

    def append(self, message: TypedMessage) -> None:
        self.log.append(entry(message, self.now_ms))

    def flush(self, seals: Iterable[SealInstruction]) -> None:
        for seal in seals:
            self.append(seal.flush())
            self.manager.segment_flushed(seal.segment_id)

    def create_collection(self, collection_id: int, vchannels: Sequence[str]) -> None:
        for v in vchannels:
            self.manager.collection_created(collection_id, [v])
            self.append(created(collection_id, v))

    def drop_collection(self, collection_id: int, vchannel: str) -> list[SealInstruction]:
        seals = self.manager.collection_dropped(collection_id, vchannel)
        self.flush(seals)
        self.append(DropCollection(vchannel=vchannel, collection_id=collection_id))
        return seals

    def drop_partition(self, collection_id: int, partition_id: int, vchannel: str) -> list[SealInstruction]:
        seals = self.manager.partition_dropped(collection_id, partition_id, vchannel)
        self.flush(seals)
        self.append(DropPartition(vchannel=vchannel, collection_id=collection_id, partition_id=partition_id))
        return seals

    def manual_flush(self, collection_id: int, vchannel: str, flush_ts: int) -> list[SealInstruction]:
        seals = self.manager.manual_flush(collection_id, flush_ts, vchannel)
        self.flush(seals)
        asked = ManualFlush(vchannel=vchannel, collection_id=collection_id, flush_ts=flush_ts)
        self.append(asked.sealed([s.segment_id for s in seals]))
        return seals

    def insert(self, vchannel: str, collection_id: int, partition_id: int, rows: int, nbytes: int) -> int:
        """Appends an Insert (and what it needs before it); returns its segment id."""

        def plan() -> InsertPlan:
            return self.manager.plan_insert(
                vchannel=vchannel,
                collection_id=collection_id,
                partition_id=partition_id,
                rows=rows,
                bytes=nbytes,
                now_ms=self.now_ms,
            )

        p = plan()
        if p.seal is not None:
            self.flush([p.seal])
        if p.needs_new_segment:
            sid = self.next_segment_id
            self.next_segment_id += 1
            self.append(
                CreateSegment(vchannel=vchannel, collection_id=collection_id, partition_id=partition_id, segment_id=sid)
            )
            self.manager.segment_created(sid, collection_id, partition_id, vchannel, self.now_ms)
            p = plan()
            assert p.segment_id == sid, "the fresh segment takes the insert"
        assert p.segment_id is not None
        ins = Insert(vchannel=vchannel, collection_id=collection_id, partition_id=partition_id, rows=rows, ipc=b"")
        self.append(replace(ins, segment_id=p.segment_id, nbytes=nbytes))  # no body: the size is given
        self.manager.commit_insert(p.segment_id, rows, nbytes, self.now_ms)
        return p.segment_id

    def tick(self, advance_ms: int = 0) -> list[SealInstruction]:
        self.now_ms += advance_ms
        seals = self.manager.tick(self.now_ms)
        self.flush(seals)
        return seals


def replay(policy: SealPolicy, log: Iterable[Entry], start: ShardSnapshot | None = None) -> ShardManager:
    """A manager rebuilt from ``log`` (after ``start``, if given)."""
    m = ShardManager(policy) if start is None else ShardManager.from_snapshot(start, policy)
    for e in log:
        m.observe(e.message, e.timetick_ms)
    return m
