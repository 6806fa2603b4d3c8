"""The proxy's RESTful API v2 server: ``POST /v2/vectordb/{resource}/{action}`` on aiohttp.

Each request: authenticate (``Authorization: Bearer user:password``, when authorization is on),
read the JSON body, run the route's calls into ``MilvusService`` (``invoke.py``) in the body's
``dbName`` with the ``Request-Timeout`` header's deadline (seconds; 30 by default, as Milvus), and
answer ``{"code": 0, "data": ...}`` or ``{"code": N, "message": "..."}`` (``errors.py``).
Every request, refused ones included, writes the proxy's access line (``proxy/access.py``:
``method`` is the REST path, ``code`` the answer's) and is offered to the slow-request log.
Lives as long as the proxy: started after the gRPC server, stopped before it.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import time
from collections.abc import Callable
from typing import Any

import structlog
from aiohttp import web

from common.names import DEFAULT_DATABASE
from proxy.access import record_access
from proxy.http import (
    aliases,
    collections,
    databases,
    entities,
    imports,
    indexes,
    maintenance,
    partitions,
    privilege_groups,
    properties,
    rbac,
    resource_groups,
)
from proxy.http.body import Body
from proxy.http.errors import NOT_JSON, NOT_JSON_MESSAGE, RestError, invalid
from proxy.http.int64 import HEADER as INT64_HEADER
from proxy.http.int64 import allow_int64
from proxy.http.invoke import Call, Gate, Servicer, authenticate
from proxy.http.reply import Reply, Route
from proxy.http.rows import jsonable
from proxy.slow_requests import SlowRequests

PREFIX = "/v2/vectordb"
DEFAULT_TIMEOUT_SECONDS = 30.0  # Milvus's HTTPDefaultTimeout
INLINE_JSON_CHARS = 1 << 20  # bodies and answers up to 1 MiB are (de)serialised on the event loop

# Resources of two path segments (``collections/fields``, ``jobs/import``) are one key here.
ROUTES: dict[str, dict[str, Route]] = {
    "collections": {**collections.ROUTES, **properties.COLLECTION_ROUTES, **maintenance.ROUTES},
    "collections/fields": properties.FIELD_ROUTES,
    "entities": entities.ROUTES,
    "indexes": {**indexes.ROUTES, **properties.INDEX_ROUTES},
    "partitions": partitions.ROUTES,
    "aliases": aliases.ROUTES,
    "databases": {**databases.ROUTES, **properties.DATABASE_ROUTES},
    "users": rbac.USER_ROUTES,
    "roles": rbac.ROLE_ROUTES,
    "privilege_groups": privilege_groups.ROUTES,
    "jobs/import": imports.ROUTES,
    "resource_groups": resource_groups.ROUTES,
}


def _timeout(header: str | None) -> float:
    if not header:
        return DEFAULT_TIMEOUT_SECONDS
    try:
        seconds = float(header)
    except ValueError:
        seconds = 0.0
    if not seconds > 0:
        raise invalid(f"invalid Request-Timeout header {header!r}: a positive number of seconds")
    return seconds


async def _body(request: web.Request) -> Body:
    text = await request.text()
    if not text.strip():
        return Body({})
    try:
        # A large body is parsed in a thread: the loop keeps serving (the gRPC port too).
        values = json.loads(text) if len(text) <= INLINE_JSON_CHARS else await asyncio.to_thread(json.loads, text)
    except ValueError as err:
        raise RestError(NOT_JSON, f"{NOT_JSON_MESSAGE}, error: {err}") from err
    if not isinstance(values, dict):
        raise RestError(NOT_JSON, f"{NOT_JSON_MESSAGE}, error: the body must be a JSON object")
    return Body(values)


def _peer(request: web.Request) -> str:
    """The client's address as gRPC names a peer (``ipv4:127.0.0.1:5123``), for the access line."""
    peer = request.transport.get_extra_info("peername") if request.transport is not None else None
    if not peer:
        return request.remote or ""
    host, port = peer[0], peer[1]
    return f"ipv6:[{host}]:{port}" if ":" in host else f"ipv4:{host}:{port}"


def _json(payload: dict[str, Any], status: int = 200) -> web.Response:
    return web.Response(text=json.dumps(payload, default=jsonable), status=status, content_type="application/json")


async def _answer(reply: Reply) -> web.Response:
    """The success answer; a large one (many rows or hits) is serialised in a thread."""
    payload = {"code": 0, "data": reply.data, **reply.extra}
    if isinstance(reply.data, list) and len(reply.data) > 1000:
        return await asyncio.to_thread(_json, payload)
    return _json(payload)


class HttpServer:
    def __init__(self, servicer: Servicer, gate: Gate | None, *, host: str, port: int, max_body: int,
                 ssl_context: ssl.SSLContext | None = None, slow: SlowRequests | None = None,
                 node_id: Callable[[], int] | None = None, access_lines: bool = False) -> None:
        """``gate``: the proxy's authenticator and privilege check (None: authorization off);
        ``max_body``: the largest body taken (the gRPC port's ``serverMaxRecvSize``);
        ``ssl_context``: serve HTTPS only (the proxy's TLS, ``proxy/auth/tls.py``);
        ``slow``: the proxy's slow-request log, offered every request (as the gRPC port's);
        ``node_id``: the proxy's id, to count each call into the servicer in the request metrics;
        ``access_lines``: write each request's access line (``proxy.accessLog.enable``)."""
        self._servicer = servicer
        self._slow = slow
        self._access_lines = access_lines
        self._node_id = node_id
        self._gate = gate
        self._host = host
        self._port = port
        self._max_body = max_body
        self._ssl_context = ssl_context
        self._runner: web.AppRunner | None = None
        self.address = ""
        self._log = structlog.get_logger().bind(component="proxy-http")

    async def start(self) -> None:
        app = web.Application(client_max_size=self._max_body)
        app.router.add_post(PREFIX + "/{resource}/{action}", self._handle)
        app.router.add_post(PREFIX + "/{resource}/{sub}/{action}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self._host, self._port, ssl_context=self._ssl_context)
        await site.start()
        port = self._runner.addresses[0][1]  # the bound port (port 0: a free one)
        self.address = f"{self._host}:{port}"
        self._log.info("restful api serving", address=self.address, https=self._ssl_context is not None)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _handle(self, request: web.Request) -> web.Response:
        started = time.perf_counter()
        seen: dict[str, str] = {}  # the body's database and collection, once read
        code: object = "CANCELLED"
        try:
            response, code = await self._serve(request, seen)
            return response
        except web.HTTPException as err:  # aiohttp's own refusals (a body over the size limit)
            code = f"HTTP_{err.status}"
            raise
        finally:
            # Also for a refused or cancelled request: the line is written either way, never with the body.
            record_access(method=request.path, db=seen.get("db") or DEFAULT_DATABASE,
                          collection=seen.get("collection", ""), ok=code == 0, code=code,
                          latency_ms=(time.perf_counter() - started) * 1000, peer=_peer(request), slow=self._slow,
                          line=self._access_lines)

    async def _serve(self, request: web.Request, seen: dict[str, str]) -> tuple[web.Response, object]:
        info = request.match_info
        resource = f"{info['resource']}/{info['sub']}" if "sub" in info else info["resource"]
        action = info["action"]
        route = ROUTES.get(resource, {}).get(action)
        if route is None:
            return _json({"code": 404, "message": f"no such endpoint: {request.path}"}, status=404), 404
        try:
            user = await authenticate(self._gate, request.headers.get("Authorization"))
            body = await _body(request)
            seen["db"] = body.text("dbName")
            collection = body.raw("collectionName")
            seen["collection"] = collection if isinstance(collection, str) else ""
            call = Call(self._servicer, self._gate, user=user, db_name=body.text("dbName"),
                        timeout=_timeout(request.headers.get("Request-Timeout")),
                        allow_int64=allow_int64(request.headers.get(INT64_HEADER)),
                        node_id=str(self._node_id()) if self._node_id is not None else "")
            result = await route(call, body)
        except RestError as err:
            return _json({"code": err.code, "message": err.message}, status=err.http_status), err.code
        except web.HTTPException:
            raise
        except Exception as err:  # request boundary: a crash answers an error, the server keeps serving
            self._log.exception("restful request failed", path=request.path)
            message = f"internal error in {request.path}: {type(err).__name__}: {err}"
            return _json({"code": 5, "message": message}), 5
        return await _answer(result if isinstance(result, Reply) else Reply(result)), 0
