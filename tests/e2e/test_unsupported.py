"""Every Milvus RPC Strata does not implement answers a Milvus status that says so, and nothing breaks.

Each such method of ``MilvusService`` is called with an empty request over a
raw gRPC channel; the answer must be the method's own response type with a
NOT_SUPPORTED status naming the method. Then pymilvus calls one and sees a
``MilvusException``, and the server still serves.
"""

from __future__ import annotations

import grpc
import pytest
from google.protobuf import symbol_database
from pymilvus import MilvusClient, MilvusException
from pymilvus.grpc_gen import common_pb2, milvus_pb2

from common.errors import CODE_TABLE, ErrorCode
from proxy.service import MilvusProxy
from proxy.unsupported import unsupported_methods
from tests.harness import Standalone

SERVICE = milvus_pb2.DESCRIPTOR.services_by_name["MilvusService"]


def _fallback(name: str) -> bool:
    return getattr(MilvusProxy, name).__qualname__.startswith("_handler.")


def test_unsupported_methods_answer_not_supported(standalone: Standalone) -> None:
    fallbacks = [m for m in SERVICE.methods if _fallback(m.name)]
    assert not _fallback("Search") and not _fallback("Insert")
    assert set(unsupported_methods(MilvusProxy)) == set()  # after the decorator, every method has an answer
    db = symbol_database.Default()
    checked = 0
    with grpc.insecure_channel(standalone.uri.removeprefix("http://")) as channel:
        for method in fallbacks:
            if method.server_streaming or method.client_streaming:
                continue
            request = db.GetSymbol(method.input_type.full_name)
            response = db.GetSymbol(method.output_type.full_name)
            call = channel.unary_unary(
                f"/{SERVICE.full_name}/{method.name}",
                request_serializer=request.SerializeToString,
                response_deserializer=response.FromString,
            )
            if response is not common_pb2.Status and "status" not in response.DESCRIPTOR.fields_by_name:
                with pytest.raises(grpc.RpcError) as err:
                    call(request(), timeout=10)
                assert err.value.code() == grpc.StatusCode.UNIMPLEMENTED, method.name
                continue
            answer = call(request(), timeout=10)
            status = answer if response is common_pb2.Status else answer.status
            assert status.code == CODE_TABLE[ErrorCode.NOT_SUPPORTED].milvus_code, method.name
            assert status.reason == f"{method.name} is not supported by Strata"
            checked += 1
    assert checked > 10


def test_pymilvus_sees_a_clear_error_and_the_server_keeps_serving(milvus: MilvusClient) -> None:
    with pytest.raises(MilvusException, match="not supported"):
        milvus.get_replicate_configuration()
    assert isinstance(milvus.list_collections(), list)
