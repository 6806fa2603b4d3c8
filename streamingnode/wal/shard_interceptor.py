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

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

from common.errors import StrataError
from common.message import header
from protos.common_pb2 import Message, MessageType
from streamingnode.shard import SealInstruction, ShardManager
from streamingnode.shard.headers import assign_insert, create_segment_header, flush_header, manual_flush_header
from streamingnode.wal.ids import IDSource


@dataclass(slots=True)
class Expansion:
    """What one pending append turns into."""

    pre: list[Message] = field(default_factory=list)  # self-generated, each its own timetick
    own: list[Message] = field(default_factory=list)  # the caller's messages, headers stamped
    inserts: list[tuple[int, int, int]] = field(default_factory=list)  # (segment, rows, bytes) reserved
    flushed: list[int] = field(default_factory=list)


def _with_header(msg: Message, head: dict[str, object]) -> Message:
    """``msg`` with its header replaced, in place: the WAL owns the messages it appends."""
    msg.header = json.dumps(head).encode()
    return msg


def _flush_message(seal: SealInstruction) -> Message:
    return Message(type=MessageType.FLUSH, vchannel=seal.vchannel, header=json.dumps(flush_header(seal)).encode())


class ShardInterceptor:
    def __init__(self, manager: ShardManager, ids: IDSource) -> None:
        self.manager = manager
        self._ids = ids

    def observe(self, msg: Message, timetick_ms: int) -> None:
        if msg.type == MessageType.TIME_TICK:
            return
        self.manager.observe(msg.type, msg.vchannel, header(msg), timetick_ms)

    def _seal(self, ex: Expansion, seals: Sequence[SealInstruction]) -> None:
        for seal in seals:
            ex.pre.append(_flush_message(seal))
            ex.flushed.append(seal.segment_id)

    async def expand(self, messages: Sequence[Message], now_ms: int) -> Expansion:
        """Plan ``messages``; on a refusal (e.g. unknown collection) nothing stays reserved."""
        ex = Expansion()
        try:
            for msg in messages:
                ex.own.append(await self._one(msg, now_ms, ex))
        except BaseException:
            self.aborted(ex)
            raise
        return ex

    async def _one(self, msg: Message, now_ms: int, ex: Expansion) -> Message:
        m = self.manager
        match msg.type:
            case MessageType.CREATE_COLLECTION:
                m.collection_created(header(msg)["collection_id"], [msg.vchannel])
            case MessageType.DROP_COLLECTION:
                self._seal(ex, m.collection_dropped(header(msg)["collection_id"], msg.vchannel))
            case MessageType.DROP_PARTITION:
                h = header(msg)
                self._seal(ex, m.partition_dropped(h["collection_id"], h["partition_id"], msg.vchannel))
            case MessageType.DELETE:
                m.check_collection(header(msg)["collection_id"], msg.vchannel)
            case MessageType.SCHEMA_CHANGE:
                self._seal(ex, m.schema_changed(header(msg)["collection_id"], msg.vchannel))
            case MessageType.MANUAL_FLUSH:
                h = header(msg)
                seals = m.manual_flush(h["collection_id"], h.get("flush_ts", 0), msg.vchannel)
                self._seal(ex, seals)
                return _with_header(
                    msg,
                    manual_flush_header(
                        collection_id=h["collection_id"],
                        flush_ts=h.get("flush_ts", 0),
                        segment_ids=[s.segment_id for s in seals],
                    ),
                )
            case MessageType.INSERT:
                return await self._insert(msg, now_ms, ex)
            case _:
                pass
        return msg

    async def _insert(self, msg: Message, now_ms: int, ex: Expansion) -> Message:
        h = header(msg)
        args = {
            "vchannel": msg.vchannel,
            "collection_id": h["collection_id"],
            "partition_id": h["partition_id"],
            "rows": h["rows"],
            "bytes": len(msg.body),
            "now_ms": now_ms,
        }
        plan = self.manager.plan_insert(**args)  # type: ignore[arg-type]
        if plan.seal is not None:
            self._seal(ex, [plan.seal])
        if plan.needs_new_segment:
            sid = await self._ids.allocate(1)
            head = create_segment_header(segment_id=sid, collection_id=h["collection_id"], partition_id=h["partition_id"])
            ex.pre.append(Message(type=MessageType.CREATE_SEGMENT, vchannel=msg.vchannel, header=json.dumps(head).encode()))
            self.manager.segment_created(sid, h["collection_id"], h["partition_id"], msg.vchannel, now_ms)
            plan = self.manager.plan_insert(**args)  # type: ignore[arg-type]
        if plan.segment_id is None:
            raise StrataError(f"no segment for an insert into {msg.vchannel}")
        ex.inserts.append((plan.segment_id, h["rows"], len(msg.body)))
        return _with_header(msg, assign_insert(h, segment_id=plan.segment_id, nbytes=len(msg.body)))

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
