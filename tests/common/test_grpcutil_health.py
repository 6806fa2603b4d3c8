"""``common.grpcutil.Health`` and ``LateServicers`` on a real grpc.aio server on loopback."""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1.health import aio as health_aio

from common.grpcutil import OVERALL, Health, LateServicers, internal_channel, start_server

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
SERVICE = "strata.test.Thing"


async def _status(stub: health_pb2_grpc.HealthStub, service: str) -> int:
    answer = await stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=5)
    return int(answer.status)


@pytest.fixture()
async def served() -> AsyncIterator[tuple[Health, health_pb2_grpc.HealthStub]]:
    health = Health([SERVICE])
    server, port = await start_server(lambda s: None, health=health)
    channel = internal_channel(f"127.0.0.1:{port}")
    try:
        yield health, health_pb2_grpc.HealthStub(channel)
    finally:
        await channel.close()
        await server.stop(None)


async def test_not_serving_until_the_role_says_so(served: tuple[Health, health_pb2_grpc.HealthStub]) -> None:
    health, stub = served
    assert await _status(stub, OVERALL) == NOT_SERVING
    assert await _status(stub, SERVICE) == NOT_SERVING
    await health.serving(OVERALL)
    assert await _status(stub, OVERALL) == SERVING
    assert await _status(stub, SERVICE) == NOT_SERVING
    await health.serving()
    assert await _status(stub, SERVICE) == SERVING


async def test_stopping_is_final(served: tuple[Health, health_pb2_grpc.HealthStub]) -> None:
    health, stub = served
    await health.serving()
    await health.stopping()
    assert await _status(stub, OVERALL) == NOT_SERVING
    assert await _status(stub, SERVICE) == NOT_SERVING
    await health.serving()  # a component finishing its start late must not revive a stopping server
    assert await _status(stub, OVERALL) == NOT_SERVING


async def test_unknown_names_are_refused(served: tuple[Health, health_pb2_grpc.HealthStub]) -> None:
    health, stub = served
    with pytest.raises(ValueError, match="unknown health-check name"):
        await health.serving("strata.test.Other")
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await _status(stub, "strata.test.Other")
    assert err.value.code() == grpc.StatusCode.NOT_FOUND


async def test_late_servicers_answer_unimplemented_until_added() -> None:
    # The late service here is a second health servicer under the same name: what matters is
    # that a servicer added after start() is reached, and that nothing is reached before.
    late = LateServicers()
    server, port = await start_server(lambda s: s.add_generic_rpc_handlers((late,)))
    channel = internal_channel(f"127.0.0.1:{port}")
    try:
        stub = health_pb2_grpc.HealthStub(channel)
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await _status(stub, OVERALL)
        assert err.value.code() == grpc.StatusCode.UNIMPLEMENTED
        late.add(lambda s: health_pb2_grpc.add_HealthServicer_to_server(health_aio.HealthServicer(), s))
        assert await _status(stub, OVERALL) == SERVING  # grpc_health's own initial status
    finally:
        await channel.close()
        await server.stop(None)
