"""The web console's routes on a real operations port, with a fake view source: page, views, errors."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import pytest

from common.opsserver import OpsServer
from common.ports import free_port
from common.webui.console import WebConsole
from common.webui.source import CLUSTER, JOBS, ConsoleSource, View, ViewUnavailable


class FakeSource:
    """Serves ``cluster`` (a fixed document) and ``jobs`` (whatever ``jobs_error`` says)."""

    views = (CLUSTER, JOBS)

    def __init__(self) -> None:
        self.jobs_error: Exception | None = None

    async def view(self, name: str) -> View:
        if name == JOBS and self.jobs_error is not None:
            raise self.jobs_error
        return {"view": name, "roles": {"proxy": 1}}


async def _request(port: int, method: str, path: str) -> tuple[int, str, str]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"{method} {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    await writer.drain()
    answer = await reader.read()
    writer.close()
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    ctype = next(line.split(":", 1)[1].strip() for line in lines if line.lower().startswith("content-type:"))
    return int(lines[0].split(" ")[1]), ctype, body.decode()


@pytest.fixture()
async def served() -> AsyncIterator[tuple[int, FakeSource, list[ConsoleSource | None]]]:
    source = FakeSource()
    current: list[ConsoleSource | None] = [source]
    server = OpsServer(host="127.0.0.1", port=free_port(), routes=(WebConsole(lambda: current[0], role="proxy"),))
    await server.start()
    try:
        yield server.port, source, current
    finally:
        await server.stop()


async def test_the_page_and_its_script_are_served(served: tuple[int, FakeSource, list[ConsoleSource | None]]) -> None:
    port, _, _ = served
    for path in ("/webui", "/webui/", "/webui/index.html"):
        status, ctype, body = await _request(port, "GET", path)
        assert status == 200 and ctype.startswith("text/html") and '<table id="collections-table">' in body
    status, ctype, body = await _request(port, "GET", "/webui/console.js")
    assert status == 200 and "javascript" in ctype and "/webui/api" in body
    status, ctype, _ = await _request(port, "GET", "/webui/console.css")
    assert status == 200 and ctype.startswith("text/css")
    # The port's own routes still answer; unknown paths are still 404.
    assert (await _request(port, "GET", "/healthz"))[0] == 200
    assert (await _request(port, "GET", "/webui/nothing.js"))[0] == 404
    assert (await _request(port, "GET", "/other"))[0] == 404


async def test_views_answer_json_and_say_which_are_served(
    served: tuple[int, FakeSource, list[ConsoleSource | None]],
) -> None:
    port, _, _ = served
    status, ctype, body = await _request(port, "GET", "/webui/api")
    assert status == 200 and ctype == "application/json"
    assert json.loads(body) == {"role": "proxy", "views": ["cluster", "jobs"]}
    status, _, body = await _request(port, "GET", "/webui/api/cluster?x=1")
    assert status == 200 and json.loads(body) == {"view": "cluster", "roles": {"proxy": 1}}


async def test_bad_requests_get_a_clear_error_and_the_port_keeps_serving(
    served: tuple[int, FakeSource, list[ConsoleSource | None]],
) -> None:
    port, source, current = served
    status, _, body = await _request(port, "GET", "/webui/api/bogus")
    assert status == 404 and "unknown view 'bogus'" in json.loads(body)["error"]
    status, _, body = await _request(port, "GET", "/webui/api/slow_requests")
    assert status == 404 and json.loads(body)["error"] == "view 'slow_requests' is not served by proxy"
    assert (await _request(port, "POST", "/webui/api/cluster"))[0] == 405
    source.jobs_error = ViewUnavailable("coordinator: UNAVAILABLE: connection refused")
    status, _, body = await _request(port, "GET", "/webui/api/jobs")
    assert status == 503 and json.loads(body)["error"] == "coordinator: UNAVAILABLE: connection refused"
    source.jobs_error = RuntimeError("boom")
    status, _, body = await _request(port, "GET", "/webui/api/jobs")
    assert status == 500 and json.loads(body)["error"] == "RuntimeError: boom"
    current[0] = None  # the role has not started serving yet
    status, _, body = await _request(port, "GET", "/webui/api/cluster")
    assert status == 503 and "not serving yet" in json.loads(body)["error"]
    assert json.loads((await _request(port, "GET", "/webui/api"))[2])["views"] == []
    current[0] = source
    assert (await _request(port, "GET", "/webui/api/cluster"))[0] == 200
