"""The operations port of a role process: ``/metrics``, ``/healthz`` and ``/log/level`` over HTTP.

Milvus serves its Prometheus metrics and health on port 9091 of every
process; so does Strata (``<role>.metrics_port``). A small HTTP/1.1 server on
the event loop, one request per connection:

- ``GET /metrics``: every metric of the process, Prometheus text format;
- ``GET /healthz``: 200 ``OK`` when the role can do its job, else 500 and the
  reasons, one a line (``health`` decides: session alive, WAL not fenced,
  delegators serviceable, ...);
- ``GET /log/level``: the current level; ``PUT /log/level`` (or ``POST``) with
  the level as the body (``debug``, or ``level=debug``, or ``{"level": "debug"}``)
  changes it for the whole process, at once. A bad level is a 400 and
  changes nothing;
- whatever the ``routes`` given answer (``common/opsroutes.py``): the web
  console under ``/webui`` (``common/webui/``).

It has no authentication: it binds where the gRPC servers do (``common.host``,
127.0.0.1 unless configured), so expose it only to the monitoring network.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable

import structlog
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest

from common.logging import current_level, set_level
from common.opsroutes import OpsRoutes

#: Reasons the role cannot do its job; empty means healthy.
HealthCheck = Callable[[], Awaitable[list[str]]]
HEALTH_TIMEOUT_SECONDS = 10.0
_MAX_HEADER_BYTES = 16 << 10
_MAX_BODY_BYTES = 4 << 10
_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed", 500: "Internal Server Error",
            503: "Service Unavailable"}


async def _healthy() -> list[str]:
    return []


class OpsServer:
    """Serves the operations port until ``stop()``; ``port`` is the bound port after ``start()``."""

    def __init__(
        self, *, host: str, port: int, health: HealthCheck = _healthy, role: str = "", routes: tuple[OpsRoutes, ...] = ()
    ) -> None:
        self._host = host
        self._routes = routes
        self._requested_port = port
        self._health = health
        self._server: asyncio.Server | None = None
        self.port = 0
        self._log = structlog.get_logger().bind(component="ops", role=role)

    async def start(self) -> None:
        """Bind and serve; raises ``OSError`` if the port is taken (a role does not start half-observed)."""
        self._server = await asyncio.start_server(self._serve, self._host, self._requested_port)
        self.port = self._server.sockets[0].getsockname()[1]
        self._log.info("ops port serving", address=f"{self._host}:{self.port}")

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            status, ctype, body = await self._answer(reader)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError, ValueError):
            status, ctype, body = 400, "text/plain; charset=utf-8", b"bad request\n"
        except Exception as err:  # connection boundary: answer and keep serving
            self._log.exception("ops request failed")
            status, ctype, body = 500, "text/plain; charset=utf-8", f"{type(err).__name__}\n".encode()
        head = (
            f"HTTP/1.1 {status} {_REASONS.get(status, '')}\r\nContent-Type: {ctype}\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        )
        try:
            writer.write(head.encode("ascii") + body)
            await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()

    async def _answer(self, reader: asyncio.StreamReader) -> tuple[int, str, bytes]:
        async with asyncio.timeout(10):
            raw = await reader.readuntil(b"\r\n\r\n")
        if len(raw) > _MAX_HEADER_BYTES:
            raise ValueError("header too long")
        lines = raw.decode("latin-1").split("\r\n")
        method, target, _ = lines[0].split(" ", 2)
        headers = dict(line.split(":", 1) for line in lines[1:] if ":" in line)
        length = int({k.strip().lower(): v for k, v in headers.items()}.get("content-length", "0"))
        if not 0 <= length <= _MAX_BODY_BYTES:
            raise ValueError("body too long")
        body = await reader.readexactly(length) if length else b""
        path = target.split("?", 1)[0]
        text = "text/plain; charset=utf-8"
        match path, method:
            case "/metrics", "GET":
                return 200, CONTENT_TYPE_LATEST, generate_latest(REGISTRY)
            case "/healthz", "GET":
                reasons = await self._reasons()
                if reasons:
                    return 500, text, ("\n".join(reasons) + "\n").encode()
                return 200, text, b"OK\n"
            case "/log/level", "GET":
                return 200, text, f"{current_level()}\n".encode()
            case "/log/level", "PUT" | "POST":
                try:
                    level = set_level(_level_of(body.decode("utf-8", "replace")))
                except ValueError as err:
                    return 400, text, f"{err}\n".encode()
                self._log.warning("log level changed", level=level)
                return 200, text, f"{level}\n".encode()
            case ("/metrics" | "/healthz" | "/log/level"), _:
                return 405, text, b"method not allowed\n"
        for routes in self._routes:
            answer = await routes.answer(method, target)
            if answer is not None:
                return answer
        return 404, text, b"not found: /metrics, /healthz, /log/level\n"

    async def _reasons(self) -> list[str]:
        try:
            async with asyncio.timeout(HEALTH_TIMEOUT_SECONDS):
                return await self._health()
        except TimeoutError:
            return [f"health check did not finish in {HEALTH_TIMEOUT_SECONDS:g}s"]
        except Exception as err:  # a check that cannot be made is not a healthy answer
            self._log.warning("health check failed", error=str(err) or type(err).__name__)
            return [f"health check failed: {type(err).__name__}: {err}"]


def _level_of(body: str) -> str:
    """The level a ``PUT /log/level`` body names: ``debug``, ``level=debug`` or ``{"level": "debug"}``."""
    text = body.strip()
    if text.startswith("{"):
        try:
            doc = json.loads(text)
        except ValueError:
            raise ValueError("body is not valid JSON") from None
        value = doc.get("level") if isinstance(doc, dict) else None
        if not isinstance(value, str):
            raise ValueError('JSON body must be {"level": "LEVEL"}')
        return value
    return text.removeprefix("level=")
