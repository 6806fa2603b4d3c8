"""``QueryNode`` service: delegator management and vchannel-level reads."""

from __future__ import annotations

import grpc
import numpy as np

from protos import querynode_pb2 as pb
from protos import querynode_pb2_grpc
from querynode.delegator.delegator import Delegator, ReadSpec, parse_params
from services.arrowio import ipc_to_table, table_to_ipc
from services.errors import ErrorCode, InvalidArgument, StrataError
from services.grpcutil import ok_status, rpc_method
from services.schema import CollectionSchema
from services.segment_pb import position_from_pb, segment_from_pb
from services.storage.objectstore import ObjectStore
from streamingnode.client.assignment import AssignmentSource

DEFAULT_READ_TIMEOUT = 30.0


def _read_spec(read: pb.ReadOptions) -> ReadSpec:
    try:
        params = parse_params(read.filter_params)
    except ValueError as err:
        raise InvalidArgument(f"malformed filter params: {err}") from err
    return ReadSpec(
        guarantee_ts=read.guarantee_timestamp,
        filter=read.filter,
        filter_params=params,
        output_fields=tuple(read.output_fields),
        timeout=read.timeout_ms / 1000 if read.timeout_ms else DEFAULT_READ_TIMEOUT,
    )


class QueryNodeService(querynode_pb2_grpc.QueryNodeServicer):
    def __init__(self, node_id: int, source: AssignmentSource, storage: ObjectStore) -> None:
        self.node_id = node_id
        self._source = source
        self._storage = storage
        self.delegators: dict[str, Delegator] = {}

    def _delegator(self, vchannel: str) -> Delegator:
        d = self.delegators.get(vchannel)
        if d is None:
            raise StrataError(f"vchannel {vchannel} is not served by this query node", ErrorCode.NOT_READY)
        return d

    @rpc_method(pb.StatusResponse)
    async def WatchChannel(self, request: pb.WatchChannelRequest, context: grpc.aio.ServicerContext) -> pb.StatusResponse:
        existing = self.delegators.get(request.vchannel)
        if existing is not None and existing.broken:
            # It lost its place in the WAL: start over from the coordinator's fresh checkpoint.
            del self.delegators[request.vchannel]
            await existing.stop()
            existing = None
        if existing is None:
            d = Delegator(
                collection_id=request.collection_id,
                vchannel=request.vchannel,
                pchannel=request.pchannel,
                schema=CollectionSchema.from_json(request.schema_json),
                source=self._source,
                storage=self._storage,
                checkpoint=position_from_pb(request.checkpoint, request.HasField("checkpoint")),
                segments=[segment_from_pb(m) for m in request.segments],
            )
            self.delegators[request.vchannel] = d
            d.start()
        return pb.StatusResponse(status=ok_status())

    @rpc_method(pb.StatusResponse)
    async def SyncDistribution(self, request: pb.SyncDistributionRequest, context: grpc.aio.ServicerContext) -> pb.StatusResponse:
        d = self._delegator(request.vchannel)
        await d.sync([segment_from_pb(m) for m in request.load], list(request.release))
        return pb.StatusResponse(status=ok_status())

    @rpc_method(pb.StatusResponse)
    async def UnwatchChannel(self, request: pb.UnwatchChannelRequest, context: grpc.aio.ServicerContext) -> pb.StatusResponse:
        d = self.delegators.pop(request.vchannel, None)
        if d is not None:
            await d.stop()
        return pb.StatusResponse(status=ok_status())

    @rpc_method(pb.SearchResponse)
    async def Search(self, request: pb.SearchRequest, context: grpc.aio.ServicerContext) -> pb.SearchResponse:
        d = self._delegator(request.vchannel)
        field = d.schema.field(request.anns_field)
        vectors = ipc_to_table(request.vectors).column("vector").combine_chunks()
        matrix = np.asarray(vectors.flatten().to_numpy(zero_copy_only=False), dtype=np.float32).reshape(-1, field.dim)
        result = await d.search(
            _read_spec(request.read), field=request.anns_field, vectors=matrix, metric=request.metric_type, topk=request.topk
        )
        return pb.SearchResponse(status=ok_status(), results=table_to_ipc(result))

    @rpc_method(pb.QueryResponse)
    async def Query(self, request: pb.QueryRequest, context: grpc.aio.ServicerContext) -> pb.QueryResponse:
        d = self._delegator(request.vchannel)
        table, count = await d.query(
            _read_spec(request.read), limit=request.limit or None, count_only=request.count_only
        )
        return pb.QueryResponse(
            status=ok_status(), results=table_to_ipc(table) if table is not None else b"", count=count
        )

    async def GetDataDistribution(
        self, request: pb.GetDataDistributionRequest, context: grpc.aio.ServicerContext
    ) -> pb.GetDataDistributionResponse:
        return pb.GetDataDistributionResponse(
            node_id=self.node_id,
            # A broken delegator is left out: the coordinator then watches its channel again.
            channels=[
                pb.ChannelDistribution(
                    collection_id=d.collection_id,
                    vchannel=v,
                    tsafe=d.tsafe.value,
                    growing_rows=d.data.growing_rows,
                    sealed_rows=d.data.sealed_rows,
                    sealed_segments=d.sealed_segments,
                    serviceable=d.serviceable,
                )
                for v, d in self.delegators.items()
                if not d.broken
            ],
        )

    async def release_all(self) -> None:
        """Stop every delegator; the service stays usable (a lost session, or close)."""
        delegators, self.delegators = list(self.delegators.values()), {}
        for d in delegators:
            await d.stop()

    async def close(self) -> None:
        await self.release_all()
