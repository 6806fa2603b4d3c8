"""The flusher's side of data coordination: typed calls to the coordinator.

Protobuf stops here: callers see ``SegmentMeta``, ``Position`` and
``RecoveredChannel``. Every call is idempotent on the coordinator side, so the
flusher retries failed calls as they are. A connection error makes the client
look the leader up again before the next call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import grpc

from common.coordclient import CoordinatorClient
from common.position import Position
from common.schema import CollectionSchema
from common.segment import SegmentMeta, SegmentState
from common.segment_pb import position_from_pb, position_to_pb, segment_from_pb, segment_to_pb
from protos import common_pb2
from protos import coordinator_pb2 as pb

CALL_TIMEOUT = 30.0


@dataclass(frozen=True, slots=True, kw_only=True)
class RecoveredChannel:
    """A vchannel the flusher of its pchannel must serve, as the coordinator knows it."""

    vchannel: str
    collection_id: int
    schema: CollectionSchema
    checkpoint: Position | None
    segments: tuple[SegmentMeta, ...]


class DataClient(Protocol):
    async def recovery_info(self, pchannel: str) -> list[RecoveredChannel]: ...

    async def alloc_segment(self, meta: SegmentMeta) -> None: ...

    async def update_state(self, segment_id: int, state: SegmentState) -> None: ...

    async def save_binlog_paths(self, meta: SegmentMeta, *, flushed: bool) -> None: ...

    async def update_checkpoints(self, checkpoints: Sequence[tuple[str, Position]]) -> None: ...

    async def allocate_ids(self, count: int) -> int:
        """First of ``count`` fresh ids (segments of deletes, log files)."""
        ...


class CoordinatorDataClient:
    def __init__(self, coord: CoordinatorClient) -> None:
        self._coord = coord

    async def _call(self, method: str, request: object) -> object:
        stub = await self._coord.stub()
        try:
            resp = await getattr(stub, method)(request, timeout=CALL_TIMEOUT)
        except grpc.aio.AioRpcError:
            await self._coord.reset()
            raise
        return resp

    async def recovery_info(self, pchannel: str) -> list[RecoveredChannel]:
        resp = await self._call("GetChannelRecoveryInfo", pb.GetChannelRecoveryInfoRequest(pchannel=pchannel))
        assert isinstance(resp, pb.GetChannelRecoveryInfoResponse)
        return [
            RecoveredChannel(
                vchannel=v.vchannel,
                collection_id=v.collection_id,
                schema=CollectionSchema.from_json(v.schema_json),
                checkpoint=position_from_pb(v.checkpoint, v.HasField("checkpoint")),
                segments=tuple(segment_from_pb(s) for s in v.segments),
            )
            for v in resp.vchannels
        ]

    async def alloc_segment(self, meta: SegmentMeta) -> None:
        await self._call("AllocSegment", pb.AllocSegmentRequest(segment=segment_to_pb(meta)))

    async def update_state(self, segment_id: int, state: SegmentState) -> None:
        await self._call(
            "UpdateSegmentState",
            pb.UpdateSegmentStateRequest(segment_id=segment_id, state=common_pb2.SegmentState.ValueType(state)),
        )

    async def save_binlog_paths(self, meta: SegmentMeta, *, flushed: bool) -> None:
        await self._call("SaveBinlogPaths", pb.SaveBinlogPathsRequest(segment=segment_to_pb(meta), flushed=flushed))

    async def update_checkpoints(self, checkpoints: Sequence[tuple[str, Position]]) -> None:
        await self._call(
            "UpdateChannelCheckpoint",
            pb.UpdateChannelCheckpointRequest(
                checkpoints=[pb.ChannelCheckpoint(vchannel=v, checkpoint=position_to_pb(p)) for v, p in checkpoints]
            ),
        )

    async def allocate_ids(self, count: int) -> int:
        resp = await self._call("AllocID", pb.AllocIDRequest(count=count))
        assert isinstance(resp, pb.AllocIDResponse)
        return int(resp.begin)
