"""The data-sync state of one vchannel: what is buffered, what is owed, where the checkpoint is.

Plain data and decisions, no I/O (STYLE rule 13). The flusher feeds it the
vchannel's messages in log order (``handle``) and gets back the work it owes
the coordinator and object storage, in order:

* CreateSegment -> ``AllocSegment`` (GROWING) and a new segment buffer;
* Insert -> rows appended to the segment's buffer (nothing owed);
* Delete -> keys appended to the vchannel's delete buffer (an L0 segment later);
* Flush -> ``MarkState(SEALED)`` then ``SyncSegment(final=True)``;
* ManualFlush -> ``SyncDeletes`` (the Flushes of its segments came before it);
* SchemaChange -> the pipeline takes the schema if it is newer (a field added): rows
  buffered and rows of later inserts converted with an older schema get the added
  column filled (``common/schema_evolution.py``);
* DropCollection -> the pipeline is finished: buffers are discarded.

Sync work is carried out by the flusher, which takes a batch
(``take_segment_batch`` / ``take_deletes``), writes it, reports it, and then
tells the pipeline (``segment_synced`` / ``deletes_synced``).

**Checkpoint.** ``checkpoint()`` is the position a reader of this vchannel
resumes from when everything before it is read from object storage instead:
the last consumed position, but never past the start of a segment that is not
FLUSHED yet, nor past the first delete that is not in an L0 segment yet.
Query nodes load FLUSHED segments and L0 deletes and consume from the
checkpoint, so a growing segment is served from the WAL until its final sync.

**Replay.** After a restart the flusher replays from the checkpoint. What the
coordinator already has is skipped: every message at or before the
vchannel's checkpoint, inserts of FLUSHED segments, and inserts of a growing
segment up to the position its synced files reach (``SegmentMeta.position``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import structlog

from common.message import CreateSegment, Delete, DropCollection, Flush, Insert, ManualFlush, SchemaChange, decode
from common.position import Position
from common.schema import TIMESTAMP_COLUMN, CollectionSchema
from common.schema_evolution import conform_table, is_newer
from common.segment import SegmentLevel, SegmentMeta, SegmentState
from protos.common_pb2 import Message

# -- work owed to the coordinator / object storage ---------------------------------------------


@dataclass(frozen=True, slots=True)
class AllocSegment:
    meta: SegmentMeta


@dataclass(frozen=True, slots=True)
class MarkState:
    segment_id: int
    state: SegmentState


@dataclass(frozen=True, slots=True)
class SyncSegment:
    vchannel: str
    segment_id: int
    final: bool
    reason: str


@dataclass(frozen=True, slots=True)
class SyncDeletes:
    vchannel: str
    reason: str


Work = AllocSegment | MarkState | SyncSegment | SyncDeletes


# -- buffers -------------------------------------------------------------------------------------


@dataclass(slots=True)
class SegmentBuffer:
    """One growing segment: its identity, the rows not in files yet, and what its files hold."""

    segment_id: int
    collection_id: int
    partition_id: int
    start: Position  # resumes at its CreateSegment
    tables: list[pa.Table] = field(default_factory=list)
    last_position: Position | None = None  # of the newest buffered insert
    nbytes: int = 0
    synced_rows: int = 0  # rows already in the manifest's files
    synced_upto: Position | None = None  # inserts at or before this are in files
    manifest: str = ""
    buffered_since: float | None = None  # monotonic time of the oldest buffered rows
    sealed: bool = False
    flushed: bool = False

    @property
    def buffered_rows(self) -> int:
        return sum(t.num_rows for t in self.tables)


@dataclass(slots=True)
class DeleteBuffer:
    """Deletes of one vchannel that are not in an L0 segment yet."""

    pks: list[pa.Array] = field(default_factory=list)
    ts: list[np.ndarray] = field(default_factory=list)
    partitions: list[int] = field(default_factory=list)  # per entry: the partition its delete named
    first: Position | None = None  # resume position of the oldest buffered delete
    last: Position | None = None
    nbytes: int = 0
    buffered_since: float | None = None

    @property
    def rows(self) -> int:
        return sum(len(p) for p in self.pks)


@dataclass(frozen=True, slots=True)
class SegmentBatch:
    """Buffered rows handed to a sync: the first ``count`` tables of the buffer."""

    segment_id: int
    collection_id: int
    partition_id: int
    table: pa.Table
    count: int
    upto: Position | None
    synced_rows: int
    manifest: str
    start: Position


@dataclass(frozen=True, slots=True)
class DeleteBatch:
    """Buffered deletes handed to a sync (the first ``count`` entries), with each key's partition
    (``ALL_PARTITIONS``: the delete named none): one L0 segment per partition."""

    pks: pa.Array
    ts: np.ndarray
    partitions: np.ndarray
    count: int
    first: Position
    last: Position

    def by_partition(self) -> list[tuple[int, pa.Array, np.ndarray]]:
        """``(partition, pks, ts)`` for each partition the batch's deletes name, in partition order."""
        out = []
        for part in np.unique(self.partitions).tolist():
            hit = self.partitions == part
            out.append((int(part), self.pks.filter(pa.array(hit)), self.ts[hit]))
        return out


def _before(message_id: bytes, timetick: int) -> Position:
    """Resume position that re-reads the message (id, timetick) itself."""
    return Position(message_id, timetick - 1)


class ChannelPipeline:
    """The data-sync state of one vchannel (see the module docstring)."""

    def __init__(
        self,
        *,
        vchannel: str,
        collection_id: int,
        schema: CollectionSchema,
        checkpoint: Position | None,
        segments: Sequence[SegmentMeta] = (),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.vchannel = vchannel
        self.collection_id = collection_id
        self.schema = schema
        self._arrow_schema = schema.arrow_schema()
        self.recovered_checkpoint = checkpoint
        self._consumed: Position | None = checkpoint
        self._clock = clock
        self.segments: dict[int, SegmentBuffer] = {}
        self.deletes = DeleteBuffer()
        self.dropped = False
        # What the coordinator already has: FLUSHED segments are skipped, growing ones resume.
        self._flushed: set[int] = set()
        self._known: dict[int, SegmentMeta] = {}
        for meta in segments:
            if meta.level != SegmentLevel.L1:
                continue
            if meta.state == SegmentState.FLUSHED:
                self._flushed.add(meta.segment_id)
            else:
                self._known[meta.segment_id] = meta
        self._log = structlog.get_logger().bind(component="flush-pipeline", vchannel=vchannel)

    # -- consuming ---------------------------------------------------------------------------

    def tick(self, position: Position) -> None:
        """Everything of this vchannel up to ``position`` has been handed to ``handle``."""
        if self._consumed is None or position.timetick > self._consumed.timetick:
            self._consumed = position

    def handle(self, message_id: bytes, msg: Message) -> list[Work]:
        """Fold one message of this vchannel in; returns the work it makes due, in order."""
        if self.dropped:
            return []
        cp = self.recovered_checkpoint
        if cp is not None and cp.covers(msg.timetick):
            return []  # already in object storage
        work: list[Work] = []
        at = Position(message_id, msg.timetick)
        match typed := decode(msg):
            case CreateSegment():
                work.extend(self._create_segment(at, typed))
            case Insert():
                self._insert(at, typed)
            case Delete():
                self._delete(at, typed)
            case Flush(segment_id=sid):
                work.extend(self._flush(sid))
            case ManualFlush():
                if self.deletes.pks:
                    work.append(SyncDeletes(self.vchannel, "manual flush"))
            case SchemaChange(schema=schema):
                self._schema_changed(schema)
            case DropCollection():
                self.dropped = True
                self.segments.clear()
                self.deletes = DeleteBuffer()
            case _:
                pass
        self.tick(at)
        return work

    def _create_segment(self, at: Position, msg: CreateSegment) -> list[Work]:
        sid = msg.segment_id
        if sid in self._flushed or sid in self.segments:
            return []
        known = self._known.get(sid)
        buf = SegmentBuffer(
            segment_id=sid,
            collection_id=msg.collection_id,
            partition_id=msg.partition_id,
            start=_before(at.message_id, at.timetick),
        )
        if known is not None:  # it has files already: continue after them
            buf.synced_rows = known.rows
            buf.synced_upto = known.position
            buf.manifest = known.manifest
            buf.sealed = known.state in (SegmentState.SEALED, SegmentState.FLUSHING)
        self.segments[sid] = buf
        meta = SegmentMeta(
            segment_id=sid,
            collection_id=buf.collection_id,
            partition_id=buf.partition_id,
            vchannel=self.vchannel,
            state=SegmentState.GROWING,
            start_position=buf.start,
        )
        return [AllocSegment(meta)]

    def _insert(self, at: Position, msg: Insert) -> None:
        sid = msg.segment_id
        if sid is None:
            self._log.warning("insert without a segment skipped", message_id=at.message_id.hex())
            return
        buf = self.segments.get(sid)
        if buf is None:
            if sid not in self._flushed:
                self._log.warning("insert into an unknown segment skipped", segment=sid)
            return
        if buf.synced_upto is not None and buf.synced_upto.covers(at.timetick):
            return  # already in the segment's files
        table = msg.table()
        ts = pa.array(np.full(table.num_rows, at.timetick, dtype=np.uint64))
        table = conform_table(table.append_column(TIMESTAMP_COLUMN, ts), self._arrow_schema, self.schema)
        buf.tables.append(table)
        buf.nbytes += table.nbytes
        buf.last_position = at
        if buf.buffered_since is None:
            buf.buffered_since = self._clock()

    def _schema_changed(self, schema: CollectionSchema) -> None:
        """Take ``schema`` if it is newer; what is buffered gets its added columns, so that every
        buffered table of a segment has the same columns (a segment sealed by the change still
        holds old rows until its sync)."""
        if not is_newer(self.schema, schema):
            return
        self.schema = schema
        self._arrow_schema = schema.arrow_schema()
        for buf in self.segments.values():
            buf.tables = [conform_table(t, self._arrow_schema, schema) for t in buf.tables]
        self._log.info("schema changed", version=schema.version, fields=len(schema.fields))

    def _delete(self, at: Position, msg: Delete) -> None:
        pks = msg.pks()
        if len(pks) == 0:
            return
        d = self.deletes
        d.pks.append(pks)
        d.ts.append(np.full(len(pks), at.timetick, dtype=np.uint64))
        d.partitions.append(msg.partition_id)
        d.nbytes += pks.nbytes + 8 * len(pks)
        if d.first is None:
            d.first = _before(at.message_id, at.timetick)
            d.buffered_since = self._clock()
        d.last = at

    def _flush(self, segment_id: int) -> list[Work]:
        buf = self.segments.get(segment_id)
        if buf is None or buf.flushed:
            return []  # unknown here: FLUSHED already (skipped on replay) or dropped
        buf.sealed = True
        return [MarkState(segment_id, SegmentState.SEALED), SyncSegment(self.vchannel, segment_id, True, "sealed")]

    # -- syncing -----------------------------------------------------------------------------

    def take_segment_batch(self, segment_id: int) -> SegmentBatch | None:
        """The rows buffered in ``segment_id`` now (possibly none), or None if it is gone."""
        buf = self.segments.get(segment_id)
        if buf is None or buf.flushed:
            return None
        count = len(buf.tables)
        table = (
            pa.concat_tables(buf.tables) if buf.tables else self._arrow_schema.empty_table()
        )
        return SegmentBatch(
            segment_id=segment_id,
            collection_id=buf.collection_id,
            partition_id=buf.partition_id,
            table=table,
            count=count,
            upto=buf.last_position,
            synced_rows=buf.synced_rows,
            manifest=buf.manifest,
            start=buf.start,
        )

    def segment_synced(self, batch: SegmentBatch, *, manifest: str, final: bool) -> None:
        """The batch is in files and reported; forget its rows (and the segment, if final)."""
        buf = self.segments.get(batch.segment_id)
        if buf is None:
            return
        del buf.tables[: batch.count]
        buf.nbytes = sum(t.nbytes for t in buf.tables)
        buf.synced_rows = batch.synced_rows + batch.table.num_rows
        if batch.upto is not None:
            buf.synced_upto = batch.upto
        buf.manifest = manifest or buf.manifest
        buf.buffered_since = self._clock() if buf.tables else None
        if final:
            buf.flushed = True
            del self.segments[batch.segment_id]
            self._flushed.add(batch.segment_id)

    def take_deletes(self) -> DeleteBatch | None:
        d = self.deletes
        if not d.pks:
            return None
        assert d.first is not None and d.last is not None
        return DeleteBatch(
            pks=pa.concat_arrays(d.pks),
            ts=np.concatenate(d.ts),
            partitions=np.repeat(np.asarray(d.partitions, dtype=np.int64), [len(p) for p in d.pks]),
            count=len(d.pks),
            first=d.first,
            last=d.last,
        )

    def deletes_synced(self, batch: DeleteBatch) -> None:
        d = self.deletes
        del d.pks[: batch.count]
        del d.ts[: batch.count]
        del d.partitions[: batch.count]
        d.nbytes = sum(p.nbytes + 8 * len(p) for p in d.pks)
        if not d.pks:
            self.deletes = DeleteBuffer()
        # Otherwise the remaining deletes arrived after the batch: their first position is later
        # than the batch's last, and ``last`` stays; ``first`` becomes "right after the batch".
        else:
            d.first = batch.last

    # -- the checkpoint ----------------------------------------------------------------------

    def checkpoint(self) -> Position | None:
        """Where a reader resumes when everything before is in object storage (module docstring)."""
        cp = self._consumed
        bounds = [b.start for b in self.segments.values() if not b.flushed]
        if self.deletes.first is not None:
            bounds.append(self.deletes.first)
        for b in bounds:
            if cp is None or b.timetick < cp.timetick:
                cp = b
        return cp

    @property
    def buffered_bytes(self) -> int:
        return sum(b.nbytes for b in self.segments.values()) + self.deletes.nbytes
