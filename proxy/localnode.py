"""The query node of this process, called the way a gRPC stub is called.

In standalone the proxy runs inside the query node's process
(``querynode.proxy_port``). Reads for delegators on that node call its
servicer directly: the same requests, the same errors (raised, as a checked stub
raises them), without the gRPC hop and the (de)serialisation of both messages
(search hits stay an Arrow table).
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, Protocol

import pyarrow as pa

from common.rpcstatus import raise_for_status
from protos import querynode_pb2 as pb


class QueryNodeReads(Protocol):
    """The read methods of ``QueryNodeService``: (request, context) -> response; they never use
    the gRPC context."""

    def Search(self, *args: Any, **kwargs: Any) -> Awaitable[Any]: ...

    def Query(self, *args: Any, **kwargs: Any) -> Awaitable[Any]: ...

    async def search_table(self, request: pb.SearchRequest) -> pa.Table: ...


class LocalQueryNode:
    def __init__(self, address: str, servicer: QueryNodeReads) -> None:
        self.address = address
        self._servicer = servicer

    async def search_table(self, request: pb.SearchRequest) -> pa.Table:
        """The hits as the Arrow table the servicer builds (no IPC round trip); raises ``StrataError``."""
        return await self._servicer.search_table(request)

    async def Query(self, request: pb.QueryRequest, timeout: float | None = None) -> pb.QueryResponse:
        """As a checked stub's ``Query`` (``common.rpcstatus.checked_stub``): a refused read raises its typed error."""
        response: pb.QueryResponse = await self._servicer.Query(request, None)
        raise_for_status(response.status)
        return response
