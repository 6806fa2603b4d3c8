"""The cluster's health, as Milvus's ``CheckHealth`` reports it (the RPC is mixed into ``CoordinatorService``).

Milvus's coordinators ask each of their nodes for its component state and list
a reason per node that is not healthy. Here the coordinator asks every live
query node and streaming node (their sessions) the gRPC health check of the
whole server, concurrently, and lists a reason for each one that does not
answer SERVING in time, and for each pchannel no streaming node serves (its
writes would wait). Healthy means no reason. The active coordinator answering
is itself part of the answer: the proxy reports a coordinator it cannot reach.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Sequence
from dataclasses import dataclass

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from common.grpcutil import OVERALL, internal_channel, ok_status, rpc_method
from coordinator.query.coord import QueryCoordinator
from coordinator.streaming.balancer import StreamingBalancer
from protos import coordinator_pb2 as pb

CHECK_TIMEOUT_SECONDS = 3.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Member:
    """A node to ask: its role as Milvus names it (``QueryNode``, ``StreamingNode``), id and address."""

    role: str
    node_id: int
    address: str


async def unhealthy(members: Sequence[Member], *, timeout: float = CHECK_TIMEOUT_SECONDS) -> list[str]:
    """A reason per member that does not answer SERVING within ``timeout``, in ``members`` order."""
    async with asyncio.TaskGroup() as tg:
        tasks = [tg.create_task(_ask(m, timeout)) for m in members]
    return [reason for t in tasks if (reason := t.result())]


async def _ask(member: Member, timeout: float) -> str:
    channel = internal_channel(member.address)
    try:
        answer = await health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service=OVERALL), timeout=timeout
        )
    except grpc.aio.AioRpcError as err:
        return f"{member.role}={member.node_id} not healthy: {err.code().name}: {err.details()}"
    finally:
        await channel.close()
    if answer.status != health_pb2.HealthCheckResponse.SERVING:
        state = health_pb2.HealthCheckResponse.ServingStatus.Name(answer.status)
        return f"service not ready[{member.role}={member.node_id}][state={state}]"
    return ""


def unserved_pchannels(pchannels: Sequence[str], served: Collection[str]) -> list[str]:
    """A reason per pchannel no live streaming node serves."""
    return [f"pchannel {p} has no streaming node" for p in pchannels if p not in served]


class HealthRPCs:
    """``CheckHealth``."""

    _query: QueryCoordinator
    _balancer: StreamingBalancer

    @rpc_method(pb.CheckHealthResponse)
    async def CheckHealth(
        self, request: pb.CheckHealthRequest, context: grpc.aio.ServicerContext
    ) -> pb.CheckHealthResponse:
        view = self._balancer.view()
        members = [
            *(Member(role="QueryNode", node_id=n, address=a) for n, a in sorted(self._query.nodes().items())),
            *(Member(role="StreamingNode", node_id=n, address=a) for n, (a, _) in sorted(view.nodes.items())),
        ]
        served = {name for _, channels in view.nodes.values() for name, _ in channels}
        reasons = await unhealthy(members) + unserved_pchannels(self._balancer.pchannel_names, served)
        return pb.CheckHealthResponse(status=ok_status(), is_healthy=not reasons, reasons=reasons)
