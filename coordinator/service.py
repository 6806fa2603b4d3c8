"""gRPC edge of the coordinator."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping

import grpc

from common.errors import InvalidArgument, PartitionNotFound
from common.grpcutil import ok_status, rpc_method
from common.schema import CollectionSchema
from common.segment import SegmentState
from common.segment_pb import position_from_pb, position_to_pb, segment_from_pb, segment_to_pb
from common.storage.objectstore import ObjectStore
from coordinator.aliases import AliasDDL
from coordinator.catalog import Catalog, CollectionMeta
from coordinator.cluster_service import ClusterRPCs
from coordinator.credentials import Credentials
from coordinator.data.build_policy import BuildKey
from coordinator.data.compaction import CompactionManager
from coordinator.data.datacoord import DataCoordinator
from coordinator.data.importer import ImportManager
from coordinator.data.index_progress import index_progress, saved_indexes
from coordinator.databases import DatabaseRPCs, Databases
from coordinator.ddl import DDL
from coordinator.flush_all import FlushAllRPCs
from coordinator.health import HealthRPCs
from coordinator.idalloc import IDAllocator
from coordinator.indexes import IndexDDL
from coordinator.jobs_service import JobRPCs
from coordinator.partitions import PartitionDDL
from coordinator.query.coord import QueryCoordinator
from coordinator.replicas_service import ReplicaRPCs
from coordinator.schema_ddl import SchemaDDL
from coordinator.schema_service import SchemaRPCs
from coordinator.streaming.balancer import AssignmentView, StreamingBalancer
from coordinator.truncate import Truncator
from coordinator.tso import TimestampOracle
from protos import coordinator_pb2 as pb
from protos import coordinator_pb2_grpc


def _partition_id(meta: CollectionMeta, name: str) -> int:
    info = meta.partition(name)
    if info is None:
        raise PartitionNotFound(f"partition not found[partition={name}]")
    return info.partition_id


def collection_info(meta: CollectionMeta) -> pb.CollectionInfo:
    return pb.CollectionInfo(
        collection_id=meta.collection_id,
        name=meta.name,
        schema_json=meta.schema.to_json(),
        vchannels=meta.vchannels,
        pchannels=meta.pchannels,
        consistency_level=meta.consistency_level,
        properties=meta.properties,
        created_timestamp=meta.created_ts,
        update_timestamp=meta.update_ts,
        db_name=meta.db_name,
        db_id=meta.db_id,
        default_partition_id=meta.default_partition_id,
        partitions=[
            pb.PartitionInfo(partition_id=p.partition_id, name=p.name, created_timestamp=p.created_ts)
            for p in meta.all_partitions()
        ],
    )


def assignment_snapshot(view: AssignmentView) -> pb.AssignmentSnapshot:
    return pb.AssignmentSnapshot(
        version=view.version,
        nodes=[
            pb.NodeAssignment(
                node_id=node_id,
                address=address,
                channels=[pb.PChannelAssignment(pchannel=n, term=t) for n, t in channels],
            )
            for node_id, (address, channels) in sorted(view.nodes.items())
        ],
    )


class CoordinatorService(
    SchemaRPCs,
    JobRPCs,
    DatabaseRPCs,
    ReplicaRPCs,
    HealthRPCs,
    ClusterRPCs,
    FlushAllRPCs,
    coordinator_pb2_grpc.CoordinatorServicer,
):
    def __init__(
        self,
        *,
        tso: TimestampOracle,
        ids: IDAllocator,
        catalog: Catalog,
        ddl: DDL,
        balancer: StreamingBalancer,
        query: QueryCoordinator,
        data: DataCoordinator,
        partitions: PartitionDDL,
        aliases: AliasDDL,
        truncator: Truncator,
        indexes: IndexDDL,
        databases: Databases,
        schema: SchemaDDL,
        compaction: CompactionManager | None = None,
        imports: ImportManager | None = None,
        storage: ObjectStore | None = None,
        build_failures: Callable[[int], Mapping[BuildKey, str]] | None = None,
        credentials: Credentials | None = None,
    ) -> None:
        self._storage = storage  # where query nodes save built indexes (index progress); None: unknown
        self._build_failures = build_failures  # builds refused for good, per collection (index_builds.py)
        self._credentials = credentials  # grants on a collection go with it (dropped, renamed)
        self._indexes = indexes
        self._compaction = compaction
        self._imports = imports
        self._truncator = truncator
        self._databases = databases
        self._schema_ddl = schema
        self._aliases = aliases
        self._partitions = partitions
        self._data = data
        self._tso = tso
        self._ids = ids
        self._catalog = catalog
        self._ddl = ddl
        self._balancer = balancer
        self._query = query

    async def _meta(self, ref: pb.CollectionRef) -> CollectionMeta:
        return await self._ddl.get(name=ref.name, collection_id=ref.collection_id, db_name=ref.db_name)

    async def _alias_target(self, request: pb.AliasRequest) -> CollectionMeta:
        """The collection an alias request names, looked up in the request's database."""
        ref = pb.CollectionRef()
        ref.CopyFrom(request.collection)
        ref.db_name = ref.db_name or request.db_name
        return await self._meta(ref)

    @rpc_method(pb.AllocTimestampResponse)
    async def AllocTimestamp(
        self, request: pb.AllocTimestampRequest, context: grpc.aio.ServicerContext
    ) -> pb.AllocTimestampResponse:
        count = request.count or 1
        ts = await self._tso.allocate(count)
        return pb.AllocTimestampResponse(status=ok_status(), timestamp=ts, count=count)

    @rpc_method(pb.AllocIDResponse)
    async def AllocID(self, request: pb.AllocIDRequest, context: grpc.aio.ServicerContext) -> pb.AllocIDResponse:
        count = request.count or 1
        return pb.AllocIDResponse(status=ok_status(), begin=await self._ids.allocate(count), count=count)

    @rpc_method(pb.CollectionResponse)
    async def CreateCollection(
        self, request: pb.CreateCollectionRequest, context: grpc.aio.ServicerContext
    ) -> pb.CollectionResponse:
        try:
            schema = CollectionSchema.from_json(request.schema_json)
        except (ValueError, KeyError, TypeError) as err:
            raise InvalidArgument(f"malformed schema: {err}") from err
        meta = await self._ddl.create_collection(
            schema,
            shards_num=request.shards_num or 1,
            consistency_level=request.consistency_level,
            properties=dict(request.properties),
            num_partitions=request.num_partitions,
            db_name=request.db_name,
        )
        return pb.CollectionResponse(status=ok_status(), collection=collection_info(meta))

    @rpc_method(pb.StatusResponse)
    async def DropCollection(self, request: pb.CollectionRef, context: grpc.aio.ServicerContext) -> pb.StatusResponse:
        meta = await self._meta(request)
        await self._aliases.check_drop(request.name, meta)
        await self._ddl.drop_collection(meta)
        if self._credentials is not None:
            await self._credentials.collection_dropped(meta.db_name, meta.name)
        return pb.StatusResponse(status=ok_status())

    @rpc_method(pb.StatusResponse)
    async def TruncateCollection(
        self, request: pb.CollectionRef, context: grpc.aio.ServicerContext
    ) -> pb.StatusResponse:
        await self._truncator.truncate(await self._meta(request))
        return pb.StatusResponse(status=ok_status())

    @rpc_method(pb.StatusResponse)
    async def CreateAlias(self, request: pb.AliasRequest, context: grpc.aio.ServicerContext) -> pb.StatusResponse:
        await self._aliases.create(request.alias, await self._alias_target(request))
        return pb.StatusResponse(status=ok_status())

    @rpc_method(pb.StatusResponse)
    async def AlterAlias(self, request: pb.AliasRequest, context: grpc.aio.ServicerContext) -> pb.StatusResponse:
        await self._aliases.alter(request.alias, await self._alias_target(request))
        return pb.StatusResponse(status=ok_status())

    @rpc_method(pb.StatusResponse)
    async def DropAlias(self, request: pb.AliasRequest, context: grpc.aio.ServicerContext) -> pb.StatusResponse:
        db = await self._databases.get(request.db_name)
        await self._aliases.drop(request.alias, db.database_id)
        return pb.StatusResponse(status=ok_status())

    @rpc_method(pb.AliasResponse)
    async def DescribeAlias(self, request: pb.AliasRequest, context: grpc.aio.ServicerContext) -> pb.AliasResponse:
        db = await self._databases.get(request.db_name)
        meta = await self._ddl.get(collection_id=await self._aliases.describe(request.alias, db.database_id, db.name))
        return pb.AliasResponse(status=ok_status(), alias=request.alias, collection_name=meta.name)

    @rpc_method(pb.ListAliasesResponse)
    async def ListAliases(self, request: pb.CollectionRef, context: grpc.aio.ServicerContext) -> pb.ListAliasesResponse:
        if request.name or request.collection_id:
            meta = await self._meta(request)
            aliases = await self._aliases.aliases_of(meta.collection_id, meta.db_id)
        else:
            aliases = sorted(await self._catalog.list_aliases((await self._databases.get(request.db_name)).database_id))
        return pb.ListAliasesResponse(status=ok_status(), aliases=aliases)

    @rpc_method(pb.StatusResponse)
    async def RenameCollection(
        self, request: pb.RenameCollectionRequest, context: grpc.aio.ServicerContext
    ) -> pb.StatusResponse:
        meta = await self._meta(request.collection)
        if request.new_db_name:
            new_db = await self._databases.get(request.new_db_name)
            await self._aliases.rename(meta, request.new_name, new_db_id=new_db.database_id, new_db_name=new_db.name)
        else:
            await self._aliases.rename(meta, request.new_name)
        if self._credentials is not None:
            if request.new_db_name and request.new_db_name != meta.db_name:
                # Grants name a database: they do not follow a collection into another one.
                await self._credentials.collection_dropped(meta.db_name, meta.name)
            else:
                await self._credentials.collection_renamed(meta.db_name, meta.name, request.new_name)
        return pb.StatusResponse(status=ok_status())

    @rpc_method(pb.StatusResponse)
    async def AlterCollection(
        self, request: pb.AlterCollectionRequest, context: grpc.aio.ServicerContext
    ) -> pb.StatusResponse:
        meta = await self._meta(request.collection)
        await self._aliases.alter_properties(meta, dict(request.properties), list(request.delete_keys))
        return pb.StatusResponse(status=ok_status())

    @rpc_method(pb.CollectionResponse)
    async def DescribeCollection(
        self, request: pb.CollectionRef, context: grpc.aio.ServicerContext
    ) -> pb.CollectionResponse:
        meta = await self._meta(request)
        info = collection_info(meta)
        info.aliases.extend(await self._aliases.aliases_of(meta.collection_id, meta.db_id))
        info.indexes.extend(
            pb.IndexInfo(field_name=i.field_name, index_name=i.index_name, index_id=i.index_id, params=i.params)
            for i in await self._catalog.list_indexes(meta.collection_id)
        )
        return pb.CollectionResponse(status=ok_status(), collection=info)

    @rpc_method(pb.ListCollectionsResponse)
    async def ListCollections(
        self, request: pb.ListCollectionsRequest, context: grpc.aio.ServicerContext
    ) -> pb.ListCollectionsResponse:
        metas = [m for m in await self._catalog.list_collections() if m.state.value == "CREATED"]
        if request.db_name:  # one database's (else every database's)
            db_id = (await self._databases.get(request.db_name)).database_id
            metas = [m for m in metas if m.db_id == db_id]
        return pb.ListCollectionsResponse(status=ok_status(), collections=[collection_info(m) for m in metas])

    @rpc_method(pb.StatusResponse)
    async def CreateIndex(self, request: pb.CreateIndexRequest, context: grpc.aio.ServicerContext) -> pb.StatusResponse:
        meta = await self._meta(request.collection)
        await self._indexes.create(meta, request.index.field_name, request.index.index_name, dict(request.index.params))
        return pb.StatusResponse(status=ok_status())

    @rpc_method(pb.DescribeIndexResponse)
    async def DescribeIndex(
        self, request: pb.CollectionRef, context: grpc.aio.ServicerContext
    ) -> pb.DescribeIndexResponse:
        meta = await self._meta(request)
        indexes = await self._catalog.list_indexes(meta.collection_id)
        infos = [
            pb.IndexInfo(field_name=i.field_name, index_name=i.index_name, index_id=i.index_id, params=i.params)
            for i in indexes
        ]
        if self._storage is not None and infos:
            saved = await asyncio.to_thread(saved_indexes, self._storage, meta.collection_id)
            segments = self._data.flushed_segments(collection_id=meta.collection_id)
            failures = self._build_failures(meta.collection_id) if self._build_failures else {}
            for info in infos:
                index_type = info.params.get("index_type", "") or "AUTOINDEX"
                progress = index_progress(saved, segments, info.index_id, index_type=index_type, failures=failures)
                info.progress_known = True
                info.indexed_rows, info.total_rows = progress.indexed_rows, progress.total_rows
                info.fail_reason = progress.fail_reason
        return pb.DescribeIndexResponse(status=ok_status(), indexes=infos)

    @rpc_method(pb.StatusResponse)
    async def DropIndex(self, request: pb.DropIndexRequest, context: grpc.aio.ServicerContext) -> pb.StatusResponse:
        await self._indexes.drop(await self._meta(request.collection), request.index_name)
        return pb.StatusResponse(status=ok_status())

    @rpc_method(pb.StatusResponse)
    async def AlterIndex(self, request: pb.AlterIndexRequest, context: grpc.aio.ServicerContext) -> pb.StatusResponse:
        meta = await self._meta(request.collection)
        await self._indexes.alter(meta, request.index_name, dict(request.params), list(request.delete_keys))
        return pb.StatusResponse(status=ok_status())

    @rpc_method(pb.StatusResponse)
    async def LoadCollection(
        self, request: pb.LoadCollectionRequest, context: grpc.aio.ServicerContext
    ) -> pb.StatusResponse:
        meta = await self._meta(request.collection)
        ids = [_partition_id(meta, n) for n in request.partition_names] if request.partition_names else None
        await self._query.load(meta, max(request.replica_number, 1), ids)
        return pb.StatusResponse(status=ok_status())

    @rpc_method(pb.StatusResponse)
    async def ReleasePartitions(
        self, request: pb.PartitionRequest, context: grpc.aio.ServicerContext
    ) -> pb.StatusResponse:
        meta = await self._meta(request.collection)
        await self._query.release_partitions(meta, [_partition_id(meta, n) for n in request.partition_names])
        return pb.StatusResponse(status=ok_status())

    @rpc_method(pb.StatusResponse)
    async def CreatePartition(
        self, request: pb.PartitionRequest, context: grpc.aio.ServicerContext
    ) -> pb.StatusResponse:
        meta = await self._meta(request.collection)
        for name in request.partition_names:
            await self._partitions.create(meta, name)
        return pb.StatusResponse(status=ok_status())

    @rpc_method(pb.StatusResponse)
    async def DropPartition(self, request: pb.PartitionRequest, context: grpc.aio.ServicerContext) -> pb.StatusResponse:
        meta = await self._meta(request.collection)
        for name in request.partition_names:
            await self._partitions.drop(meta, name)
        return pb.StatusResponse(status=ok_status())

    @rpc_method(pb.StatusResponse)
    async def ReleaseCollection(
        self, request: pb.CollectionRef, context: grpc.aio.ServicerContext
    ) -> pb.StatusResponse:
        meta = await self._meta(request)
        await self._query.release(meta.collection_id)
        return pb.StatusResponse(status=ok_status())

    @rpc_method(pb.QueryViewResponse)
    async def GetQueryView(self, request: pb.CollectionRef, context: grpc.aio.ServicerContext) -> pb.QueryViewResponse:
        meta = await self._meta(request)
        if not self._query.is_loaded(meta.collection_id):
            return pb.QueryViewResponse(status=ok_status(), state=pb.LOAD_STATE_NOT_LOAD)
        views, progress, all_ready = self._query.view(meta)
        return pb.QueryViewResponse(
            status=ok_status(),
            state=pb.LOAD_STATE_LOADED if all_ready else pb.LOAD_STATE_LOADING,
            progress=progress,
            loaded_partitions=self._query.loaded_partitions(meta),
            load_error=next((v.load_error for v in views if v.load_error), ""),
            channels=[
                pb.ChannelPlacement(
                    vchannel=v.vchannel,
                    pchannel=v.pchannel,
                    node_id=v.node_id,
                    address=v.address,
                    ready=v.ready,
                    replica_id=v.replica_id,
                    load_error=v.load_error,
                )
                for v in views
            ],
        )

    async def AssignmentDiscover(
        self, request: pb.AssignmentDiscoverRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[pb.AssignmentSnapshot]:
        view = self._balancer.view()
        while True:
            yield assignment_snapshot(view)
            view = await self._balancer.wait_for_version(view.version)

    @rpc_method(pb.StatusResponse)
    async def ReportAssignmentError(
        self, request: pb.ReportAssignmentErrorRequest, context: grpc.aio.ServicerContext
    ) -> pb.StatusResponse:
        await self._balancer.report_error(request.pchannel, request.term)
        return pb.StatusResponse(status=ok_status())

    # -- data coordination -------------------------------------------------------------------

    @rpc_method(pb.StatusResponse)
    async def AllocSegment(
        self, request: pb.AllocSegmentRequest, context: grpc.aio.ServicerContext
    ) -> pb.StatusResponse:
        await self._data.alloc_segment(segment_from_pb(request.segment))
        return pb.StatusResponse(status=ok_status())

    @rpc_method(pb.StatusResponse)
    async def UpdateSegmentState(
        self, request: pb.UpdateSegmentStateRequest, context: grpc.aio.ServicerContext
    ) -> pb.StatusResponse:
        try:
            state = SegmentState(request.state)
        except ValueError as err:
            raise InvalidArgument(f"unknown segment state {request.state}") from err
        await self._data.update_state(request.segment_id, state)
        return pb.StatusResponse(status=ok_status())

    @rpc_method(pb.StatusResponse)
    async def SaveBinlogPaths(
        self, request: pb.SaveBinlogPathsRequest, context: grpc.aio.ServicerContext
    ) -> pb.StatusResponse:
        await self._data.save_binlog_paths(segment_from_pb(request.segment), flushed=request.flushed)
        return pb.StatusResponse(status=ok_status())

    @rpc_method(pb.StatusResponse)
    async def UpdateChannelCheckpoint(
        self, request: pb.UpdateChannelCheckpointRequest, context: grpc.aio.ServicerContext
    ) -> pb.StatusResponse:
        updates = []
        for cp in request.checkpoints:
            pos = position_from_pb(cp.checkpoint, cp.HasField("checkpoint"))
            if pos is None:
                raise InvalidArgument(f"checkpoint of {cp.vchannel} has no position")
            updates.append((cp.vchannel, pos))
        await self._data.update_checkpoints(updates)
        return pb.StatusResponse(status=ok_status())

    @rpc_method(pb.GetChannelRecoveryInfoResponse)
    async def GetChannelRecoveryInfo(
        self, request: pb.GetChannelRecoveryInfoRequest, context: grpc.aio.ServicerContext
    ) -> pb.GetChannelRecoveryInfoResponse:
        out = []
        for r in await self._data.recovery_info(request.pchannel):
            v = pb.VChannelRecovery(
                vchannel=r.vchannel,
                collection_id=r.collection_id,
                schema_json=r.schema.to_json(),
                segments=[segment_to_pb(s) for s in r.segments],
            )
            if r.checkpoint is not None:
                v.checkpoint.CopyFrom(position_to_pb(r.checkpoint))
            out.append(v)
        return pb.GetChannelRecoveryInfoResponse(status=ok_status(), vchannels=out)

    @rpc_method(pb.FlushResponse)
    async def Flush(self, request: pb.FlushRequest, context: grpc.aio.ServicerContext) -> pb.FlushResponse:
        segment_ids, flush_ts = await self._data.flush(await self._meta(request.collection))
        return pb.FlushResponse(status=ok_status(), segment_ids=segment_ids, flush_ts=flush_ts)

    @rpc_method(pb.GetFlushStateResponse)
    async def GetFlushState(
        self, request: pb.GetFlushStateRequest, context: grpc.aio.ServicerContext
    ) -> pb.GetFlushStateResponse:
        ref = request.collection
        meta = await self._meta(ref) if ref.name or ref.collection_id else None  # None: by segment ids only
        flushed = self._data.flush_state(meta, list(request.segment_ids), request.flush_ts)
        return pb.GetFlushStateResponse(status=ok_status(), flushed=flushed)


__all__ = ["CoordinatorService"]
