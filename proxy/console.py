"""The proxy's web console views (``common/webui/``): the cluster's from the coordinator, its own slow requests.

``cluster``, ``collections``, ``querynodes`` and ``jobs`` are asked of the
active coordinator (``strata.console.Console/GetView``, built by
``coordinator/console.py``), so any proxy's operations port shows the whole
cluster; ``slow_requests`` are this proxy's (``slow_requests.py``). A
coordinator that cannot be reached makes its views unavailable, with the reason,
while ``slow_requests`` still answers.
"""

from __future__ import annotations

import json

import grpc

from common.coordclient import CoordinatorClient
from common.errors import StrataError
from common.webui.source import CLUSTER, COLLECTIONS, JOBS, QUERYNODES, SLOW_REQUESTS, View, ViewUnavailable
from protos import console_pb2, console_pb2_grpc
from proxy.slow_requests import SlowRequests

VIEW_TIMEOUT_SECONDS = 10.0


class ProxyConsole:
    views = (CLUSTER, COLLECTIONS, QUERYNODES, JOBS, SLOW_REQUESTS)

    def __init__(self, coord: CoordinatorClient, slow: SlowRequests) -> None:
        self._coord = coord
        self._slow = slow

    async def view(self, name: str) -> View:
        if name == SLOW_REQUESTS:
            return self._slow.view()
        try:
            # A checked stub: a refusal raises its error; an unreachable coordinator is forgotten
            # (the next view reads the leader key again) and raises UNAVAILABLE.
            stub = await self._coord.stub_of(console_pb2_grpc.ConsoleStub, timeout=VIEW_TIMEOUT_SECONDS)
            answer = await stub.GetView(console_pb2.ViewRequest(name=name), timeout=VIEW_TIMEOUT_SECONDS)
        except grpc.aio.AioRpcError as err:
            raise ViewUnavailable(f"coordinator: {err.code().name}: {err.details()}") from err
        except StrataError as err:
            raise ViewUnavailable(f"coordinator: {err.message}") from err
        doc = json.loads(answer.json)
        if not isinstance(doc, dict):
            raise ViewUnavailable("coordinator answered a view that is not a JSON object")
        return doc
