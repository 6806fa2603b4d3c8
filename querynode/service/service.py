"""``QueryNode`` service: the delegator role (vchannel-level reads) and the worker role (segments).

Delegators are created by ``WatchChannel`` and changed by ``SyncDistribution``;
the worker's segments are loaded, cut and released by delegators. Protobuf
stops here: both roles get domain types, a read its ``ReadPlan`` decoded once
per request (``common/readplan_pb.py``). The proxy of this process calls
``search`` and ``query`` (its ``NodeReads``) directly with the plan it built.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import grpc
import pyarrow as pa

from common.aiogather import gather_all
from common.arrowio import table_to_ipc
from common.errors import ErrorCode, InvalidArgument, StrataError
from common.grpcutil import ok_status, rpc_method
from common.readplan import ReadPlan, VectorQuery
from common.readplan_pb import decode_read_plan
from common.schema import CollectionSchema
from common.segment import SegmentLevel
from common.segment_pb import position_from_pb, segment_from_pb
from common.statemetrics import GaugeSample
from common.storage.objectstore import ObjectStore
from protos import querynode_pb2 as pb
from protos import querynode_pb2_grpc
from querynode.delegator.delegator import Delegator
from querynode.delegator.distribution import Placement
from querynode.delegator.planning import PlacedSegment
from querynode.metrics import observe, tsafe_samples
from querynode.worker.client import WorkerClient
from querynode.worker.cuts import decode_cuts
from querynode.worker.worker import Worker
from segcore.index.base import parse_params
from segcore.index.field_specs import listed_index_specs
from segcore.segments.query_vectors import decode_queries
from streamingnode.client.assignment import AssignmentSource
from streamingnode.client.timetick import TimeTickRequester


def _placed(items: list[pb.SegmentPlacement]) -> list[PlacedSegment]:
    return [PlacedSegment(segment_from_pb(p.segment), Placement(p.node_id, p.address)) for p in items]


def _params(raw: str) -> dict[str, object]:
    try:
        params = parse_params(raw)
    except ValueError as err:
        raise InvalidArgument(f"malformed search params: {err}") from err
    if not isinstance(params, dict):
        raise InvalidArgument("search params must be a JSON object")
    return params


class QueryNodeService(querynode_pb2_grpc.QueryNodeServicer):
    def __init__(self, node_id: int, source: AssignmentSource, storage: ObjectStore) -> None:
        self.node_id = node_id
        self._source = source
        self._storage = storage
        self.worker = Worker(storage)
        self._workers = WorkerClient(self.worker)
        self._ticks = TimeTickRequester(source)  # shared by the delegators: one request per pchannel
        self.delegators: dict[str, Delegator] = {}

    def state_samples(self) -> Iterator[GaugeSample]:
        """Each delegator's tsafe lag and the worker's sealed segments per collection (for ``/metrics``)."""
        segments: dict[int, int] = {}
        for collection_id, _ in list(self.worker.segments):
            segments[collection_id] = segments.get(collection_id, 0) + 1
        tsafes = [(v, d.tsafe.value) for v, d in list(self.delegators.items())]
        return tsafe_samples(self.node_id, tsafes, segments)

    def serve_at(self, address: str) -> None:
        """This node's address: its delegators call its own worker in-process, not over gRPC."""
        self._workers.local_address = address

    def _delegator(self, vchannel: str) -> Delegator:
        d = self.delegators.get(vchannel)
        if d is None:
            raise StrataError(f"vchannel {vchannel} is not served by this query node", ErrorCode.NOT_READY)
        return d

    # -- delegator role -------------------------------------------------------------------------

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
                workers=self._workers,
                checkpoint=position_from_pb(request.checkpoint, request.HasField("checkpoint")),
                l0_segments=[m for m in map(segment_from_pb, request.segments) if m.level == SegmentLevel.L0],
                placements=_placed(list(request.placements)),
                indexes=list(request.indexes),
                replica_id=request.replica_id,
                excluded=list(request.excluded_segments),
                ticks=self._ticks,
            )
            self.delegators[request.vchannel] = d
            d.start()
        return pb.StatusResponse(status=ok_status())

    @rpc_method(pb.StatusResponse)
    async def UnwatchChannel(self, request: pb.UnwatchChannelRequest, context: grpc.aio.ServicerContext) -> pb.StatusResponse:
        d = self.delegators.pop(request.vchannel, None)
        if d is not None:
            await d.stop()
        return pb.StatusResponse(status=ok_status())

    @rpc_method(pb.StatusResponse)
    async def SyncDistribution(self, request: pb.SyncDistributionRequest, context: grpc.aio.ServicerContext) -> pb.StatusResponse:
        d = self._delegator(request.vchannel)
        await d.sync(
            l0=[segment_from_pb(m) for m in request.load],
            placements=_placed(list(request.placements)),
            release=list(request.release),
            indexes=list(request.indexes),
        )
        return pb.StatusResponse(status=ok_status())

    @rpc_method(pb.SearchResponse)
    async def Search(self, request: pb.SearchRequest, context: grpc.aio.ServicerContext) -> pb.SearchResponse:
        vchannels = list(request.vchannels or [request.vchannel])
        delegator = self._delegator(vchannels[0])
        query = VectorQuery(anns_field=request.anns_field, metric=request.metric_type, topk=request.topk,
                            vectors=decode_queries(request.vectors, delegator.schema.field(request.anns_field)),
                            params=_params(request.params))
        hits = await self.search(delegator.collection_id, vchannels, decode_read_plan(request.read), query)
        return pb.SearchResponse(status=ok_status(), results=table_to_ipc(hits[0] if len(hits) == 1
                                                                          else pa.concat_tables(hits)))

    # The proxy's reads (``proxy/nodereads.py`` ``NodeReads``): the handlers above call them, and so
    # does the proxy of this process, directly with the plan and the query it built.

    async def search(self, collection_id: int, vchannels: list[str], plan: ReadPlan,
                     query: VectorQuery) -> list[pa.Table]:
        """The hits of the delegators of ``vchannels``, a table per vchannel: the proxy ranks every
        node's hits together (vchannels partition the keys). Raises ``StrataError``."""
        started, ok = time.perf_counter(), False
        try:
            delegators = [self._delegator(v) for v in vchannels]
            if any(d.collection_id != collection_id for d in delegators):
                raise InvalidArgument(f"the vchannels {vchannels} are not all of collection {collection_id}")
            tables = await gather_all([d.search(plan, query) for d in delegators])  # one: no task
            ok = True
            return tables
        finally:
            observe(self.node_id, "search", ok, started)

    @rpc_method(pb.QueryResponse)
    async def Query(self, request: pb.QueryRequest, context: grpc.aio.ServicerContext) -> pb.QueryResponse:
        table, count = await self.query(self._delegator(request.vchannel).collection_id, request.vchannel,
                                        decode_read_plan(request.read), request.limit, request.count_only)
        return pb.QueryResponse(
            status=ok_status(), results=table_to_ipc(table) if table is not None else b"", count=count
        )

    async def query(self, collection_id: int, vchannel: str, plan: ReadPlan, limit: int,
                    count_only: bool) -> tuple[pa.Table | None, int]:
        """The delegator of ``vchannel``'s rows (``limit`` 0: all) or count. Raises ``StrataError``."""
        started, ok = time.perf_counter(), False
        try:
            delegator = self._delegator(vchannel)
            if delegator.collection_id != collection_id:
                raise InvalidArgument(f"vchannel {vchannel} is not of collection {collection_id}")
            result = await delegator.query(plan, limit=limit or None, count_only=count_only)
            ok = True
            return result
        finally:
            observe(self.node_id, "query", ok, started)

    # -- worker role ----------------------------------------------------------------------------

    @rpc_method(pb.StatusResponse)
    async def LoadSegments(self, request: pb.LoadSegmentsRequest, context: grpc.aio.ServicerContext) -> pb.StatusResponse:
        await self.worker.load(
            request.collection_id,
            CollectionSchema.from_json(request.schema_json),
            [segment_from_pb(m) for m in request.segments],
            list(request.indexes),
            {c.segment_id: decode_cuts(c.cuts) for c in request.cuts},
        )
        return pb.StatusResponse(status=ok_status())

    @rpc_method(pb.BuildSegmentIndexResponse)
    async def BuildSegmentIndex(
        self, request: pb.BuildSegmentIndexRequest, context: grpc.aio.ServicerContext
    ) -> pb.BuildSegmentIndexResponse:
        schema = CollectionSchema.from_json(request.schema_json)
        i = request.index
        specs = listed_index_specs(schema, [i])
        if not specs:
            raise InvalidArgument(f"no field {i.field_name!r} to build index {i.index_id} on")
        built = await self.worker.build_index(request.collection_id, schema, segment_from_pb(request.segment), specs[0])
        return pb.BuildSegmentIndexResponse(status=ok_status(), built=built)

    @rpc_method(pb.StatusResponse)
    async def ReleaseSegments(self, request: pb.ReleaseSegmentsRequest, context: grpc.aio.ServicerContext) -> pb.StatusResponse:
        await self.worker.release(request.collection_id, list(request.segment_ids))
        return pb.StatusResponse(status=ok_status())

    @rpc_method(pb.StatusResponse)
    async def Delete(self, request: pb.DeleteRequest, context: grpc.aio.ServicerContext) -> pb.StatusResponse:
        await self.worker.cut(request.collection_id, {c.segment_id: decode_cuts(c.cuts) for c in request.cuts})
        return pb.StatusResponse(status=ok_status())

    @rpc_method(pb.SearchResponse)
    async def SearchSegments(self, request: pb.SearchSegmentsRequest, context: grpc.aio.ServicerContext) -> pb.SearchResponse:
        field = self.worker.schema(request.collection_id).field(request.anns_field)
        query = VectorQuery(anns_field=request.anns_field, metric=request.metric_type, topk=request.topk,
                            vectors=decode_queries(request.vectors, field), params=_params(request.params))
        result = await self.worker.search(request.collection_id, list(request.segment_ids), request.read_ts,
                                          decode_read_plan(request.read), query)
        return pb.SearchResponse(status=ok_status(), results=table_to_ipc(result))

    @rpc_method(pb.QueryResponse)
    async def QuerySegments(self, request: pb.QuerySegmentsRequest, context: grpc.aio.ServicerContext) -> pb.QueryResponse:
        table, count = await self.worker.query(request.collection_id, list(request.segment_ids), request.read_ts,
                                               decode_read_plan(request.read), request.limit, request.count_only)
        return pb.QueryResponse(status=ok_status(), results=table_to_ipc(table) if table is not None else b"", count=count)

    # -- both -------------------------------------------------------------------------------------

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
                    sealed_rows=d.sealed_rows,
                    sealed_segments=d.sealed_segments,
                    serviceable=d.serviceable,
                    replica_id=d.replica_id,
                    offline_segments=sorted(d.offline),
                    load_failures=[
                        pb.SegmentLoadFailure(
                            segment_id=f.segment_id,
                            node_id=f.node_id,
                            code=int(f.code),
                            reason=f.describe(),
                            attempts=f.attempts,
                        )
                        for f in d.load_failures
                    ],
                )
                for v, d in self.delegators.items()
                if not d.broken
            ],
            segments=[
                pb.LoadedSegment(collection_id=c, segment_id=s, rows=n, index_ids=self.worker.index_ids(c, s))
                for c, s, n in self.worker.loaded()
            ],
            broken=[
                pb.BrokenChannel(collection_id=d.collection_id, vchannel=v, reason=d.failure)
                for v, d in self.delegators.items()
                if d.broken
            ],
        )

    async def release_all(self) -> None:
        """Stop every delegator and drop every segment; the service stays usable (a lost session, or close)."""
        delegators, self.delegators = list(self.delegators.values()), {}
        for d in delegators:
            await d.stop()
        for c, s, _ in self.worker.loaded():
            await self.worker.release(c, [s])

    async def close(self) -> None:
        await self.worker.close()
        await self.release_all()
        await self._workers.close()
        await self._ticks.close()
