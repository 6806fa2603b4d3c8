"""``GetComponentStates`` and ``CheckHealth`` of the proxy (mixed into ``MilvusProxy``), as Milvus answers them.

``GetComponentStates`` describes this proxy: its node id (its session's
server id), role ``proxy`` and state code (``component.py``). ``CheckHealth``
first requires this proxy to be healthy (else a not-ready status and the
reason), then asks the coordinator, which checks every query and streaming
node (``coordinator/health.py``); a coordinator that cannot be reached makes the
cluster unhealthy with the reason, under a success status, as in Milvus.
Strata has no quota center (its only write limit is a full disk, refused per
request), so ``quota_states`` is always empty.
"""

from __future__ import annotations

import grpc
import structlog
from pymilvus.grpc_gen import common_pb2, milvus_pb2

from common.errors import NotReady, StrataError
from proxy.component import ProxyComponent, ProxyState
from proxy.parts import ProxyParts
from proxy.rpc import milvus_rpc
from proxy.status import milvus_status, success

log = structlog.get_logger().bind(component="proxy")

ROLE = "proxy"
_STATE_CODES = {
    ProxyState.INITIALIZING: common_pb2.Initializing,
    ProxyState.HEALTHY: common_pb2.Healthy,
    ProxyState.STOPPING: common_pb2.Stopping,
}


class HealthRPCs(ProxyParts):
    def attach_component(self, component: ProxyComponent) -> None:
        """Report ``component``'s state (the composition root updates it)."""
        self._component = component

    def _state(self) -> ProxyComponent:
        return self._component if self._component is not None else ProxyComponent()

    @milvus_rpc(milvus_pb2.ComponentStates)
    async def GetComponentStates(
        self, request: milvus_pb2.GetComponentStatesRequest, context: grpc.aio.ServicerContext
    ) -> milvus_pb2.ComponentStates:
        c = self._state()
        return milvus_pb2.ComponentStates(
            state=milvus_pb2.ComponentInfo(nodeID=c.node_id, role=ROLE, state_code=_STATE_CODES[c.state]),
            status=success(),
        )

    @milvus_rpc(milvus_pb2.CheckHealthResponse)
    async def CheckHealth(
        self, request: milvus_pb2.CheckHealthRequest, context: grpc.aio.ServicerContext
    ) -> milvus_pb2.CheckHealthResponse:
        c = self._state()
        if c.state is not ProxyState.HEALTHY:
            err = NotReady(f"service not ready[{ROLE}={c.node_id}][state={c.state.value}]")
            return milvus_pb2.CheckHealthResponse(status=milvus_status(err), isHealthy=False, reasons=[err.message])
        try:
            resp = await self._coord.check_health()
        except (StrataError, grpc.aio.AioRpcError) as err:
            detail = err.message if isinstance(err, StrataError) else f"{err.code().name}: {err.details()}"
            log.warning("check health fail", role="coordinator", error=detail)
            return milvus_pb2.CheckHealthResponse(
                status=success(), isHealthy=False, reasons=[f"check health fail for coordinator: {detail}"]
            )
        if not resp.is_healthy:
            log.warning("cluster not healthy", reasons=list(resp.reasons))
        return milvus_pb2.CheckHealthResponse(status=success(), isHealthy=resp.is_healthy, reasons=list(resp.reasons))
