"""The shard interceptor: the WAL writer's side of segment assignment, one link of its chain.

Before a pending append is stamped, ``expand`` asks the ``ShardManager``
(pure decisions, ``streamingnode/shard``) what it implies and returns the
messages to write, in order: Flush of every segment the decision sealed, then
CreateSegment for a new segment (id from the coordinator), then the caller's
own messages with Insert headers carrying their ``segment_id``. Reservations
made while planning are committed once the batch is persisted
(``committed``), released if it failed (``aborted``), and undone with the
segments created for it if a later link refused it (``refused``). ``tick``
turns the lifetime/idle policies into Flush messages; ``replayed`` replays the
log on open. The protocol is ``interceptors.Interceptor``.
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
)
from streamingnode.shard import InsertPlan, SealInstruction, ShardManager
from streamingnode.wal.ids import IDSource
from streamingnode.wal.interceptors import Expansion, Outgoing


@dataclass(slots=True)
class ShardExpansion(Expansion):
    """What one pending append turns into, and what was reserved for it."""

    inserts: list[tuple[int, int, int]] = field(default_factory=list)  # (segment, rows, bytes) reserved
    flushed: list[int] = field(default_factory=list)
    created: list[int] = field(default_factory=list)  # segments whose CreateSegment is in ``pre``


def _restamped(out: Outgoing, typed: Insert | ManualFlush) -> Outgoing:
    """``out``'s envelope with the header of ``typed``, in place: the WAL owns the messages it
    appends (and an Insert's body is not copied)."""
    out.msg.header = typed.header()
    return Outgoing(out.msg, typed)


class ShardInterceptor:
    def __init__(self, manager: ShardManager, ids: IDSource) -> None:
        self.manager = manager
        self._ids = ids

    def replayed(self, msg: TypedMessage, timetick_ms: int) -> None:
        self.manager.observe(msg, timetick_ms)

    def _seal(self, ex: ShardExpansion, seals: Sequence[SealInstruction]) -> None:
        for seal in seals:
            ex.pre.append(Outgoing.of(seal.flush()))
            ex.flushed.append(seal.segment_id)

    async def expand(self, messages: Sequence[Outgoing], now_ms: int) -> ShardExpansion:
        """Plan ``messages`` (typed where they entered the WAL); on a refusal (an unknown collection) nothing
        stays reserved and no segment created for them stays open."""
        ex = ShardExpansion()
        try:
            for out in messages:
                ex.own.append(await self._one(out, now_ms, ex))
        except BaseException:
            self.refused(ex)
            raise
        return ex

    async def _one(self, out: Outgoing, now_ms: int, ex: ShardExpansion) -> Outgoing:
        m = self.manager
        match typed := out.typed:
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
                return _restamped(out, typed.sealed([s.segment_id for s in seals]))
            case Insert():
                return _restamped(out, await self._insert(typed, now_ms, ex))
            case CreateSegment() | Flush() | TimeTick():
                pass  # the WAL's own messages: a caller's copy is written as it is
            case _:
                assert_never(typed)
        return out

    async def _insert(self, ins: Insert, now_ms: int, ex: ShardExpansion) -> Insert:
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
            ex.pre.append(Outgoing.of(created))
            self.manager.segment_created(sid, ins.collection_id, ins.partition_id, ins.vchannel, now_ms)
            ex.created.append(sid)
            p = plan()
        if p.segment_id is None:
            raise StrataError(f"no segment for an insert into {ins.vchannel}")
        ex.inserts.append((p.segment_id, ins.rows, len(ins.ipc)))
        return ins.assigned(p.segment_id)

    def committed(self, ex: ShardExpansion, now_ms: int) -> None:
        for sid, rows, nbytes in ex.inserts:
            self.manager.commit_insert(sid, rows, nbytes, now_ms)
        for sid in ex.flushed:
            self.manager.segment_flushed(sid)

    def aborted(self, ex: ShardExpansion) -> None:
        """The append failed after it was planned; it may or may not be in the log. A segment
        created for it takes no further insert: it is sealed, and its Flush is written at the
        next tick (``segment_in_doubt``)."""
        self._release(ex)
        for sid in ex.created:
            self.manager.segment_in_doubt(sid)
        ex.created.clear()

    def refused(self, ex: ShardExpansion) -> None:
        self._release(ex)
        # Nothing of this append is written: a segment created for it has no CreateSegment in the
        # log, so it must not take the next insert (the flusher would not know its segment).
        for sid in ex.created:
            self.manager.segment_abandoned(sid)
        ex.created.clear()

    def _release(self, ex: ShardExpansion) -> None:
        for sid, rows, nbytes in ex.inserts:
            self.manager.abort_insert(sid, rows, nbytes)
        ex.inserts.clear()

    def tick(self, now_ms: int) -> ShardExpansion:
        """Flushes owed by the lifetime/idle policies (and by seals whose Flush is not yet written)."""
        ex = ShardExpansion()
        seen: set[int] = set()
        for seal in [*self.manager.pending_seals(), *self.manager.tick(now_ms)]:
            if seal.segment_id not in seen:
                seen.add(seal.segment_id)
                self._seal(ex, [seal])
        return ex
