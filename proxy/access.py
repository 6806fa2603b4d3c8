"""The proxy's access log and request metrics: one interceptor, outermost, around every Milvus RPC.

Per unary call it makes one observation of ``request_metrics.py`` and, with
``proxy.accessLog.enable`` (off by default, as in Milvus), writes one
``access`` line (structlog, ``component=access``), after the answer:

    event=access method=Search db=default collection=docs status=success code=0 latency_ms=3.2 peer=ipv4:127.0.0.1:5123

``code`` is the Milvus status code of the answer (``status.code``), or for a call
refused before its handler ran (authentication, privilege, a gRPC limit) the
gRPC status name with ``status=fail``. The line never carries the request's
body: no vectors, no filter values, no password, no token, no user name.
Streaming RPCs and the health service pass through untouched. A slow call is
also offered to ``slow`` (``slow_requests.py``), which the web console lists.

The RESTful API (``proxy/http/server.py``) writes the same line per request
through ``record_access``, with the REST path as ``method``
(``/v2/vectordb/entities/search``) and the answer's ``code``.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

import grpc
import structlog
from pymilvus.grpc_gen import common_pb2, milvus_pb2

from proxy.component import ProxyComponent
from proxy.dbcontext import request_database
from proxy.request_metrics import observe
from proxy.slow_requests import SlowRequests

_SERVICE = "/" + milvus_pb2.DESCRIPTOR.services_by_name["MilvusService"].full_name
log = structlog.get_logger().bind(component="access")


def _status_of(response: Any) -> common_pb2.Status | None:
    if isinstance(response, common_pb2.Status):
        return response
    status = getattr(response, "status", None)
    return status if isinstance(status, common_pb2.Status) else None


def _collection_of(request: Any) -> str:
    descriptor = getattr(request, "DESCRIPTOR", None)
    if descriptor is not None and "collection_name" in descriptor.fields_by_name:
        return str(request.collection_name)
    return ""


def record_access(
    *, method: str, db: str, collection: str, ok: bool, code: object, latency_ms: float, peer: str,
    slow: SlowRequests | None, line: bool,
) -> None:
    """Write one request's access line (when ``line``) and offer it to ``slow``: the gRPC
    interceptor's and the REST server's."""
    if line:
        log.info("access", method=method, db=db, collection=collection, status="success" if ok else "fail",
                 code=code, latency_ms=round(latency_ms, 3), peer=peer)
    if slow is not None:
        slow.offer(method=method, db=db, collection=collection, ok=ok, code=code, latency_ms=latency_ms, peer=peer)


class AccessInterceptor(grpc.aio.ServerInterceptor):
    """Counts (and with ``lines``, logs) every unary Milvus RPC; ``component`` gives the ``node_id`` label."""

    def __init__(self, component: ProxyComponent, slow: SlowRequests | None = None, *, lines: bool = False) -> None:
        self._component = component
        self._slow = slow
        self._lines = lines

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        service, _, method = handler_call_details.method.rpartition("/")
        if service != _SERVICE or handler is None or handler.unary_unary is None:
            return handler
        inner = handler.unary_unary

        async def logged(request: Any, context: grpc.aio.ServicerContext) -> Any:
            started = time.perf_counter()
            response: Any = None
            try:
                response = await inner(request, context)
                return response
            finally:
                # Also when the call was aborted (refused) or cancelled: the line is written either way.
                self._record(method, request, context, response, (time.perf_counter() - started) * 1000)

        return grpc.unary_unary_rpc_method_handler(
            logged, request_deserializer=handler.request_deserializer, response_serializer=handler.response_serializer
        )

    def _record(self, method: str, request: Any, context: grpc.aio.ServicerContext, response: Any, ms: float) -> None:
        try:
            status = _status_of(response)
            if status is not None:
                ok = status.code == 0 and status.error_code == common_pb2.Success
                code: object = status.code or (0 if ok else int(status.error_code))
            elif response is not None:
                ok, code = True, 0
            else:
                grpc_code = context.code()
                ok = False
                code = grpc_code.name if isinstance(grpc_code, grpc.StatusCode) else "CANCELLED"
            db = request_database(request, context)
            collection = _collection_of(request)
            observe(node_id=str(self._component.node_id), method=method, ok=ok, latency_ms=ms,
                    request=request, response=response, db=db, collection=collection)
            record_access(method=method, db=db, collection=collection, ok=ok, code=code, latency_ms=ms,
                          peer=context.peer(), slow=self._slow, line=self._lines)
        except Exception:  # RPC boundary: observing must never break the answer
            log.exception("access log failed", method=method)
