"""Segment assignment and seal decisions for every vchannel of one pchannel.

``ShardManager`` is the decision half of the WAL's shard interceptor (STYLE
rule 13): events in (an insert to place, a DDL message, a clock tick, a
replayed message), instructions out (use segment S, create a segment, append
a Flush for S). It does no I/O and reads no clock; the WAL's single writer
calls it in log order and appends what it says. See ``README.md`` for the
protocol and recovery.

Every decision takes effect when it is returned: a segment named by a
``SealInstruction`` is already SEALED. If an append whose outcome is unknown
fails, the caller cannot tell the manager what the log holds; it must rebuild
the manager by replaying the log (``observe``), as on open.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import assert_never

from common.errors import CollectionNotFound, InvalidArgument
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
from streamingnode.shard.instructions import InsertPlan, SealInstruction
from streamingnode.shard.policy import SealPolicy, SealReason
from streamingnode.shard.segments import GrowingSegment, SegmentKey, SegmentState

_Predicate = Callable[[GrowingSegment], bool]


@dataclass(frozen=True, slots=True, kw_only=True)
class CollectionShard:
    """A collection as seen by one pchannel: its vchannels here and what was dropped of it."""

    collection_id: int
    vchannels: frozenset[str]
    dropped_partitions: frozenset[int] = frozenset()
    # The largest flush_ts of a ManualFlush of this collection on this pchannel (0: none).
    last_flush_ts: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class ShardSnapshot:
    """The whole state of a ``ShardManager``; equal states give equal snapshots."""

    collections: tuple[CollectionShard, ...] = ()  # by collection_id
    segments: tuple[GrowingSegment, ...] = ()  # growing and sealed-not-flushed, by segment_id
    open_segments: tuple[int, ...] = ()  # the segment each key's inserts go to, sorted

    def growing(self) -> tuple[GrowingSegment, ...]:
        return tuple(s for s in self.segments if s.state is SegmentState.GROWING)


@dataclass(slots=True)
class _State:
    collections: dict[int, CollectionShard] = field(default_factory=dict)
    segments: dict[int, GrowingSegment] = field(default_factory=dict)
    # Invariant: every value names a GROWING segment of ``segments`` with that key.
    open: dict[SegmentKey, int] = field(default_factory=dict)


class ShardManager:
    """Which growing segment each insert goes to, and when segments are sealed.

    Args:
        policy: the seal limits (validated here).

    All methods are synchronous and deterministic: time comes in as
    milliseconds (``now_ms``), by convention the physical part of the hybrid
    timetick of the message being appended, so a replay sees the same times.
    """

    def __init__(self, policy: SealPolicy | None = None) -> None:
        self._policy = policy or SealPolicy()
        self._policy.validate()
        self._s = _State()

    @classmethod
    def from_snapshot(cls, snapshot: ShardSnapshot, policy: SealPolicy | None = None) -> ShardManager:
        """A manager in the state of ``snapshot``, to replay the log after the point it was taken.

        In-flight reservations are dropped: an insert that was persisted is
        counted again when its message is replayed.
        """
        m = cls(policy)
        m._s.collections = {c.collection_id: c for c in snapshot.collections}
        for seg in snapshot.segments:
            m._s.segments[seg.segment_id] = seg.released(seg.pending_rows, seg.pending_bytes)
        for sid in snapshot.open_segments:
            seg = m._s.segments[sid]
            if not seg.is_growing:
                raise InvalidArgument(f"snapshot opens segment {sid}, which is {seg.state.value}")
            m._s.open[seg.key] = sid
        return m

    @property
    def policy(self) -> SealPolicy:
        return self._policy

    # -- collections -----------------------------------------------------------

    def collection_created(self, collection_id: int, vchannels: Iterable[str]) -> None:
        """Registers ``collection_id`` on ``vchannels`` (added to those already known: idempotent)."""
        added = frozenset(vchannels)
        if not added or "" in added:
            raise InvalidArgument(f"collection {collection_id} needs non-empty vchannel names, got {sorted(added)}")
        coll = self._s.collections.get(collection_id)
        if coll is None:
            self._s.collections[collection_id] = CollectionShard(collection_id=collection_id, vchannels=added)
        else:
            self._s.collections[collection_id] = replace(coll, vchannels=coll.vchannels | added)

    def collection_dropped(self, collection_id: int, vchannel: str | None = None) -> list[SealInstruction]:
        """Forgets the collection on ``vchannel`` (every vchannel of this pchannel if None).

        Its growing segments there are sealed (COLLECTION_DROPPED); later
        inserts fail with ``CollectionNotFound``. Unknown collections: no-op.
        """
        coll = self._s.collections.get(collection_id)
        if coll is None:
            return []
        dropped = coll.vchannels if vchannel is None else coll.vchannels & {vchannel}
        seals = self._seal_where(
            SealReason.COLLECTION_DROPPED,
            lambda s: s.collection_id == collection_id and s.vchannel in dropped,
        )
        remaining = coll.vchannels - dropped
        if remaining:
            self._s.collections[collection_id] = replace(coll, vchannels=remaining)
        else:
            del self._s.collections[collection_id]
        return seals

    def partition_dropped(
        self, collection_id: int, partition_id: int, vchannel: str | None = None
    ) -> list[SealInstruction]:
        """Seals the partition's growing segments on ``vchannel`` (all if None), PARTITION_DROPPED.

        The partition is remembered as dropped for the whole collection: later
        inserts into it fail with ``InvalidArgument``. Unknown collections: no-op.
        """
        coll = self._s.collections.get(collection_id)
        if coll is None:
            return []
        self._s.collections[collection_id] = replace(coll, dropped_partitions=coll.dropped_partitions | {partition_id})
        return self._seal_where(
            SealReason.PARTITION_DROPPED,
            lambda s: (
                s.collection_id == collection_id
                and s.partition_id == partition_id
                and (vchannel is None or s.vchannel == vchannel)
            ),
        )

    def manual_flush(self, collection_id: int, flush_ts: int, vchannel: str | None = None) -> list[SealInstruction]:
        """Seals every growing segment of the collection on ``vchannel`` (all if None), MANUAL_FLUSH.

        Inserts after it go to new segments. No allocation fence is needed
        (unlike Milvus's ``FlushAndFenceSegmentAllocUntil``): the WAL's single
        writer gives every later insert a timetick above the ManualFlush's,
        itself above ``flush_ts``.

        Raises:
            CollectionNotFound: the collection is not on ``vchannel`` (or nowhere here).
        """
        coll = self._s.collections.get(collection_id)
        if coll is None or (vchannel is not None and vchannel not in coll.vchannels):
            raise _not_found(collection_id, vchannel)
        self._s.collections[collection_id] = replace(coll, last_flush_ts=max(coll.last_flush_ts, flush_ts))
        return self._seal_where(
            SealReason.MANUAL_FLUSH,
            lambda s: s.collection_id == collection_id and (vchannel is None or s.vchannel == vchannel),
        )

    def schema_changed(self, collection_id: int, vchannel: str | None = None) -> list[SealInstruction]:
        """Seals every growing segment of the collection on ``vchannel`` (all if None), SCHEMA_CHANGE,
        so that no segment holds rows of two schemas (Milvus seals and fences likewise).

        Raises:
            CollectionNotFound: the collection is not on ``vchannel`` (or nowhere here).
        """
        coll = self._s.collections.get(collection_id)
        if coll is None or (vchannel is not None and vchannel not in coll.vchannels):
            raise _not_found(collection_id, vchannel)
        return self._seal_where(
            SealReason.SCHEMA_CHANGE,
            lambda s: s.collection_id == collection_id and (vchannel is None or s.vchannel == vchannel),
        )

    def check_collection(self, collection_id: int, vchannel: str) -> None:
        """For a Delete: the collection must exist on ``vchannel``.

        Raises:
            CollectionNotFound: it was never created there, or was dropped.
        """
        if not self._knows(collection_id, vchannel):
            raise _not_found(collection_id, vchannel)

    # -- inserts ---------------------------------------------------------------

    def plan_insert(
        self, *, vchannel: str, collection_id: int, partition_id: int, rows: int, bytes: int, now_ms: int
    ) -> InsertPlan:
        """Places an insert of ``rows`` rows and ``bytes`` bytes.

        The key's open segment takes it unless the insert would pass a cap or
        the segment is past a time limit; then that segment is sealed (the
        plan's ``seal``) and a new segment is needed. An empty segment takes
        any insert, so an insert larger than ``max_rows`` goes whole into one
        fresh segment (sealed on the next tick or insert).

        Raises:
            CollectionNotFound: the collection was never created on ``vchannel``, or was dropped.
            InvalidArgument: the partition was dropped, or ``rows < 1`` / ``bytes < 0``.
        """
        if rows < 1 or bytes < 0:
            raise InvalidArgument(f"an insert needs rows >= 1 and bytes >= 0, got rows={rows} bytes={bytes}")
        self._require_partition(collection_id, partition_id, vchannel)
        sid = self._s.open.get((vchannel, collection_id, partition_id))
        if sid is None:
            return InsertPlan(segment_id=None, needs_new_segment=True)
        seg = self._s.segments[sid]
        reason = self._policy.reason_to_roll_over(seg, rows, bytes, now_ms)
        if reason is None:
            self._s.segments[sid] = seg.reserved(rows, bytes)
            return InsertPlan(segment_id=sid, needs_new_segment=False)
        return InsertPlan(segment_id=None, needs_new_segment=True, seal=self._seal(seg, reason))

    def segment_created(
        self, segment_id: int, collection_id: int, partition_id: int, vchannel: str, now_ms: int
    ) -> None:
        """Records that a CreateSegment was appended; the segment becomes its key's open segment.

        A still-growing segment of the same key (never the case when the plan's
        seal was honoured) keeps growing but takes no new inserts; the idle or
        lifetime policy seals it.

        Raises:
            InvalidArgument: ``segment_id`` is already known, or the partition was dropped.
            CollectionNotFound: as ``plan_insert``.
        """
        if segment_id in self._s.segments:
            raise InvalidArgument(f"segment {segment_id} already exists on this pchannel")
        self._require_partition(collection_id, partition_id, vchannel)
        seg = GrowingSegment(
            segment_id=segment_id,
            collection_id=collection_id,
            partition_id=partition_id,
            vchannel=vchannel,
            created_ms=now_ms,
            last_write_ms=now_ms,
        )
        self._s.segments[segment_id] = seg
        self._s.open[seg.key] = segment_id

    def commit_insert(self, segment_id: int, rows: int, bytes: int, now_ms: int) -> None:
        """Counts a persisted insert (and releases its reservation, if it had one).

        A segment already flushed or unknown is ignored: the manager only
        keeps statistics of segments it may still decide on.
        """
        seg = self._s.segments.get(segment_id)
        if seg is not None:
            self._s.segments[segment_id] = seg.released(rows, bytes).committed(rows, bytes, now_ms)

    def abort_insert(self, segment_id: int, rows: int, bytes: int) -> None:
        """Releases the reservation of a planned insert that was not appended."""
        seg = self._s.segments.get(segment_id)
        if seg is not None:
            self._s.segments[segment_id] = seg.released(rows, bytes)

    def segment_flushed(self, segment_id: int) -> None:
        """Records that a Flush of the segment was appended: it is forgotten (unknown ids: no-op)."""
        self._forget(segment_id)

    def segment_abandoned(self, segment_id: int) -> None:
        """Forgets a segment whose CreateSegment was surely not appended (its append was refused),
        as a replay of the log would not know it; its key has no open segment then."""
        self._forget(segment_id)

    def segment_in_doubt(self, segment_id: int) -> None:
        """Seals a segment whose CreateSegment's append failed: it may or may not be in the log.

        No insert may go to it any more (a reader that never saw it created skips inserts into
        it, and the flusher's checkpoint would pass their rows); its Flush (``pending_seals``)
        closes it if the CreateSegment is in the log, and readers ignore a Flush of a segment
        they do not know if it is not. Unknown or already sealed: no-op.
        """
        seg = self._s.segments.get(segment_id)
        if seg is not None and seg.is_growing:
            self._seal(seg, SealReason.APPEND_FAILED)

    def _forget(self, segment_id: int) -> None:
        seg = self._s.segments.pop(segment_id, None)
        if seg is not None and self._s.open.get(seg.key) == segment_id:
            del self._s.open[seg.key]

    # -- time ------------------------------------------------------------------

    def tick(self, now_ms: int) -> list[SealInstruction]:
        """Seals the growing segments that are full or past the lifetime or idle limit."""
        seals: list[SealInstruction] = []
        for seg in self._ordered_segments():
            if seg.is_growing and (reason := self._policy.reason_to_seal(seg, now_ms)) is not None:
                seals.append(self._seal(seg, reason))
        return seals

    def pending_seals(self) -> list[SealInstruction]:
        """Every sealed segment whose Flush was not reported appended, by segment id.

        After a replay these are seals decided while handling a replayed
        DropCollection/DropPartition/ManualFlush whose Flush messages are
        missing from the log; after a failed append, the ones it lost.
        """
        return [_instruction(s) for s in self._ordered_segments() if s.state is SegmentState.SEALED]

    # -- recovery --------------------------------------------------------------

    def observe(self, message: TypedMessage, timetick_ms: int) -> None:
        """Folds one replayed WAL message into the state, as its live decision left it.

        Messages must come in log order. Replaying a log written by this
        manager's caller from its start (or from where ``from_snapshot``'s
        snapshot was taken) gives the state the manager had after appending
        the same messages. Messages about unknown collections or segments are
        ignored; other message types are ignored.
        """
        vchannel = message.vchannel
        vch = vchannel or None  # an empty vchannel means the whole pchannel
        match message:
            case CreateCollection(collection_id=cid):
                if vchannel:
                    self.collection_created(cid, [vchannel])
            case DropCollection(collection_id=cid):
                self.collection_dropped(cid, vch)
            case DropPartition(collection_id=cid, partition_id=pid):
                self.partition_dropped(cid, pid, vch)
            case ManualFlush(collection_id=cid, flush_ts=flush_ts):
                if self._knows(cid, vch):
                    self.manual_flush(cid, flush_ts, vch)
            case SchemaChange(collection_id=cid):
                if self._knows(cid, vch):
                    self.schema_changed(cid, vch)
            case CreateSegment(collection_id=cid, partition_id=pid, segment_id=sid):
                if vchannel and self._knows(cid, vchannel) and sid not in self._s.segments:
                    if pid not in self._s.collections[cid].dropped_partitions:
                        self.segment_created(sid, cid, pid, vchannel, timetick_ms)
            case Insert(segment_id=sid, rows=rows, nbytes=nbytes):
                if sid:  # none in an Insert written before segment assignment
                    self.commit_insert(sid, rows, nbytes, timetick_ms)
            case Flush(segment_id=sid):
                self.segment_flushed(sid)
            case Delete() | TimeTick():
                pass
            case _:
                assert_never(message)

    # -- views -----------------------------------------------------------------

    def snapshot(self) -> ShardSnapshot:
        """The collections and not-yet-flushed segments (for tests, CollectStatus, restarts)."""
        return ShardSnapshot(
            collections=tuple(self._s.collections[c] for c in sorted(self._s.collections)),
            segments=tuple(self._ordered_segments()),
            open_segments=tuple(sorted(self._s.open.values())),
        )

    def segment(self, segment_id: int) -> GrowingSegment | None:
        return self._s.segments.get(segment_id)

    # -- internals -------------------------------------------------------------

    def _ordered_segments(self) -> list[GrowingSegment]:
        return [self._s.segments[sid] for sid in sorted(self._s.segments)]

    def _knows(self, collection_id: int, vchannel: str | None) -> bool:
        coll = self._s.collections.get(collection_id)
        return coll is not None and (vchannel is None or vchannel in coll.vchannels)

    def _require_partition(self, collection_id: int, partition_id: int, vchannel: str) -> None:
        coll = self._s.collections.get(collection_id)
        if coll is None or vchannel not in coll.vchannels:
            raise _not_found(collection_id, vchannel)
        if partition_id in coll.dropped_partitions:
            raise InvalidArgument(f"partition {partition_id} of collection {collection_id} was dropped")

    def _seal(self, seg: GrowingSegment, reason: SealReason) -> SealInstruction:
        sealed = seg.sealed(reason)
        self._s.segments[seg.segment_id] = sealed
        if self._s.open.get(seg.key) == seg.segment_id:
            del self._s.open[seg.key]
        return _instruction(sealed)

    def _seal_where(self, reason: SealReason, pred: _Predicate) -> list[SealInstruction]:
        return [self._seal(s, reason) for s in self._ordered_segments() if s.is_growing and pred(s)]


def _instruction(seg: GrowingSegment) -> SealInstruction:
    assert seg.seal_reason is not None, "only sealed segments have seal instructions"
    return SealInstruction(
        segment_id=seg.segment_id,
        collection_id=seg.collection_id,
        partition_id=seg.partition_id,
        vchannel=seg.vchannel,
        reason=seg.seal_reason,
    )


def _not_found(collection_id: int, vchannel: str | None) -> CollectionNotFound:
    where = f"vchannel {vchannel}" if vchannel else "this pchannel"
    return CollectionNotFound(f"collection {collection_id} not found on {where} (not created there, or dropped)")
