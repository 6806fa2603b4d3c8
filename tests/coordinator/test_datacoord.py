"""The data coordinator against a real etcd: segment lifecycle, checkpoints, recovery info, flush state."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence

import pytest

from common.errors import CollectionNotFound, SegmentNotFound
from common.etcd.metastore import MetaStore
from common.message import ManualFlush, TypedMessage
from common.position import Position
from common.schema import CollectionSchema, DataType, FieldSchema
from common.segment import SegmentLevel, SegmentMeta, SegmentState
from coordinator.catalog import Catalog, CollectionMeta, CollectionState
from coordinator.data.datacoord import DataCoordinator
from coordinator.tso import TimestampOracle
from streamingnode.client.producer import AppendResult


class RecordingProducer:
    def __init__(self) -> None:
        self.appended: list[tuple[str, TypedMessage]] = []

    async def append(self, pchannel: str, messages: Sequence[TypedMessage], **_: object) -> list[AppendResult]:
        self.appended.extend((pchannel, m) for m in messages)
        return [AppendResult((1).to_bytes(8, "big"), 1) for _ in messages]


SCHEMA = CollectionSchema(
    name="c",
    fields=(
        FieldSchema(field_id=100, name="id", dtype=DataType.INT64, is_primary=True),
        FieldSchema(field_id=101, name="v", dtype=DataType.FLOAT_VECTOR, dim=4),
    ),
)


@pytest.fixture()
async def store(etcd_endpoint: str) -> AsyncIterator[MetaStore]:
    s = await MetaStore.connect(etcd_endpoint, f"datacoord-{uuid.uuid4().hex}")
    try:
        yield s
    finally:
        await s.close()


async def _coord(store: MetaStore) -> tuple[DataCoordinator, Catalog, RecordingProducer]:
    tso, catalog, producer = TimestampOracle(store), Catalog(store), RecordingProducer()
    await tso.start()
    data = DataCoordinator(store, catalog, tso, producer)  # type: ignore[arg-type]
    await data.start()
    return data, catalog, producer


async def _collection(catalog: Catalog, collection_id: int = 1) -> CollectionMeta:
    meta = CollectionMeta(
        collection_id=collection_id,
        name=f"c{collection_id}",
        schema=SCHEMA,
        vchannels=(f"p0_{collection_id}v0", f"p1_{collection_id}v1"),
        consistency_level=0,
        state=CollectionState.CREATED,
    )
    await catalog.save_collection(meta)
    return meta


def _seg(segment_id: int, vchannel: str = "p0_1v0", **kw: object) -> SegmentMeta:
    args: dict[str, object] = {
        "segment_id": segment_id,
        "collection_id": 1,
        "partition_id": 2,
        "vchannel": vchannel,
        "state": SegmentState.GROWING,
        "start_position": Position(b"\x00" * 8, 10),
    }
    args.update(kw)
    return SegmentMeta(**args)  # type: ignore[arg-type]


async def test_a_segment_goes_through_its_life_and_survives_a_restart(store: MetaStore) -> None:
    data, catalog, _ = await _coord(store)
    await _collection(catalog)
    await data.alloc_segment(_seg(11))
    await data.alloc_segment(_seg(11, rows=99))  # a replayed CreateSegment changes nothing
    assert data.segment(11) == _seg(11)
    await data.update_state(11, SegmentState.SEALED)
    await data.save_binlog_paths(_seg(11, rows=5, manifest="m/1", position=Position(b"\x01" * 8, 20)), flushed=False)
    assert (data.segment(11).state, data.segment(11).rows) == (SegmentState.SEALED, 5)  # type: ignore[union-attr]
    await data.update_state(11, SegmentState.FLUSHING)
    await data.save_binlog_paths(_seg(11, rows=8, manifest="m/2", position=Position(b"\x02" * 8, 30)), flushed=True)
    await data.update_state(11, SegmentState.SEALED)  # old report: ignored
    done = data.segment(11)
    assert done is not None
    assert (done.state, done.rows, done.manifest, done.position) == (
        SegmentState.FLUSHED, 8, "m/2", Position(b"\x02" * 8, 30)
    )
    # A repeated final report (crash before the checkpoint) is accepted and changes nothing.
    await data.save_binlog_paths(_seg(11, rows=8, manifest="m/3"), flushed=True)
    assert data.segment(11) == done

    again, _, _ = await _coord(store)
    assert again.segment(11) == done


async def test_an_empty_flushed_segment_is_dropped_and_l0_segments_need_no_alloc(store: MetaStore) -> None:
    data, catalog, _ = await _coord(store)
    await _collection(catalog)
    await data.alloc_segment(_seg(12))
    await data.save_binlog_paths(_seg(12), flushed=True)
    assert data.segment(12).state == SegmentState.DROPPED  # type: ignore[union-attr]
    with pytest.raises(SegmentNotFound):
        await data.save_binlog_paths(_seg(12, rows=1, manifest="m"), flushed=False)
    await data.save_binlog_paths(_seg(13, level=SegmentLevel.L0, rows=3, manifest="d/1"), flushed=True)
    assert data.segment(13).state == SegmentState.FLUSHED  # type: ignore[union-attr]


async def test_reports_for_an_unknown_or_dropped_collection_are_refused(store: MetaStore) -> None:
    data, catalog, _ = await _coord(store)
    with pytest.raises(CollectionNotFound):
        await data.alloc_segment(_seg(14))
    meta = await _collection(catalog)
    await data.alloc_segment(_seg(14))
    await data.collection_dropped(meta)
    assert data.segment(14).state == SegmentState.DROPPED  # type: ignore[union-attr]
    await catalog.remove_collection(meta)
    with pytest.raises(CollectionNotFound):
        await data.save_binlog_paths(_seg(14, rows=1), flushed=True)
    await data.forget_segments([14])
    assert data.segment(14) is None
    assert (await _coord(store))[0].segment(14) is None


async def test_checkpoints_only_move_forward(store: MetaStore) -> None:
    data, _, _ = await _coord(store)
    await data.update_checkpoints([("a", Position(b"\x05" * 8, 50)), ("b", Position(b"\x01" * 8, 10))])
    await data.update_checkpoints([("a", Position(b"\x04" * 8, 40)), ("b", Position(b"\x02" * 8, 20))])
    assert data.checkpoint("a") == Position(b"\x05" * 8, 50)
    assert data.checkpoint("b") == Position(b"\x02" * 8, 20)
    assert (await _coord(store))[0].checkpoint("b") == Position(b"\x02" * 8, 20)


async def test_recovery_info_lists_the_live_vchannels_of_a_pchannel(store: MetaStore) -> None:
    data, catalog, _ = await _coord(store)
    meta = await _collection(catalog)
    await data.collection_created([(v, Position(b"\x01" * 8, 7)) for v in meta.vchannels])
    await data.alloc_segment(_seg(15))
    await data.alloc_segment(_seg(16, vchannel="p1_1v1"))
    await data.alloc_segment(_seg(17))
    await data.save_binlog_paths(_seg(17), flushed=True)  # empty: dropped, not listed
    creating = CollectionMeta(
        collection_id=2, name="c2", schema=SCHEMA, vchannels=("p0_2v0",), consistency_level=0
    )
    await catalog.save_collection(creating)  # CREATING: not a vchannel to recover yet

    [rec] = await data.recovery_info("p0")
    assert (rec.vchannel, rec.collection_id, rec.checkpoint) == ("p0_1v0", 1, Position(b"\x01" * 8, 7))
    assert [s.segment_id for s in rec.segments] == [15]
    assert rec.schema == SCHEMA


async def test_flush_seals_through_the_wal_and_reports_done_once_checkpoints_pass(store: MetaStore) -> None:
    data, catalog, producer = await _coord(store)
    meta = await _collection(catalog)
    await data.alloc_segment(_seg(18))
    segment_ids, flush_ts = await data.flush(meta)
    assert segment_ids == [18]
    assert sorted(p for p, _ in producer.appended) == ["p0", "p1"]
    assert all(isinstance(m, ManualFlush) for _, m in producer.appended)

    assert not data.flush_state(meta, segment_ids, flush_ts)
    await data.save_binlog_paths(_seg(18, rows=4, manifest="m"), flushed=True)
    await data.update_checkpoints([(meta.vchannels[0], Position(b"\x09" * 8, flush_ts + 5))])
    assert not data.flush_state(meta, segment_ids, flush_ts)  # the other vchannel lags
    await data.update_checkpoints([(meta.vchannels[1], Position(b"\x09" * 8, flush_ts + 1))])
    assert data.flush_state(meta, segment_ids, flush_ts)


async def test_flush_state_by_segment_ids_alone_waits_for_those_segments_only(store: MetaStore) -> None:
    # The Node.js SDK's flushSync names no collection: its segments decide, checkpoints are not asked.
    data, catalog, _ = await _coord(store)
    meta = await _collection(catalog)
    await data.alloc_segment(_seg(19))
    segment_ids, flush_ts = await data.flush(meta)
    assert not data.flush_state(None, segment_ids, flush_ts)
    await data.save_binlog_paths(_seg(19, rows=4, manifest="m"), flushed=True)
    assert data.flush_state(None, segment_ids, flush_ts)
    assert not data.flush_state(meta, segment_ids, flush_ts)  # with the collection: its checkpoints lag
    assert data.flush_state(None, [123456], 0)  # unknown (compacted away, dropped when empty): flushed
