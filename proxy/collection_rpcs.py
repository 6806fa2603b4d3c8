"""Milvus's collection RPCs: create, drop, describe, list, statistics, load, release, load state and progress."""

from __future__ import annotations

import grpc
from pymilvus.grpc_gen import common_pb2, milvus_pb2, schema_pb2

from common.coordapi import LoadState
from common.errors import CollectionNotFound, ErrorCode, InvalidArgument, SegmentLoadFailed, StrataError
from common.names import cannot_find_collection, check_collection_name
from common.tsoutil import physical_ms
from proxy import convert
from proxy.databases import default_replicas
from proxy.dbcontext import current_database
from proxy.partitions import read_partitions
from proxy.parts import ProxyParts
from proxy.rpc import milvus_rpc
from proxy.status import success


class CollectionRPCs(ProxyParts):
    """The collection RPCs of ``MilvusProxy``."""

    @milvus_rpc(common_pb2.Status)
    async def CreateCollection(self, request: milvus_pb2.CreateCollectionRequest, context: grpc.aio.ServicerContext) -> common_pb2.Status:
        pb = schema_pb2.CollectionSchema()
        try:
            pb.ParseFromString(request.schema)
        except Exception as err:
            raise InvalidArgument(f"malformed collection schema: {err}") from err
        if request.collection_name and pb.name and pb.name != request.collection_name:
            raise InvalidArgument(
                f"collection name {request.collection_name} does not match the schema name {pb.name}"
            )
        schema = convert.schema_from_proto(pb, collection_name=request.collection_name or pb.name)
        props = {p.key: p.value for p in request.properties}
        level = request.consistency_level
        await self._coord.create_collection(
            name=schema.name,
            schema_json=schema.to_json(),
            shards_num=request.shards_num or 1,
            consistency_level=level,
            properties=props,
            num_partitions=request.num_partitions,
            db_name=current_database(),
        )
        self._cache.invalidate(schema.name)
        return success()

    @milvus_rpc(common_pb2.Status)
    async def DropCollection(self, request: milvus_pb2.DropCollectionRequest, context: grpc.aio.ServicerContext) -> common_pb2.Status:
        check_collection_name(request.collection_name)
        try:
            await self._coord.drop_collection(request.collection_name, current_database())
        except CollectionNotFound:
            pass  # Milvus: dropping a missing collection is not an error
        finally:
            self._cache.invalidate(request.collection_name)
        await self._security.collections_changed()  # its grants went with it
        return success()

    @milvus_rpc(milvus_pb2.DescribeCollectionResponse)
    async def DescribeCollection(self, request: milvus_pb2.DescribeCollectionRequest, context: grpc.aio.ServicerContext) -> milvus_pb2.DescribeCollectionResponse:
        check_collection_name(request.collection_name)
        try:
            coll = await self._cache.get(request.collection_name, refresh=True)
        except StrataError as err:
            if err.code != ErrorCode.COLLECTION_NOT_FOUND:
                raise
            raise cannot_find_collection(request.collection_name, current_database()) from None
        self._security.require_visible(coll.name, current_database())  # the caller's grants, as Milvus 2.6
        properties = [common_pb2.KeyValuePair(key=k, value=v) for k, v in coll.properties.items()]
        schema = convert.schema_to_proto(coll.schema)
        schema.properties.extend(properties)  # Milvus' rootcoord puts them in both places
        return milvus_pb2.DescribeCollectionResponse(
            status=success(),
            schema=schema,
            collectionID=coll.collection_id,
            virtual_channel_names=coll.vchannels,
            physical_channel_names=coll.pchannels,
            created_timestamp=coll.created_ts,
            created_utc_timestamp=physical_ms(coll.created_ts),
            update_timestamp=coll.update_ts,
            shards_num=len(coll.vchannels),
            consistency_level=coll.consistency_level,
            collection_name=coll.name,
            aliases=list(coll.aliases),
            properties=properties,
            db_name=coll.db_name,
            db_id=coll.db_id,
            num_partitions=len(coll.partitions),
        )

    @milvus_rpc(milvus_pb2.BoolResponse)
    async def HasCollection(self, request: milvus_pb2.HasCollectionRequest, context: grpc.aio.ServicerContext) -> milvus_pb2.BoolResponse:
        check_collection_name(request.collection_name)
        try:
            await self._coord.describe_collection(name=request.collection_name, db_name=current_database())
        except CollectionNotFound:
            return milvus_pb2.BoolResponse(status=success(), value=False)
        return milvus_pb2.BoolResponse(status=success(), value=True)

    @milvus_rpc(milvus_pb2.ShowCollectionsResponse)
    async def ShowCollections(self, request: milvus_pb2.ShowCollectionsRequest, context: grpc.aio.ServicerContext) -> milvus_pb2.ShowCollectionsResponse:
        listed = await self._coord.list_collections(current_database())
        visible = self._security.visible_collections(current_database())  # the caller's grants, as Milvus
        colls = sorted((c for c in listed if visible is None or c.name in visible),
                       key=lambda c: c.collection_id)
        return milvus_pb2.ShowCollectionsResponse(
            status=success(),
            collection_names=[c.name for c in colls],
            collection_ids=[c.collection_id for c in colls],
            created_timestamps=[c.created_timestamp for c in colls],
            created_utc_timestamps=[physical_ms(c.created_timestamp) for c in colls],
            shards_num=[len(c.vchannels) for c in colls],
        )

    @milvus_rpc(milvus_pb2.GetCollectionStatisticsResponse)
    async def GetCollectionStatistics(self, request: milvus_pb2.GetCollectionStatisticsRequest, context: grpc.aio.ServicerContext) -> milvus_pb2.GetCollectionStatisticsResponse:
        coll = await self._lookup(request.collection_name)
        # Inserted through the WAL, plus imported rows, minus rows compaction removed (as Milvus counts).
        rows = await self._stats.collection_rows(coll) + await self._job_rows(coll)
        return milvus_pb2.GetCollectionStatisticsResponse(
            status=success(), stats=[common_pb2.KeyValuePair(key="row_count", value=str(rows))]
        )

    # ---- load ----------------------------------------------------------------------------------
    @milvus_rpc(common_pb2.Status)
    async def LoadCollection(self, request: milvus_pb2.LoadCollectionRequest, context: grpc.aio.ServicerContext) -> common_pb2.Status:
        coll = await self._coll(request.collection_name)
        await self._coord.load_collection(
            coll.collection_id, replicas=request.replica_number or await default_replicas(self._cache)
        )
        self._reads.forget_view(coll.collection_id)
        return success()

    @milvus_rpc(common_pb2.Status)
    async def ReleaseCollection(self, request: milvus_pb2.ReleaseCollectionRequest, context: grpc.aio.ServicerContext) -> common_pb2.Status:
        coll = await self._coll(request.collection_name)
        await self._coord.release_collection(coll.collection_id)
        self._reads.forget_view(coll.collection_id)
        return success()

    @milvus_rpc(milvus_pb2.GetLoadStateResponse)
    async def GetLoadState(self, request: milvus_pb2.GetLoadStateRequest, context: grpc.aio.ServicerContext) -> milvus_pb2.GetLoadStateResponse:
        coll = await self._coll(request.collection_name)
        view = await self._reads.load_view(coll)
        partitions, _ = await read_partitions(self._cache, coll, list(request.partition_names))
        if partitions and not set(partitions) <= set(view.loaded_partitions):
            return milvus_pb2.GetLoadStateResponse(status=success(), state=common_pb2.LoadStateNotLoad)
        states: dict[int, common_pb2.LoadState.ValueType] = {
            LoadState.NOT_LOAD: common_pb2.LoadStateNotLoad,
            LoadState.LOADING: common_pb2.LoadStateLoading,
            LoadState.LOADED: common_pb2.LoadStateLoaded,
        }
        state = states.get(view.state, common_pb2.LoadStateNotExist)
        return milvus_pb2.GetLoadStateResponse(status=success(), state=state)

    @milvus_rpc(milvus_pb2.GetLoadingProgressResponse)
    async def GetLoadingProgress(self, request: milvus_pb2.GetLoadingProgressRequest, context: grpc.aio.ServicerContext) -> milvus_pb2.GetLoadingProgressResponse:
        coll = await self._coll(request.collection_name)
        view = await self._reads.load_view(coll)
        if view.state == LoadState.NOT_LOAD:
            raise StrataError(f"collection not loaded[collection={coll.name}]", ErrorCode.COLLECTION_NOT_LOADED)
        if view.load_error:
            # load_collection (which polls this) fails with the reason instead of waiting out its timeout.
            raise SegmentLoadFailed(f"load of collection {coll.name} failed (retried in the background): {view.load_error}")
        return milvus_pb2.GetLoadingProgressResponse(status=success(), progress=view.progress, refresh_progress=view.progress)

    # ---- writes --------------------------------------------------------------------------------
