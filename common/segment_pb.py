"""Protobuf <-> domain for positions and segment metadata (``common.proto``), used at every service edge."""

from __future__ import annotations

from common.position import Position
from common.segment import SegmentLevel, SegmentMeta, SegmentState
from protos import common_pb2


def position_to_pb(pos: Position | None) -> common_pb2.Position | None:
    return None if pos is None else common_pb2.Position(message_id=pos.message_id, timetick=pos.timetick)


def position_from_pb(msg: common_pb2.Position, present: bool = True) -> Position | None:
    """The position, or None when the field was not set (``present`` is ``HasField`` of the parent)."""
    if not present or not msg.message_id:
        return None
    return Position(bytes(msg.message_id), int(msg.timetick))


def segment_to_pb(meta: SegmentMeta) -> common_pb2.SegmentInfo:
    out = common_pb2.SegmentInfo(
        segment_id=meta.segment_id,
        collection_id=meta.collection_id,
        partition_id=meta.partition_id,
        vchannel=meta.vchannel,
        state=common_pb2.SegmentState.ValueType(meta.state),  # the enums share numbers
        level=common_pb2.SegmentLevel.ValueType(meta.level),
        rows=meta.rows,
        manifest=meta.manifest,
    )
    if meta.start_position is not None:
        out.start_position.CopyFrom(position_to_pb(meta.start_position))
    if meta.position is not None:
        out.position.CopyFrom(position_to_pb(meta.position))
    return out


def segment_from_pb(msg: common_pb2.SegmentInfo) -> SegmentMeta:
    return SegmentMeta(
        segment_id=msg.segment_id,
        collection_id=msg.collection_id,
        partition_id=msg.partition_id,
        vchannel=msg.vchannel,
        state=SegmentState(msg.state) if msg.state else SegmentState.GROWING,
        level=SegmentLevel(msg.level) if msg.level else SegmentLevel.L1,
        rows=msg.rows,
        manifest=msg.manifest,
        start_position=position_from_pb(msg.start_position, msg.HasField("start_position")),
        position=position_from_pb(msg.position, msg.HasField("position")),
    )
