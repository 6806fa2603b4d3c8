"""One status mapping per direction, over a real gRPC server on loopback.

Server side, ``rpc_method`` (``error_boundary``) answers a ``StrataError`` with its code and
message and anything else with UNEXPECTED; client side, a ``StubCache`` stub (``checked_stub``)
raises the typed error of a non-OK status and leaves streaming calls alone.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from pymilvus.grpc_gen import common_pb2 as milvus_common_pb2
from pymilvus.grpc_gen import milvus_pb2
from structlog.testing import capture_logs

from common.errors import ChannelNotExist, ErrorCode, InvalidArgument, StrataError
from common.grpcutil import StubCache, rpc_method, start_server
from common.rpcstatus import ok_status
from protos import common_pb2, streaming_pb2, streaming_pb2_grpc
from proxy.rpc import milvus_rpc

pytestmark = pytest.mark.timeout(30)


class Handler(streaming_pb2_grpc.StreamingNodeHandlerServicer):
    @rpc_method(streaming_pb2.GetCollectionRowsResponse)
    async def GetCollectionRows(
        self, request: streaming_pb2.GetCollectionRowsRequest, context: grpc.aio.ServicerContext
    ) -> streaming_pb2.GetCollectionRowsResponse:
        if request.pchannel == "missing":
            raise ChannelNotExist("pchannel missing is not open on this node")
        if request.pchannel == "crash":
            raise RuntimeError("boom")
        return streaming_pb2.GetCollectionRowsResponse(status=ok_status(), rows=7)

    async def Consume(
        self, request: streaming_pb2.ConsumeRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[streaming_pb2.ConsumeResponse]:
        yield streaming_pb2.ConsumeResponse(status=common_pb2.Status(code=ErrorCode.WAL_CLOSED, reason="closed"))


@pytest.fixture
async def stub() -> AsyncIterator[Any]:
    server, port = await start_server(lambda s: streaming_pb2_grpc.add_StreamingNodeHandlerServicer_to_server(Handler(), s))
    stubs = StubCache(streaming_pb2_grpc.StreamingNodeHandlerStub)
    try:
        yield stubs.get(f"127.0.0.1:{port}")
    finally:
        await stubs.close()
        await server.stop(grace=None)


def _rows(pchannel: str) -> streaming_pb2.GetCollectionRowsRequest:
    return streaming_pb2.GetCollectionRowsRequest(pchannel=pchannel, term=1, collection_id=1)


async def test_an_ok_answer_is_returned(stub: Any) -> None:
    resp = await stub.GetCollectionRows(_rows("p0"), timeout=5)
    assert resp.rows == 7


async def test_a_typed_error_crosses_the_edge_as_the_same_type_code_and_message(stub: Any) -> None:
    with pytest.raises(ChannelNotExist, match="^pchannel missing is not open on this node$") as info:
        await stub.GetCollectionRows(_rows("missing"), timeout=5)
    assert info.value.code == ErrorCode.CHANNEL_NOT_EXIST


async def test_an_unexpected_server_error_is_logged_once_and_arrives_as_unexpected(stub: Any) -> None:
    with capture_logs() as logs, pytest.raises(StrataError) as info:
        await stub.GetCollectionRows(_rows("crash"), timeout=5)
    assert info.value.code == ErrorCode.UNEXPECTED
    assert info.value.message == "RuntimeError: boom"
    failed = [e for e in logs if e["event"] == "rpc failed"]
    assert len(failed) == 1 and failed[0]["method"] == "GetCollectionRows"


async def test_a_streaming_call_is_passed_through_with_its_statuses(stub: Any) -> None:
    call = stub.Consume(streaming_pb2.ConsumeRequest(pchannel="p0", term=1))
    resp = await call.read()
    assert resp.status.code == ErrorCode.WAL_CLOSED  # a stream's statuses are its reader's to check
    call.cancel()


class MilvusLike:
    @milvus_rpc(milvus_pb2.BoolResponse)
    async def Has(self, request: Any, context: Any) -> milvus_pb2.BoolResponse:
        raise InvalidArgument(f"bad name {request}")

    @milvus_rpc(milvus_common_pb2.Status)
    async def Drop(self, request: Any, context: Any) -> milvus_common_pb2.Status:
        raise KeyError("k")


async def test_the_milvus_boundary_writes_milvus_codes_into_the_response_or_the_bare_status() -> None:
    svc = MilvusLike()
    has = await svc.Has("x", None)
    assert (has.status.code, has.status.error_code, has.status.reason) == (1100, 5, "bad name x")
    with capture_logs() as logs:
        drop = await svc.Drop("x", None)
    assert isinstance(drop, milvus_common_pb2.Status)
    assert (drop.code, drop.reason) == (5, "internal error in Drop: KeyError: 'k'")
    assert [e["method"] for e in logs if e["event"] == "rpc failed"] == ["Drop"]
