"""One REST request's calls into the proxy's ``MilvusService`` handlers, in process.

A route builds the gRPC request message and ``Call`` runs it the way the gRPC server would: the
same authentication and privilege check as ``AuthInterceptor`` (when authorization is on), then
the servicer's method with a context whose ``dbname`` metadata is the body's ``dbName``, so the
handler's checks, effects and errors are the gRPC ones. A non-zero status becomes a ``RestError``
with the status's code and reason. Each call is counted in the proxy's request metrics under its
RPC name (``proxy/request_metrics.py``), as Milvus's REST handlers count the ``Insert`` or
``Search`` they run: a REST insert moves ``milvus_proxy_insert_vectors_count`` as a gRPC one does.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

import structlog
from pymilvus.grpc_gen import common_pb2

from common.errors import CODE_TABLE, ErrorCode
from proxy.auth.authenticator import Authenticator
from proxy.auth.interceptor import CURRENT_USER, AuthInterceptor
from proxy.dbcontext import DBNAME_METADATA, request_database
from proxy.http.errors import NEED_AUTHENTICATE, NEED_AUTHENTICATE_MESSAGE, RestError
from proxy.request_metrics import observe

log = structlog.get_logger().bind(component="proxy-http")

#: ``MilvusService`` handlers by RPC name: ``(request, context) -> response``.
Servicer = Any


@dataclass(frozen=True, slots=True)
class Gate:
    """The proxy's authentication and privilege check (None: authorization is off)."""

    authenticator: Authenticator
    interceptor: AuthInterceptor


class RestContext:
    """What a ``MilvusService`` handler reads of its gRPC context, for an in-process call."""

    def __init__(self, metadata: Iterable[tuple[str, str]]) -> None:
        self._metadata = tuple(metadata)

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return self._metadata

    async def abort(self, code: Any, details: str = "") -> None:
        raise RestError(CODE_TABLE[ErrorCode.UNEXPECTED].milvus_code, details)


async def authenticate(gate: Gate | None, authorization: str | None) -> str | None:
    """The user of ``Authorization: Bearer user:password``; None with authorization off.
    Raises 401 / code 1800 as Milvus does, for a missing, malformed or wrong token."""
    if gate is None:
        return None
    scheme, _, token = (authorization or "").partition(" ")
    user, sep, password = token.strip().partition(":")
    if scheme.lower() != "bearer" or not sep or not user:
        raise RestError(NEED_AUTHENTICATE, NEED_AUTHENTICATE_MESSAGE, http_status=401)
    if not await gate.authenticator.verify(user, password):
        log.info("authentication refused", user=user)
        raise RestError(NEED_AUTHENTICATE, NEED_AUTHENTICATE_MESSAGE, http_status=401)
    return user


class Call:
    """The calls of one REST request: its user, database and deadline."""

    def __init__(self, servicer: Servicer, gate: Gate | None, *, user: str | None, db_name: str, timeout: float,
                 allow_int64: bool = True, node_id: str = "") -> None:
        """``allow_int64``: answer int64 values as JSON numbers, else strings (``int64.py``);
        ``node_id``: the proxy's, the ``node_id`` label of the request metrics ("": not counted)."""
        self._servicer = servicer
        self._node_id = node_id
        self.allow_int64 = allow_int64
        self._gate = gate
        self.user = user
        self.db_name = db_name
        self._timeout = timeout
        self._deadline = asyncio.get_running_loop().time() + timeout

    async def __call__(self, method: str, request: Any) -> Any:
        """Run ``method`` with ``request``; the response, or ``RestError`` for a non-zero status."""
        if self.db_name and "db_name" in request.DESCRIPTOR.fields_by_name and not request.db_name:
            request.db_name = self.db_name
        metadata = {DBNAME_METADATA: self.db_name} if self.db_name else {}
        if self._gate is not None:
            assert self.user is not None
            ok, message = await self._gate.interceptor.authorize(method, self.user, request, metadata)
            if not ok:
                log.info("permission denied", method=method, user=self.user)
                raise RestError(CODE_TABLE[ErrorCode.PRIVILEGE_NOT_PERMITTED].milvus_code, message, http_status=403)
        handler: Callable[[Any, RestContext], Awaitable[Any]] = getattr(self._servicer, method)
        token = CURRENT_USER.set(self.user)
        context = RestContext(metadata.items())
        started = time.perf_counter()
        try:
            remaining = self._deadline - asyncio.get_running_loop().time()
            async with asyncio.timeout(max(remaining, 0.0)):
                response = await handler(request, context)
        except TimeoutError as err:
            self._observe(method, request, context, None, started)
            raise RestError(CODE_TABLE[ErrorCode.TIMEOUT].milvus_code,
                            f"request timed out after {self._timeout:g}s (Request-Timeout)") from err
        finally:
            CURRENT_USER.reset(token)
        self._observe(method, request, context, response, started)
        status = response if isinstance(response, common_pb2.Status) else response.status
        if status.code != 0 or status.error_code != 0:
            raise RestError(status.code or CODE_TABLE[ErrorCode.UNEXPECTED].milvus_code, status.reason)
        return response

    def _observe(self, method: str, request: Any, context: RestContext, response: Any, started: float) -> None:
        if not self._node_id:
            return
        try:
            status = None if response is None else (
                response if isinstance(response, common_pb2.Status) else response.status)
            ok = status is not None and status.code == 0 and status.error_code == 0
            collection = str(request.collection_name) if "collection_name" in request.DESCRIPTOR.fields_by_name else ""
            observe(node_id=self._node_id, method=method, ok=ok, latency_ms=(time.perf_counter() - started) * 1000,
                    request=request, response=response, db=request_database(request, context),  # reads its metadata alike
                    collection=collection)
        except Exception:  # request boundary: counting must never break the answer
            log.exception("request metrics failed", method=method)
