"""The shard interceptor: the WAL writer's side of segment assignment.

Before a pending append is stamped, ``expand`` asks the ``ShardManager``
(pure decisions, ``streamingnode/shard``) what it implies and returns the
messages to write, in order: Flush of every segment the decision sealed, then
CreateSegment for a new segment (id from the coordinator), then the caller's
own messages with Insert headers carrying their ``segment_id``. Reservations
made while planning are committed once the batch is persisted
(``committed``) or released if it failed (``aborted``). ``tick`` turns the
lifetime/idle policies into Flush messages; ``observe`` replays the log on open.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import assert_never

from common.errors import StrataError
from common.message import (
    CreateCollection,
    CreateSegment,
    Delete,
    DropCollection,
    DropPartition,
    Flush,
    Insert,
    ManualFlush,
    SchemaChange,
    TimeTick,
    TypedMessage,
    decode,
)
from protos.common_pb2 import Message
from streamingnode.shard import InsertPlan, SealInstruction, ShardManager
from streamingnode.wal.ids import IDSource


@dataclass(slots=True)
class Expansion:
    """What one pending append turns into."""

    pre: list[Message] = field(default_factory=list)  # self-generated, each its own timetick
    own: list[Message] = field(default_factory=list)  # the caller's messages, headers stamped
    inserts: list[tuple[int, int, int]] = field(default_factory=list)  # (segment, rows, bytes) reserved
    flushed: list[int] = field(default_factory=list)
    created: list[int] = field(default_factory=list)  # segments whose CreateSegment is in ``pre``


def _restamped(msg: Message, typed: Insert | ManualFlush) -> Message:
    """``msg`` with the header of ``typed``, in place: the WAL owns the messages it appends (and an
    Insert's body is not copied)."""
    msg.header = typed.header()
    return msg


class ShardInterceptor:
    def __init__(self, manager: ShardManager, ids: IDSource) -> None:
        self.manager = manager
        self._ids = ids

    def observe(self, msg: TypedMessage, timetick_ms: int) -> None:
        self.manager.observe(msg, timetick_ms)

    def _seal(self, ex: Expansion, seals: Sequence[SealInstruction]) -> None:
        for seal in seals:
            ex.pre.append(seal.flush().encode())
            ex.flushed.append(seal.segment_id)

    async def expand(self, messages: Sequence[Message], now_ms: int) -> Expansion:
        """Plan ``messages``; on a refusal (a malformed message, an unknown collection) nothing stays
        reserved and no segment created for them stays open.

        Every message is decoded before any is planned: a malformed one refuses the append first.
        """
        typed = [decode(msg) for msg in messages]
        ex = Expansion()
        try:
            for msg, one in zip(messages, typed, strict=True):
                ex.own.append(await self._one(msg, one, now_ms, ex))
        except BaseException:
            self.aborted(ex)
            # Nothing of this append is written: a segment created for it has no CreateSegment in the
            # log, so it must not take the next insert (the flusher would not know its segment).
            for sid in ex.created:
                self.manager.segment_abandoned(sid)
            raise
        return ex

    async def _one(self, msg: Message, typed: TypedMessage, now_ms: int, ex: Expansion) -> Message:
        m = self.manager
        match typed:
            case CreateCollection(collection_id=cid, vchannel=v):
                m.collection_created(cid, [v])
            case DropCollection(collection_id=cid, vchannel=v):
                self._seal(ex, m.collection_dropped(cid, v))
            case DropPartition(collection_id=cid, partition_id=pid, vchannel=v):
                self._seal(ex, m.partition_dropped(cid, pid, v))
            case Delete(collection_id=cid, vchannel=v):
                m.check_collection(cid, v)
            case SchemaChange(collection_id=cid, vchannel=v):
                self._seal(ex, m.schema_changed(cid, v))
            case ManualFlush(collection_id=cid, flush_ts=flush_ts, vchannel=v):
                seals = m.manual_flush(cid, flush_ts, v)
                self._seal(ex, seals)
                return _restamped(msg, typed.sealed([s.segment_id for s in seals]))
            case Insert():
                return _restamped(msg, await self._insert(typed, now_ms, ex))
            case CreateSegment() | Flush() | TimeTick():
                pass  # the WAL's own messages: a caller's copy is written as it is
            case _:
                assert_never(typed)
        return msg

    async def _insert(self, ins: Insert, now_ms: int, ex: Expansion) -> Insert:
        """``ins`` assigned to a segment; the Flush and CreateSegment that takes go to ``ex.pre``."""

        def plan() -> InsertPlan:
            return self.manager.plan_insert(
                vchannel=ins.vchannel,
                collection_id=ins.collection_id,
                partition_id=ins.partition_id,
                rows=ins.rows,
                bytes=len(ins.ipc),
                now_ms=now_ms,
            )

        p = plan()
        if p.seal is not None:
            self._seal(ex, [p.seal])
        if p.needs_new_segment:
            sid = await self._ids.allocate(1)
            created = CreateSegment(
                vchannel=ins.vchannel, collection_id=ins.collection_id, partition_id=ins.partition_id, segment_id=sid
            )
            ex.pre.append(created.encode())
            self.manager.segment_created(sid, ins.collection_id, ins.partition_id, ins.vchannel, now_ms)
            ex.created.append(sid)
            p = plan()
        if p.segment_id is None:
            raise StrataError(f"no segment for an insert into {ins.vchannel}")
        ex.inserts.append((p.segment_id, ins.rows, len(ins.ipc)))
        return ins.assigned(p.segment_id)

    def committed(self, ex: Expansion, now_ms: int) -> None:
        for sid, rows, nbytes in ex.inserts:
            self.manager.commit_insert(sid, rows, nbytes, now_ms)
        for sid in ex.flushed:
            self.manager.segment_flushed(sid)

    def aborted(self, ex: Expansion) -> None:
        for sid, rows, nbytes in ex.inserts:
            self.manager.abort_insert(sid, rows, nbytes)
        ex.inserts.clear()

    def tick(self, now_ms: int) -> Expansion:
        """Flushes owed by the lifetime/idle policies (and by seals whose Flush is not yet written)."""
        ex = Expansion()
        seen: set[int] = set()
        for seal in [*self.manager.pending_seals(), *self.manager.tick(now_ms)]:
            if seal.segment_id not in seen:
                seen.add(seal.segment_id)
                self._seal(ex, [seal])
        return ex
