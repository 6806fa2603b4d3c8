"""``StreamingNodeManager``: the coordinator's Assign / Remove / CollectStatus."""

from __future__ import annotations

import grpc

from common.grpcutil import ok_status, rpc_method
from protos import streaming_pb2, streaming_pb2_grpc
from streamingnode.walmanager.manager import WALManager


class ManagerService(streaming_pb2_grpc.StreamingNodeManagerServicer):
    def __init__(self, manager: WALManager) -> None:
        self._manager = manager

    @rpc_method(streaming_pb2.AssignResponse)
    async def Assign(self, request: streaming_pb2.AssignRequest, context: grpc.aio.ServicerContext) -> streaming_pb2.AssignResponse:
        await self._manager.open(request.pchannel, request.term)
        return streaming_pb2.AssignResponse(status=ok_status())

    @rpc_method(streaming_pb2.RemoveResponse)
    async def Remove(self, request: streaming_pb2.RemoveRequest, context: grpc.aio.ServicerContext) -> streaming_pb2.RemoveResponse:
        await self._manager.remove(request.pchannel, request.term)
        return streaming_pb2.RemoveResponse(status=ok_status())

    async def CollectStatus(
        self, request: streaming_pb2.CollectStatusRequest, context: grpc.aio.ServicerContext
    ) -> streaming_pb2.CollectStatusResponse:
        return streaming_pb2.CollectStatusResponse(
            wals=[
                streaming_pb2.WALStatus(pchannel=s.pchannel, term=s.term, available=s.available, error=s.error or "")
                for s in self._manager.states()
            ]
        )
