"""Every Milvus RPC the proxy does not implement answers a Milvus status that says so.

The generated servicer base class answers UNIMPLEMENTED at the gRPC level,
which pymilvus shows as a raw RPC error (and some callers retry). Instead,
``answer_unsupported`` gives each such method a handler that returns the
method's own response type carrying ``NOT_SUPPORTED`` and the method's name
(the three responses without a status field answer gRPC UNIMPLEMENTED with
that message).
"""

from __future__ import annotations

from typing import Any

import grpc
import structlog
from google.protobuf import symbol_database
from pymilvus.grpc_gen import common_pb2, milvus_pb2, milvus_pb2_grpc

from common.errors import NotSupported
from proxy.status import milvus_status

log = structlog.get_logger().bind(component="proxy")
_SERVICE = milvus_pb2.DESCRIPTOR.services_by_name["MilvusService"]


def _response_class(full_name: str) -> type[Any]:
    return symbol_database.Default().GetSymbol(full_name)


def _handler(name: str, response: type[Any], streaming: bool) -> Any:
    reason = f"{name} is not supported by Strata"
    status = milvus_status(NotSupported(reason))
    has_status = response is common_pb2.Status or "status" in response.DESCRIPTOR.fields_by_name

    async def answer(context: grpc.aio.ServicerContext) -> Any:
        log.info("unsupported rpc", method=name)
        if not has_status:  # nowhere to put a Milvus status: the gRPC code says it
            await context.abort(grpc.StatusCode.UNIMPLEMENTED, reason)
        if response is common_pb2.Status:
            return status
        msg = response()
        msg.status.CopyFrom(status)
        return msg

    if streaming:

        async def stream(self: Any, request: Any, context: grpc.aio.ServicerContext) -> Any:
            yield await answer(context)

        return stream

    async def unary(self: Any, request: Any, context: grpc.aio.ServicerContext) -> Any:
        return await answer(context)

    return unary


def unsupported_methods(cls: type[Any]) -> list[str]:
    """Methods of the Milvus service that ``cls`` leaves to the generated base class."""
    base = milvus_pb2_grpc.MilvusServiceServicer
    return [m.name for m in _SERVICE.methods if getattr(cls, m.name, None) is getattr(base, m.name, None)]


def answer_unsupported(cls: type[Any]) -> type[Any]:
    """Class decorator: give every unimplemented Milvus RPC a NOT_SUPPORTED answer."""
    for method in _SERVICE.methods:
        if method.name not in unsupported_methods(cls):
            continue
        handler = _handler(method.name, _response_class(method.output_type.full_name), method.server_streaming)
        handler.__name__ = method.name
        setattr(cls, method.name, handler)
    return cls
