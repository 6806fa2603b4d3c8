"""``FlushAll`` and ``GetFlushAllState`` of the coordinator (mixed into ``CoordinatorService``).

``FlushAll`` allocates ``flush_all_ts`` first, then flushes every created
collection as ``Flush`` does (a ManualFlush on each vchannel, whose timestamps
all come after ``flush_all_ts``). ``GetFlushAllState`` is true once every
vchannel checkpoint of every collection created before ``flush_all_ts`` has
passed it: everything written before it is in object storage, as Milvus's
data coordinator decides. A collection created after ``flush_all_ts`` holds
nothing written before it, so it does not hold the answer back.
"""

from __future__ import annotations

import asyncio

import grpc

from common.grpcutil import ok_status, rpc_method
from coordinator.catalog import Catalog, CollectionMeta, CollectionState
from coordinator.data.datacoord import DataCoordinator
from coordinator.tso import TimestampOracle
from protos import coordinator_pb2 as pb


class FlushAllRPCs:
    """``FlushAll`` and ``GetFlushAllState``."""

    _catalog: Catalog
    _data: DataCoordinator
    _tso: TimestampOracle

    async def _created(self) -> list[CollectionMeta]:
        return [m for m in await self._catalog.list_collections() if m.state == CollectionState.CREATED]

    @rpc_method(pb.FlushAllResponse)
    async def FlushAll(self, request: pb.FlushAllRequest, context: grpc.aio.ServicerContext) -> pb.FlushAllResponse:
        flush_all_ts = await self._tso.allocate()
        metas = sorted(await self._created(), key=lambda m: m.collection_id)
        async with asyncio.TaskGroup() as tg:
            flushes = [tg.create_task(self._data.flush(m)) for m in metas]
        return pb.FlushAllResponse(
            status=ok_status(),
            flush_all_ts=flush_all_ts,
            collections=[
                pb.CollectionFlush(
                    name=m.name, segment_ids=f.result()[0], flush_ts=f.result()[1], db_name=m.db_name
                )
                for m, f in zip(metas, flushes, strict=True)
            ],
        )

    @rpc_method(pb.GetFlushAllStateResponse)
    async def GetFlushAllState(
        self, request: pb.GetFlushAllStateRequest, context: grpc.aio.ServicerContext
    ) -> pb.GetFlushAllStateResponse:
        ts = request.flush_all_ts
        states = {
            f"{m.db_name}/{m.name}": self._data.flush_state(m, [], ts)
            for m in await self._created()
            if m.created_ts <= ts
        }
        return pb.GetFlushAllStateResponse(status=ok_status(), flushed=all(states.values()), collections=states)
