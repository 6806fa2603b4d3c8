"""The operations port on loopback: its answers, bad requests refused, the log level changed and read back."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from common.logging import current_level, set_level
from common.opsserver import HealthCheck, OpsServer


async def _request(port: int, raw: bytes) -> tuple[int, str]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(raw)
    await writer.drain()
    answer = await reader.read()
    writer.close()
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split(b" ")[1]), body.decode()


def _get(path: str) -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode()


def _put(path: str, body: bytes) -> bytes:
    return f"PUT {path} HTTP/1.1\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body


Serve = Callable[[HealthCheck], Awaitable[int]]


@pytest.fixture()
async def serve() -> AsyncIterator[Serve]:
    servers: list[OpsServer] = []

    async def start(health: HealthCheck) -> int:
        server = OpsServer(host="127.0.0.1", port=0, health=health)
        await server.start()
        servers.append(server)
        return server.port

    level = current_level()
    yield start
    set_level(level)
    for s in servers:
        await s.stop()


async def test_healthz_reports_the_reasons_or_ok(serve: Serve) -> None:
    reasons: list[str] = []

    async def health() -> list[str]:
        return list(reasons)

    port = await serve(health)
    assert await _request(port, _get("/healthz")) == (200, "OK\n")
    reasons.extend(["wal p1 term 3 unavailable: fenced", "querynode etcd session lost"])
    assert await _request(port, _get("/healthz")) == (500, "wal p1 term 3 unavailable: fenced\nquerynode etcd session lost\n")


async def test_a_failing_health_check_is_unhealthy_not_a_crash(serve: Serve) -> None:
    async def broken() -> list[str]:
        raise RuntimeError("etcd away")

    port = await serve(broken)
    status, body = await _request(port, _get("/healthz"))
    assert status == 500 and "RuntimeError: etcd away" in body
    assert (await _request(port, _get("/metrics")))[0] == 200  # still serving


async def test_bad_requests_are_refused(serve: Serve) -> None:
    async def ok() -> list[str]:
        return []

    port = await serve(ok)
    assert (await _request(port, _get("/nowhere")))[0] == 404
    assert (await _request(port, b"DELETE /metrics HTTP/1.1\r\n\r\n"))[0] == 405
    assert (await _request(port, b"nonsense\r\n\r\n"))[0] == 400
    assert (await _request(port, _put("/log/level", b"x" * 10_000)))[0] == 400
    assert (await _request(port, _get("/healthz")))[0] == 200


async def test_log_level_changes_for_the_process_and_a_bad_one_changes_nothing(
    serve: Serve,
) -> None:
    async def ok() -> list[str]:
        return []

    port = await serve(ok)
    set_level("info")
    assert await _request(port, _put("/log/level", b"DEBUG")) == (200, "debug\n")
    assert current_level() == "debug"
    status, body = await _request(port, _put("/log/level", b'{"level": "verbose"}'))
    assert status == 400 and "log level must be one of" in body
    assert await _request(port, _get("/log/level")) == (200, "debug\n")
    assert await _request(port, _put("/log/level", b"level=warn")) == (200, "warning\n")
