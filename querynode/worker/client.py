"""How a delegator reaches the workers holding its sealed segments.

One interface (``WorkerHandle``) with two implementations, chosen per address:
the worker of the delegator's own node is the node's ``Worker`` itself, called
directly (no gRPC, no Arrow IPC round trip, no adapter: the read plan and the
query vectors passed as they are); other workers over gRPC (``RemoteWorker``:
the plan encoded once per call by ``common/readplan_pb.py``, the vectors by
``query_vectors.py``; the node's handlers call its ``Worker`` with the same
arguments). Errors
come back typed (checked stubs, ``common/rpcstatus.py``; the local worker raises
the same ``StrataError``s); a worker that cannot be reached raises
``grpc.aio.AioRpcError``. Protobuf stops here.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Protocol

import numpy as np
import pyarrow as pa

from common.arrowio import ipc_to_table, table_to_ipc
from common.grpcutil import StubCache
from common.readplan import ReadPlan, VectorQuery
from common.readplan_pb import encode_read_plan
from common.schema import CollectionSchema
from common.segment import SegmentMeta
from common.segment_pb import segment_to_pb
from protos import querynode_pb2 as pb
from protos import querynode_pb2_grpc
from querynode.worker.cuts import encode_cuts
from querynode.worker.worker import Worker
from segcore.segments.query_vectors import encode_queries

LOAD_TIMEOUT = 600.0
CALL_TIMEOUT = 60.0

Cuts = dict[int, tuple[pa.Array, np.ndarray]]  # segment -> (keys, timestamps) whose older versions end


def _cuts(cuts: Cuts) -> list[pb.SegmentCuts]:
    return [pb.SegmentCuts(segment_id=sid, cuts=encode_cuts(p, t)) for sid, (p, t) in cuts.items() if len(p)]


class WorkerHandle(Protocol):
    """One worker as a delegator uses it; the methods raise ``StrataError`` (or ``AioRpcError``).
    ``load`` loads ``segments`` with their ``cuts`` applied before they are readable; a read waits
    up to ``plan.timeout`` for the worker."""

    async def load(self, collection_id: int, schema: CollectionSchema, segments: Sequence[SegmentMeta],
                   indexes: Sequence[pb.IndexSpec], cuts: Cuts) -> None: ...

    async def update_schema(self, collection_id: int, schema: CollectionSchema) -> None: ...

    async def release(self, collection_id: int, segment_ids: Sequence[int]) -> None: ...

    async def cut(self, collection_id: int, cuts: Cuts) -> None: ...

    async def search(self, collection_id: int, segment_ids: Sequence[int], read_ts: int, plan: ReadPlan,
                     query: VectorQuery) -> pa.Table: ...

    async def query(self, collection_id: int, segment_ids: Sequence[int], read_ts: int, plan: ReadPlan,
                    limit: int | None, count_only: bool) -> tuple[pa.Table | None, int]: ...


class RemoteWorker:
    """The worker of another query node, over gRPC."""

    def __init__(self, stub: querynode_pb2_grpc.QueryNodeStub) -> None:
        self._stub = stub

    async def load(self, collection_id: int, schema: CollectionSchema, segments: Sequence[SegmentMeta],
                   indexes: Sequence[pb.IndexSpec], cuts: Cuts) -> None:
        request = pb.LoadSegmentsRequest(
            collection_id=collection_id, schema_json=schema.to_json(), segments=[segment_to_pb(m) for m in segments],
            indexes=list(indexes), cuts=_cuts(cuts),
        )
        await self._stub.LoadSegments(request, timeout=LOAD_TIMEOUT)

    async def update_schema(self, collection_id: int, schema: CollectionSchema) -> None:
        """A load of no segment: the RPC form of ``Worker.update_schema``."""
        await self.load(collection_id, schema, (), (), {})

    async def release(self, collection_id: int, segment_ids: Sequence[int]) -> None:
        request = pb.ReleaseSegmentsRequest(collection_id=collection_id, segment_ids=list(segment_ids))
        await self._stub.ReleaseSegments(request, timeout=CALL_TIMEOUT)

    async def cut(self, collection_id: int, cuts: Cuts) -> None:
        request = pb.DeleteRequest(collection_id=collection_id, cuts=_cuts(cuts))
        await self._stub.Delete(request, timeout=CALL_TIMEOUT)

    async def search(self, collection_id: int, segment_ids: Sequence[int], read_ts: int, plan: ReadPlan,
                     query: VectorQuery) -> pa.Table:
        request = pb.SearchSegmentsRequest(
            collection_id=collection_id, segment_ids=list(segment_ids), read_ts=read_ts, read=encode_read_plan(plan),
            anns_field=query.anns_field, metric_type=query.metric, vectors=encode_queries(query.vectors),
            topk=query.topk, params=json.dumps(query.params),
        )
        resp = await self._stub.SearchSegments(request, timeout=plan.timeout)
        return ipc_to_table(resp.results)

    async def query(self, collection_id: int, segment_ids: Sequence[int], read_ts: int, plan: ReadPlan,
                    limit: int | None, count_only: bool) -> tuple[pa.Table | None, int]:
        request = pb.QuerySegmentsRequest(
            collection_id=collection_id, segment_ids=list(segment_ids), read_ts=read_ts, read=encode_read_plan(plan),
            limit=limit or 0, count_only=count_only,
        )
        resp = await self._stub.QuerySegments(request, timeout=plan.timeout)
        return (ipc_to_table(resp.results) if resp.results else None), int(resp.count)


class WorkerClient:
    """The workers by address: this node's own (``local_address``) in-process, the others over gRPC."""

    def __init__(self, local: Worker | None = None, local_address: str = "") -> None:
        self._stubs = StubCache(querynode_pb2_grpc.QueryNodeStub)
        self._local = local
        self.local_address = local_address

    def at(self, address: str) -> WorkerHandle:
        if self._local is not None and address == self.local_address:
            return self._local
        return RemoteWorker(self._stubs.get(address))

    async def close(self) -> None:
        await self._stubs.close()


__all__ = ["RemoteWorker", "WorkerClient", "WorkerHandle", "table_to_ipc"]
