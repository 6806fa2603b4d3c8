"""``GetMetrics`` and ``RegisterLink`` of the proxy (mixed into ``MilvusProxy``), as Milvus 2.6 answers them.

``GetMetrics`` takes Milvus's JSON request: the type is ``req_type`` or else
``metric_type``; ``system_info`` (what attu and the SDKs ask for) is the only
type Strata serves. Its answer has Milvus's ``SystemTopology`` shape
(``pkg/util/metricsinfo``): ``nodes_info``, one node per component with its
identity, hardware, build and deploy mode, and creation and update times, and
the edges between them: the whole cluster as the active coordinator's
``cluster`` view lists its sessions (``topology.py``), or this proxy alone when
the coordinator cannot be asked. The proxy's own figures are measured (the
host's CPU count and usage, memory; ``disk`` is 0: a proxy keeps nothing on
disk); what Strata does not have is left out (no git commit, no build time, no
quota metrics); the deploy mode is ``STANDALONE`` in ``strata standalone``, else
``DISTRIBUTED`` (Milvus's names). Errors are Milvus's texts and codes: a
request without a type, and a type other than ``system_info`` (code 1200).

``RegisterLink`` is Milvus's liveness probe: success, with the deploy mode as
the status reason, once the proxy is healthy.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import grpc
import structlog
from pymilvus.grpc_gen import milvus_pb2

from common.errors import ErrorCode, NotReady, StrataError
from common.webui.source import CLUSTER, ConsoleSource, ViewUnavailable
from proxy.component import ProxyComponent, ProxyState
from proxy.hardware import CpuUsage, cpu_count, memory
from proxy.parts import ProxyParts
from proxy.rpc import milvus_rpc
from proxy.status import milvus_status, success
from proxy.topology import HostFigures, system_topology

STANDALONE = "STANDALONE"
DISTRIBUTED = "DISTRIBUTED"  # Milvus's metricsinfo.ClusterDeployMode
SYSTEM_INFO = "system_info"
ROLE = "proxy"
DEFAULT_PARTITION = "_default"


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True, kw_only=True)
class Deployment:
    """How this proxy runs: set by the composition root (``server.py``)."""

    mode: str = STANDALONE
    version: str = ""
    address: str = ""
    started: datetime = field(default_factory=_now)


def _go_time(t: datetime) -> str:
    """A time as Go's ``time.Time.String()`` prints it in UTC (what Milvus's metrics carry)."""
    return t.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f +0000 UTC")


def metric_type(raw: str) -> str:
    """The request's type, as Milvus's ``ParseMetricRequestType`` finds it (``req_type`` first)."""
    try:
        request = json.loads(raw) if raw.strip() else None
    except ValueError:
        request = None
    if isinstance(request, dict):
        for key in ("req_type", "metric_type"):
            if key in request:
                value = request[key]
                return value if isinstance(value, str) else json.dumps(value)
    raise StrataError("metric_type or req_type not found in request", ErrorCode.REFUSED)


class MetricsRPCs(ProxyParts):
    _deployment: Deployment = Deployment()
    _cpu: CpuUsage | None = None
    _views: ConsoleSource | None = None  # the coordinator's views (proxy/console.py), once the proxy serves

    def attach_cluster_views(self, views: ConsoleSource | None) -> None:
        """Answer ``system_info`` with the whole cluster, from ``views``' ``cluster`` view (None: the proxy alone)."""
        self._views = views

    def attach_deployment(self, deployment: Deployment) -> None:
        """Report ``deployment`` (mode, version, address, start time) in ``GetMetrics`` and ``RegisterLink``."""
        self._deployment = deployment
        self._cpu = CpuUsage()

    def _node_id(self) -> int:
        return self._component.node_id if self._component is not None else -1

    async def _cluster_view(self) -> dict[str, Any] | None:
        if self._views is None:
            return None
        try:
            return await self._views.view(CLUSTER)
        except ViewUnavailable as err:
            structlog.get_logger().bind(component="proxy").warning("system info without cluster", reason=str(err))
            return None

    async def _system_info(self) -> dict[str, Any]:
        d = self._deployment
        if self._cpu is None:
            self._cpu = CpuUsage()
        total, used = memory()
        cpus, usage = cpu_count(), self._cpu.percent()
        node_id = self._node_id()
        info: dict[str, Any] = {
            "has_error": False,
            "error_reason": "",
            "name": f"{ROLE}{node_id}",
            "hardware_infos": {
                "ip": d.address,
                "cpu_core_count": cpus,
                "cpu_core_usage": usage,
                "memory": total,
                "memory_usage": used,
                "disk": 0,
                "disk_usage": 0,
            },
            "system_info": {
                "system_version": "",
                "deploy_mode": d.mode,
                "build_version": d.version,
                "build_time": "",
                "used_go_version": "",
            },
            "created_time": _go_time(d.started),
            "updated_time": _go_time(_now()),
            "type": ROLE,
            "id": node_id,
            "system_configurations": {"default_partition_name": DEFAULT_PARTITION},
            "quota_metrics": None,
        }
        host = HostFigures(cpu_core_count=cpus, cpu_core_usage=usage, memory=total, memory_usage=used)
        return system_topology(info, await self._cluster_view(), host)

    @milvus_rpc(milvus_pb2.GetMetricsResponse)
    async def GetMetrics(
        self, request: milvus_pb2.GetMetricsRequest, context: grpc.aio.ServicerContext
    ) -> milvus_pb2.GetMetricsResponse:
        kind = metric_type(request.request)
        if kind != SYSTEM_INFO:
            raise StrataError(f"metric not found[metric={kind}]", ErrorCode.METRIC_NOT_FOUND)
        return milvus_pb2.GetMetricsResponse(
            status=success(), response=json.dumps(await self._system_info()), component_name=f"{ROLE}{self._node_id()}"
        )

    @milvus_rpc(milvus_pb2.RegisterLinkResponse)
    async def RegisterLink(
        self, request: milvus_pb2.RegisterLinkRequest, context: grpc.aio.ServicerContext
    ) -> milvus_pb2.RegisterLinkResponse:
        c = self._component if self._component is not None else ProxyComponent()
        if c.state is not ProxyState.HEALTHY:
            err = NotReady(f"service not ready[{ROLE}={c.node_id}][state={c.state.value}]")
            return milvus_pb2.RegisterLinkResponse(status=milvus_status(err))
        status = success()
        status.reason = self._deployment.mode
        return milvus_pb2.RegisterLinkResponse(status=status)
