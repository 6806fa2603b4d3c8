"""The query node of this process, as the proxy's ``NodeReads`` (``nodereads.py``).

In standalone the proxy runs inside the query node's process
(``querynode.proxy_port``). Reads for delegators on that node call its
servicer directly: the read plan the proxy built (its filter bound once), the
query vectors as a matrix and the hits as an Arrow table, with the same errors
as over gRPC and no (de)serialisation of anything.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Protocol

import pyarrow as pa

from common.readplan import ReadPlan, VectorQuery
from segcore.segments.query_vectors import query_matrix


class QueryNodeReads(Protocol):
    """The in-process read methods of ``QueryNodeService``; they raise ``StrataError``."""

    async def search_vchannels(self, vchannels: list[str], plan: ReadPlan, query: VectorQuery) -> pa.Table: ...

    async def query_vchannel(self, vchannel: str, plan: ReadPlan, *, limit: int | None,
                             count_only: bool) -> tuple[pa.Table | None, int]: ...


class LocalQueryNode:
    def __init__(self, address: str, servicer: QueryNodeReads) -> None:
        self.address = address
        self._servicer = servicer

    async def search(self, collection_id: int, vchannels: list[str], plan: ReadPlan, query: VectorQuery) -> pa.Table:
        matrix = replace(query, vectors=query_matrix(query.vectors))  # as the node would decode it from bytes
        return await self._servicer.search_vchannels(vchannels, plan, matrix)

    async def query(self, collection_id: int, vchannel: str, plan: ReadPlan, limit: int,
                    count_only: bool) -> tuple[pa.Table | None, int]:
        return await self._servicer.query_vchannel(vchannel, plan, limit=limit or None, count_only=count_only)
