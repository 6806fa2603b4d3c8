"""How a delegator reaches the workers holding its sealed segments.

The worker of the delegator's own node is called in-process (no gRPC, no
Arrow IPC round trip, the query vectors passed as they are); other workers
over gRPC. Errors come back typed (checked stubs, ``common/rpcstatus.py``; the local worker
raises the same ``StrataError``s); a worker that cannot be reached raises
``grpc.aio.AioRpcError``. Protobuf stops here.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from common.arrowio import ipc_to_table, table_to_ipc
from common.errors import InvalidArgument
from common.grpcutil import StubCache
from common.schema import CollectionSchema
from common.segment import SegmentMeta
from common.segment_pb import segment_to_pb
from protos import querynode_pb2 as pb
from protos import querynode_pb2_grpc
from querynode.worker.cuts import encode_cuts
from querynode.worker.worker import SegmentRead, Worker
from segcore.index.base import parse_params, search_params
from segcore.index.field_specs import field_index_specs

LOAD_TIMEOUT = 600.0
CALL_TIMEOUT = 60.0


def _cuts(cuts: dict[int, tuple[pa.Array, np.ndarray]]) -> list[pb.SegmentCuts]:
    return [pb.SegmentCuts(segment_id=sid, cuts=encode_cuts(p, t)) for sid, (p, t) in cuts.items() if len(p)]


def segment_read(read_ts: int, read: pb.ReadOptions) -> SegmentRead:
    """What a worker reads: the delegator's read options at its read timestamp."""
    try:
        params = parse_params(read.filter_params)
    except ValueError as err:
        raise InvalidArgument(f"malformed filter params: {err}") from err
    return SegmentRead(
        read_ts=read_ts,
        filter=read.filter,
        filter_params=params,
        output_fields=tuple(read.output_fields),
        expire_before=read.expire_before,
    )


class WorkerClient:
    def __init__(self, local: Worker | None = None, local_address: str = "") -> None:
        self._stubs = StubCache(querynode_pb2_grpc.QueryNodeStub)
        self._local = local
        self.local_address = local_address

    def _here(self, address: str) -> Worker | None:
        return self._local if self._local is not None and address == self.local_address else None

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
        if (worker := self._here(address)) is not None:
            specs = field_index_specs(schema, ((i.field_name, i.index_id, dict(i.params)) for i in indexes))
            await worker.load(collection_id, schema, list(segments), specs, cuts)
            return
        await self._stubs.get(address).LoadSegments(
            pb.LoadSegmentsRequest(
                collection_id=collection_id,
                schema_json=schema.to_json(),
                segments=[segment_to_pb(m) for m in segments],
                indexes=list(indexes),
                cuts=_cuts(cuts),
            ),
            timeout=LOAD_TIMEOUT,
        )

    async def update_schema(self, address: str, collection_id: int, schema: CollectionSchema) -> None:
        """Give the worker's segments of the collection the fields ``schema`` added (a load of no segment)."""
        if (worker := self._here(address)) is not None:
            await worker.update_schema(collection_id, schema)
            return
        await self.load(address, collection_id=collection_id, schema=schema, segments=(), indexes=(), cuts={})

    async def release(self, address: str, collection_id: int, segment_ids: Sequence[int]) -> None:
        if (worker := self._here(address)) is not None:
            await worker.release(collection_id, list(segment_ids))
            return
        await self._stubs.get(address).ReleaseSegments(
            pb.ReleaseSegmentsRequest(collection_id=collection_id, segment_ids=list(segment_ids)), timeout=CALL_TIMEOUT
        )

    async def cut(self, address: str, collection_id: int, cuts: dict[int, tuple[pa.Array, np.ndarray]]) -> None:
        if (worker := self._here(address)) is not None:
            await worker.cut(collection_id, cuts)
            return
        await self._stubs.get(address).Delete(
            pb.DeleteRequest(collection_id=collection_id, cuts=_cuts(cuts)), timeout=CALL_TIMEOUT
        )

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
        matrix: np.ndarray,
        topk: int,
        params: dict[str, object],
        timeout: float,
    ) -> pa.Table:
        """``vectors``: the query vectors as Arrow IPC (sent to remote workers); ``matrix``: the same, as floats."""
        if (worker := self._here(address)) is not None:
            return await worker.search(
                collection_id,
                list(segment_ids),
                segment_read(read_ts, read),
                field_name=anns_field,
                queries=matrix,
                metric=metric,
                topk=topk,
                params=search_params(params),
            )
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
        if (worker := self._here(address)) is not None:
            return await worker.query(
                collection_id,
                list(segment_ids),
                segment_read(read_ts, read),
                limit=limit or None,
                count_only=count_only,
            )
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
        return (ipc_to_table(resp.results) if resp.results else None), int(resp.count)

    async def close(self) -> None:
        await self._stubs.close()


__all__ = ["WorkerClient", "table_to_ipc"]
