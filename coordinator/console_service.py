"""``strata.console.Console``: the web console's views, served by the active coordinator to proxies.

``GetView`` answers the view named (``coordinator/console.py``) as JSON; a
name the coordinator does not build is ``InvalidArgument``.
"""

from __future__ import annotations

import grpc

from common.errors import InvalidArgument
from common.grpcutil import ok_status, rpc_method
from coordinator.console import CoordinatorConsole, view_json
from protos import console_pb2 as pb
from protos import console_pb2_grpc


class ConsoleService(console_pb2_grpc.ConsoleServicer):
    def __init__(self, console: CoordinatorConsole) -> None:
        self._console = console

    @rpc_method(pb.ViewResponse)
    async def GetView(self, request: pb.ViewRequest, context: grpc.aio.ServicerContext) -> pb.ViewResponse:
        if request.name not in self._console.views:
            raise InvalidArgument(f"unknown view {request.name!r}: one of {', '.join(self._console.views)}")
        return pb.ViewResponse(status=ok_status(), json=view_json(await self._console.view(request.name)))
