"""Where a response status and a Strata error turn into each other: once per direction.

Server side, an exception becomes a status in one place: ``error_boundary`` decorates a
servicer method (``common.grpcutil.rpc_method`` for the internal services, ``proxy.rpc.milvus_rpc``
for the Milvus one, which differ only in the status they write), and ``boundary_error`` is the
rule it applies, also used where a stream answers per message (``Produce``). A ``StrataError``
keeps its code and message; anything else is logged with its traceback and answered UNEXPECTED.

Client side, a status becomes an exception in one place: ``raise_for_status`` (from
``common.errors.error_from_code``); ``checked_stub`` wraps a generated stub so that every unary
call raises it for a non-OK status, and ``common.grpcutil.StubCache`` hands out wrapped stubs.
Callers then catch the typed error (``except CollectionNotFound``) instead of reading codes.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, cast

import grpc
from structlog.typing import FilteringBoundLogger

from common.errors import ErrorCode, StrataError, error_from_code
from protos import common_pb2

S = TypeVar("S")

Describe = Callable[[Exception], str]


def ok_status() -> common_pb2.Status:
    return common_pb2.Status(code=ErrorCode.OK, reason="")


def error_status(err: StrataError) -> common_pb2.Status:
    return common_pb2.Status(code=int(err.code), reason=err.message)


def raise_for_status(status: common_pb2.Status) -> None:
    """Turn a non-OK status received from another component back into its typed error."""
    if status.code != ErrorCode.OK:
        raise error_from_code(status.code, status.reason)


def type_and_message(err: Exception) -> str:
    """``TypeError: ...``: how an internal service describes an unexpected exception."""
    return f"{type(err).__name__}: {err}"


def boundary_error(err: Exception, describe: Describe, log: FilteringBoundLogger, event: str, **fields: Any) -> StrataError:
    """What an RPC boundary answers for ``err``: ``err`` itself if it is a ``StrataError``.

    Anything else is logged as ``event`` with its traceback and ``fields``, and becomes an
    UNEXPECTED error whose message is ``describe(err)``, chained to ``err``.
    """
    if isinstance(err, StrataError):
        return err
    log.error(event, exc_info=err, **fields)
    out = StrataError(describe(err))
    out.__cause__ = err
    return out


Handler = Callable[..., Awaitable[Any]]


def error_boundary(
    response_type: type[Any],
    to_status: Callable[[StrataError], Any],
    describe: Callable[[str], Describe],
    log: FilteringBoundLogger,
) -> Callable[[Handler], Handler]:
    """Decorate a unary servicer method: any exception is answered as ``response_type(status=...)``.

    ``to_status`` writes the status of a ``StrataError``; ``describe(method name)`` words an
    unexpected exception (see ``boundary_error``). A method whose response *is* a status
    (``response_type`` is the status type) is answered with the status itself. The server keeps running.
    """

    def wrap(fn: Handler) -> Handler:
        words = describe(fn.__name__)

        @functools.wraps(fn)
        async def handler(self: Any, request: Any, context: grpc.aio.ServicerContext) -> Any:
            try:
                return await fn(self, request, context)
            except Exception as err:  # RPC boundary: answer, keep serving
                status = to_status(boundary_error(err, words, log, "rpc failed", method=fn.__name__))
            return status if isinstance(status, response_type) else response_type(status=status)

        return handler

    return wrap


Unreachable = Callable[[], None]


class _CheckedUnary:
    """A unary-unary method whose response's ``status``, when not OK, is raised as its typed error."""

    __slots__ = ("_method", "_unreachable", "_peer")

    def __init__(self, method: grpc.aio.UnaryUnaryMultiCallable, unreachable: Unreachable | None, peer: str) -> None:
        self._method = method
        self._unreachable = unreachable
        self._peer = peer

    async def __call__(self, request: Any, **kwargs: Any) -> Any:
        try:
            response = await self._method(request, **kwargs)
        except grpc.aio.AioRpcError as err:
            if self._unreachable is None or err.code() != grpc.StatusCode.UNAVAILABLE:
                raise
            self._unreachable()
            raise StrataError(f"{self._peer} unavailable: {err.details()}", ErrorCode.UNAVAILABLE) from err
        status = getattr(response, "status", None)
        if isinstance(status, common_pb2.Status):
            raise_for_status(status)
        return response


class _CheckedStub:
    def __init__(self, stub: object, unreachable: Unreachable | None, peer: str) -> None:
        self._stub = stub
        self._unreachable = unreachable
        self._peer = peer

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._stub, name)
        if isinstance(method, grpc.aio.UnaryUnaryMultiCallable):
            method = _CheckedUnary(method, self._unreachable, self._peer)
        setattr(self, name, method)  # looked up once per method
        return method


def checked_stub(stub: S, *, unreachable: Unreachable | None = None, peer: str = "peer") -> S:
    """``stub`` whose unary calls raise the typed error of a non-OK ``status`` in their response.

    A response without a ``common.Status`` field is returned as it is; streaming methods are
    passed through (their messages carry a status each: see ``raise_for_status``). A call
    then returns a coroutine, not a call object: await it (or wrap it in a task).

    With ``unreachable``, a unary call failing with gRPC's UNAVAILABLE calls it (the caller
    forgets the address) and raises ``StrataError`` UNAVAILABLE ("<peer> unavailable: ...")
    chained to the gRPC error; without it, gRPC errors pass through.
    """
    return cast(S, _CheckedStub(stub, unreachable, peer))
