"""The proxy's in-process query node raises a refused read as a checked gRPC stub does."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from common.errors import ErrorCode, ReadTimeout
from common.grpcutil import rpc_method
from protos import querynode_pb2 as pb
from proxy.localnode import LocalQueryNode


class Servicer:
    """The read methods of a query node's servicer, decorated as ``QueryNodeService``'s are."""

    @rpc_method(pb.QueryResponse)
    async def Query(self, request: pb.QueryRequest, context: Any) -> pb.QueryResponse:
        if request.vchannel == "frozen":
            raise ReadTimeout("query frozen: data is not yet readable at the requested consistency")
        return pb.QueryResponse(count=3)

    @rpc_method(pb.SearchResponse)
    async def Search(self, request: pb.SearchRequest, context: Any) -> pb.SearchResponse:
        return pb.SearchResponse()

    async def search_table(self, request: pb.SearchRequest) -> pa.Table:
        return pa.table({})


async def test_a_refused_local_query_raises_its_typed_error() -> None:
    node = LocalQueryNode("127.0.0.1:1", Servicer())
    with pytest.raises(ReadTimeout, match="not yet readable") as info:
        await node.Query(pb.QueryRequest(vchannel="frozen"))
    assert info.value.code == ErrorCode.TIMEOUT


async def test_an_answered_local_query_returns_the_response() -> None:
    node = LocalQueryNode("127.0.0.1:1", Servicer())
    assert (await node.Query(pb.QueryRequest(vchannel="v0"))).count == 3
