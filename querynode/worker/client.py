"""How a delegator reaches the workers holding its sealed segments (gRPC, also to its own node).

Errors come back typed (``raise_for_status``); a worker that cannot be reached
raises ``grpc.aio.AioRpcError``. Protobuf stops here.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from protos import querynode_pb2 as pb
from protos import querynode_pb2_grpc
from querynode.worker.cuts import encode_cuts
from services.arrowio import ipc_to_table, table_to_ipc
from services.grpcutil import StubCache, raise_for_status
from services.schema import CollectionSchema
from services.segment import SegmentMeta
from services.segment_pb import segment_to_pb

LOAD_TIMEOUT = 600.0
CALL_TIMEOUT = 60.0


def _cuts(cuts: dict[int, tuple[pa.Array, np.ndarray]]) -> list[pb.SegmentCuts]:
    return [pb.SegmentCuts(segment_id=sid, cuts=encode_cuts(p, t)) for sid, (p, t) in cuts.items() if len(p)]


class WorkerClient:
    def __init__(self) -> None:
        self._stubs = StubCache(querynode_pb2_grpc.QueryNodeStub)

    async def load(
        self,
        address: str,
        *,
        collection_id: int,
        schema: CollectionSchema,
        segments: Sequence[SegmentMeta],
        indexes: Sequence[pb.IndexSpec],
        cuts: dict[int, tuple[pa.Array, np.ndarray]],
    ) -> None:
        resp = await self._stubs.get(address).LoadSegments(
            pb.LoadSegmentsRequest(
                collection_id=collection_id,
                schema_json=schema.to_json(),
                segments=[segment_to_pb(m) for m in segments],
                indexes=list(indexes),
                cuts=_cuts(cuts),
            ),
            timeout=LOAD_TIMEOUT,
        )
        raise_for_status(resp.status)

    async def release(self, address: str, collection_id: int, segment_ids: Sequence[int]) -> None:
        resp = await self._stubs.get(address).ReleaseSegments(
            pb.ReleaseSegmentsRequest(collection_id=collection_id, segment_ids=list(segment_ids)), timeout=CALL_TIMEOUT
        )
        raise_for_status(resp.status)

    async def cut(self, address: str, collection_id: int, cuts: dict[int, tuple[pa.Array, np.ndarray]]) -> None:
        resp = await self._stubs.get(address).Delete(
            pb.DeleteRequest(collection_id=collection_id, cuts=_cuts(cuts)), timeout=CALL_TIMEOUT
        )
        raise_for_status(resp.status)

    async def search(
        self,
        address: str,
        *,
        collection_id: int,
        segment_ids: Sequence[int],
        read_ts: int,
        read: pb.ReadOptions,
        anns_field: str,
        metric: str,
        vectors: bytes,
        topk: int,
        params: dict[str, object],
        timeout: float,
    ) -> pa.Table:
        resp = await self._stubs.get(address).SearchSegments(
            pb.SearchSegmentsRequest(
                collection_id=collection_id,
                segment_ids=list(segment_ids),
                read_ts=read_ts,
                read=read,
                anns_field=anns_field,
                metric_type=metric,
                vectors=vectors,
                topk=topk,
                params=json.dumps(params),
            ),
            timeout=timeout,
        )
        raise_for_status(resp.status)
        return ipc_to_table(resp.results)

    async def query(
        self,
        address: str,
        *,
        collection_id: int,
        segment_ids: Sequence[int],
        read_ts: int,
        read: pb.ReadOptions,
        limit: int | None,
        count_only: bool,
        timeout: float,
    ) -> tuple[pa.Table | None, int]:
        resp = await self._stubs.get(address).QuerySegments(
            pb.QuerySegmentsRequest(
                collection_id=collection_id,
                segment_ids=list(segment_ids),
                read_ts=read_ts,
                read=read,
                limit=limit or 0,
                count_only=count_only,
            ),
            timeout=timeout,
        )
        raise_for_status(resp.status)
        return (ipc_to_table(resp.results) if resp.results else None), int(resp.count)

    async def close(self) -> None:
        await self._stubs.close()


__all__ = ["WorkerClient", "table_to_ipc"]
