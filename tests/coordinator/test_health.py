"""The coordinator's health check of its nodes (coordinator/health.py) against real gRPC servers on loopback."""

from __future__ import annotations

import grpc

from common.grpcutil import Health, start_server
from coordinator.health import Member, unhealthy, unserved_pchannels
from tests.harness import free_port


def _no_servicers(server: grpc.aio.Server) -> None:
    return None


async def test_only_members_that_do_not_answer_serving_get_a_reason() -> None:
    serving, starting = Health(), Health()
    up, up_port = await start_server(_no_servicers, health=serving)
    idle, idle_port = await start_server(_no_servicers, health=starting)  # never marked SERVING
    try:
        await serving.serving()
        members = [
            Member(role="QueryNode", node_id=1, address=f"127.0.0.1:{up_port}"),
            Member(role="QueryNode", node_id=2, address=f"127.0.0.1:{idle_port}"),
            Member(role="StreamingNode", node_id=3, address=f"127.0.0.1:{free_port()}"),  # nothing listens
        ]
        reasons = await unhealthy(members, timeout=2.0)
        assert reasons[0] == "service not ready[QueryNode=2][state=NOT_SERVING]"
        assert reasons[1].startswith("StreamingNode=3 not healthy: UNAVAILABLE")
        assert len(reasons) == 2
        assert await unhealthy(members[:1], timeout=2.0) == []
        await serving.stopping()
        assert await unhealthy(members[:1], timeout=2.0) == ["service not ready[QueryNode=1][state=NOT_SERVING]"]
    finally:
        await up.stop(None)
        await idle.stop(None)


def test_every_pchannel_without_a_streaming_node_is_a_reason() -> None:
    assert unserved_pchannels(["p0", "p1", "p2"], {"p1"}) == [
        "pchannel p0 has no streaming node",
        "pchannel p2 has no streaming node",
    ]
    assert unserved_pchannels(["p0"], {"p0"}) == []
