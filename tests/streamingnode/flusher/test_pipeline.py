"""The data-sync state of one vchannel: buffering, owed work, checkpoints, replay skipping (pure)."""

from __future__ import annotations

import pyarrow as pa

from common.message import CreateSegment, Delete, DropCollection, Flush, Insert, ManualFlush, SchemaChange
from common.position import Position
from common.schema import CollectionSchema, DataType, FieldSchema
from common.segment import SegmentMeta, SegmentState
from protos.common_pb2 import Message
from streamingnode.flusher.pipeline import AllocSegment, ChannelPipeline, MarkState, SyncDeletes, SyncSegment

V = "p0_1v0"
SCHEMA = CollectionSchema(
    name="c",
    fields=(
        FieldSchema(field_id=100, name="id", dtype=DataType.INT64, is_primary=True),
        FieldSchema(field_id=101, name="v", dtype=DataType.FLOAT_VECTOR, dim=2),
    ),
)


def mid(n: int) -> bytes:
    return n.to_bytes(8, "big")


def stamp(msg: Message, ts: int) -> Message:
    msg.timetick = ts
    return msg


def create_segment(sid: int, ts: int) -> Message:
    return stamp(CreateSegment(vchannel=V, collection_id=1, partition_id=2, segment_id=sid).encode(), ts)


def insert(sid: int, ids: list[int], ts: int) -> Message:
    table = pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array([[0.0, 1.0]] * len(ids), pa.list_(pa.float32(), 2))})
    return stamp(Insert.of(vchannel=V, collection_id=1, partition_id=2, table=table).assigned(sid).encode(), ts)


def flush(sid: int, ts: int) -> Message:
    return stamp(Flush(vchannel=V, collection_id=1, partition_id=2, segment_id=sid).encode(), ts)


def pipeline(**kw: object) -> ChannelPipeline:
    args: dict[str, object] = {"vchannel": V, "collection_id": 1, "schema": SCHEMA, "checkpoint": None}
    args.update(kw)
    return ChannelPipeline(**args)  # type: ignore[arg-type]


def test_a_segment_is_buffered_sealed_synced_and_then_no_longer_holds_the_checkpoint() -> None:
    p = pipeline()
    p.tick(Position(mid(1), 10))
    [alloc] = p.handle(mid(2), create_segment(7, 20))
    assert isinstance(alloc, AllocSegment) and alloc.meta.start_position == Position(mid(2), 19)
    assert p.handle(mid(3), insert(7, [1, 2], 30)) == []
    p.tick(Position(mid(4), 40))
    assert p.checkpoint() == Position(mid(2), 19)  # the growing segment holds it at its start

    work = p.handle(mid(5), flush(7, 50))
    assert work == [MarkState(7, SegmentState.SEALED), SyncSegment(V, 7, True, "sealed")]
    batch = p.take_segment_batch(7)
    assert batch is not None and batch.table.num_rows == 2 and batch.upto == Position(mid(3), 30)
    assert batch.table.column("_ts").to_pylist() == [30, 30]
    p.segment_synced(batch, manifest="m/1", final=True)
    p.tick(Position(mid(6), 60))
    assert p.checkpoint() == Position(mid(6), 60)
    assert p.take_segment_batch(7) is None


def test_deletes_hold_the_checkpoint_until_synced_and_a_manual_flush_asks_for_them() -> None:
    p = pipeline()
    p.handle(mid(1), stamp(Delete.of(vchannel=V, collection_id=1, pks=pa.array([5, 6], pa.int64())).encode(), 10))
    p.tick(Position(mid(2), 20))
    assert p.checkpoint() == Position(mid(1), 9)
    manual = ManualFlush(vchannel=V, collection_id=1, flush_ts=25).encode()
    assert p.handle(mid(3), stamp(manual, 30)) == [SyncDeletes(V, "manual flush")]
    p.handle(mid(4), stamp(Delete.of(vchannel=V, collection_id=1, pks=pa.array([7], pa.int64())).encode(), 40))
    batch = p.take_deletes()
    assert batch is not None and batch.pks.to_pylist() == [5, 6, 7] and batch.ts.tolist() == [10, 10, 40]
    late = Delete.of(vchannel=V, collection_id=1, pks=pa.array([8], pa.int64())).encode()
    p.handle(mid(5), stamp(late, 50))  # arrives during the sync
    p.deletes_synced(batch)
    assert p.deletes.rows == 1
    # Resuming from the synced batch's last delete re-reads the one that arrived later.
    cp = p.checkpoint()
    assert cp is not None and cp.timetick <= 49 and not cp.covers(50)


def test_partial_syncs_keep_later_rows_and_the_total() -> None:
    p = pipeline()
    p.handle(mid(1), create_segment(7, 10))
    p.handle(mid(2), insert(7, [1, 2, 3], 20))
    first = p.take_segment_batch(7)
    assert first is not None
    p.handle(mid(3), insert(7, [4], 30))  # while the first batch is being written
    p.segment_synced(first, manifest="m/1", final=False)
    second = p.take_segment_batch(7)
    assert second is not None and second.table.column("id").to_pylist() == [4]
    assert second.synced_rows == 3 and second.manifest == "m/1"


def test_replay_skips_what_the_coordinator_already_has() -> None:
    growing = SegmentMeta(
        segment_id=7, collection_id=1, partition_id=2, vchannel=V, state=SegmentState.GROWING,
        rows=2, manifest="m/1", start_position=Position(mid(2), 19), position=Position(mid(3), 30),
    )
    flushed = SegmentMeta(segment_id=8, collection_id=1, partition_id=2, vchannel=V, state=SegmentState.FLUSHED)
    p = pipeline(checkpoint=Position(mid(2), 19), segments=[growing, flushed])
    assert p.handle(mid(1), create_segment(99, 15)) == []  # before the checkpoint
    [alloc] = p.handle(mid(2), create_segment(7, 20))
    assert isinstance(alloc, AllocSegment)
    p.handle(mid(3), insert(7, [1, 2], 30))  # in the segment's files already
    p.handle(mid(4), create_segment(8, 35))
    p.handle(mid(5), insert(8, [9], 36))  # segment 8 is FLUSHED
    p.handle(mid(6), insert(7, [3], 40))
    batch = p.take_segment_batch(7)
    assert batch is not None and batch.table.column("id").to_pylist() == [3]
    assert (batch.synced_rows, batch.manifest) == (2, "m/1")
    assert 8 not in p.segments


def test_drop_collection_discards_everything() -> None:
    p = pipeline()
    p.handle(mid(1), create_segment(7, 10))
    p.handle(mid(2), insert(7, [1], 20))
    p.handle(mid(3), stamp(DropCollection(vchannel=V, collection_id=1).encode(), 30))
    assert p.dropped and not p.segments and p.take_segment_batch(7) is None
    assert p.handle(mid(4), insert(7, [2], 40)) == []


def test_a_schema_change_fills_the_added_field_in_buffered_and_stale_rows() -> None:
    """Rows buffered before a field was added, and inserts a proxy converted with the old schema
    after it, get the field's default; a replayed (older or equal) schema changes nothing."""
    added = FieldSchema(field_id=102, name="tag", dtype=DataType.VARCHAR, max_length=8, nullable=True,
                        default_value="none", added=True)
    newer = CollectionSchema(name="c", fields=(*SCHEMA.fields, added), version=1)
    p = pipeline()
    p.handle(mid(1), create_segment(7, 10))
    p.handle(mid(2), insert(7, [1], 20))
    p.handle(mid(3), flush(7, 30))  # the WAL seals before a SchemaChange
    change = stamp(SchemaChange(vchannel=V, collection_id=1, schema=newer).encode(), 40)
    assert p.handle(mid(4), change) == [] and p.schema == newer
    p.handle(mid(5), create_segment(8, 50))
    p.handle(mid(6), insert(8, [2], 60))  # a stale proxy's insert: no "tag" column
    for sid in (7, 8):
        batch = p.take_segment_batch(sid)
        assert batch is not None and batch.table.schema == newer.arrow_schema()
        assert batch.table.column("tag").to_pylist() == ["none"]
    p.handle(mid(7), stamp(SchemaChange(vchannel=V, collection_id=1, schema=SCHEMA).encode(), 70))
    assert p.schema == newer
