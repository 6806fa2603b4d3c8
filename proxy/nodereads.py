"""The reads a proxy asks of a query node, as one typed interface with two implementations.

``RemoteQueryNode`` calls a node over gRPC: the read plan encoded once per call
(``common/readplan_pb.py``), the query vectors as bytes (``query_vectors.py``),
the answer decoded from Arrow IPC. In standalone the proxy runs in the query
node's process, and the node's servicer is itself the in-process implementation
(``QueryNodeService.search`` / ``query``, wired by ``launch/colocated.py`` as a
``LocalNode``): the plan, the query matrix and the hits pass as they are, with
no adapter between. The router (``reads.py``) picks one per address. Both raise ``StrataError`` for a
node's error (the remote one through a checked stub, ``common/rpcstatus.py``); an
unreachable node raises ``grpc.aio.AioRpcError``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Protocol

import pyarrow as pa

from common.arrowio import ipc_to_table
from common.readplan import ReadPlan, VectorQuery
from common.readplan_pb import encode_read_plan
from protos import querynode_pb2 as pb
from protos import querynode_pb2_grpc
from segcore.segments.query_vectors import encode_queries

RPC_GRACE_SECONDS = 5.0  # a node's call may take the read's timeout (waiting for tsafe) and this much more


class NodeReads(Protocol):
    async def search(self, collection_id: int, vchannels: list[str], plan: ReadPlan,
                     query: VectorQuery) -> list[pa.Table]:
        """The hits of the delegators of ``vchannels`` on this node, unmerged across vchannels."""
        ...

    async def query(self, collection_id: int, vchannel: str, plan: ReadPlan, limit: int,
                    count_only: bool) -> tuple[pa.Table | None, int]:
        """The rows (``limit`` 0: all) or the count of the delegator of ``vchannel`` on this node."""
        ...


@dataclass(frozen=True, slots=True)
class LocalNode:
    """The query node of this process: its address and its reads, called directly."""

    address: str
    reads: NodeReads


class RemoteQueryNode:
    def __init__(self, stub: querynode_pb2_grpc.QueryNodeStub) -> None:
        self._stub = stub

    async def search(self, collection_id: int, vchannels: list[str], plan: ReadPlan,
                     query: VectorQuery) -> list[pa.Table]:
        request = pb.SearchRequest(
            collection_id=collection_id, vchannel=vchannels[0], vchannels=vchannels if len(vchannels) > 1 else [],
            read=encode_read_plan(plan), anns_field=query.anns_field, metric_type=query.metric,
            vectors=encode_queries(query.vectors), topk=query.topk, params=json.dumps(query.params),
        )
        resp = await self._stub.Search(request, timeout=plan.timeout + RPC_GRACE_SECONDS)
        return [ipc_to_table(resp.results)]

    async def query(self, collection_id: int, vchannel: str, plan: ReadPlan, limit: int,
                    count_only: bool) -> tuple[pa.Table | None, int]:
        request = pb.QueryRequest(collection_id=collection_id, vchannel=vchannel, read=encode_read_plan(plan),
                                  limit=limit, count_only=count_only)
        resp = await self._stub.Query(request, timeout=plan.timeout + RPC_GRACE_SECONDS)
        return (ipc_to_table(resp.results) if resp.results else None), int(resp.count)
