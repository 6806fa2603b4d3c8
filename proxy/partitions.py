"""Partition RPCs of the proxy, and resolving partition names for writes and reads.

Mixed into ``MilvusProxy``. A collection's partitions live in the
coordinator's catalog; the proxy's cached entry is refreshed once when a name
is not found, so a partition another proxy created moments ago is found.
Partition-key collections do not take partition names on writes or reads
(rows and reads are routed by the key), as in Milvus.
"""

from __future__ import annotations

from collections.abc import Sequence

import grpc
from pymilvus.grpc_gen import common_pb2, milvus_pb2

from common.coordapi import LoadState
from common.errors import InvalidArgument, PartitionNotFound
from common.names import check_collection_name, check_partition_name
from proxy.databases import default_replicas
from proxy.metacache import CollectionEntry, MetaCache
from proxy.parts import ProxyParts
from proxy.rpc import milvus_rpc
from proxy.status import success


async def partition_id(cache: MetaCache, coll: CollectionEntry, name: str) -> int:
    """The id of partition ``name`` (the cache is refreshed once if it does not know it)."""
    if name in coll.partitions:
        return coll.partitions[name]
    fresh = await cache.get(coll.name, refresh=True)
    if name not in fresh.partitions:
        raise PartitionNotFound(f"partition not found[partition={name}]")
    return fresh.partitions[name]


async def write_partition(cache: MetaCache, coll: CollectionEntry, name: str) -> int | None:
    """The partition rows go to: the named one, or None (the default, or by partition key)."""
    if not name:
        return None
    if coll.partition_key is not None:
        raise InvalidArgument("not support manually specifying the partition names if partition key mode is used")
    check_partition_name(name)
    return await partition_id(cache, coll, name)


async def read_partitions(
    cache: MetaCache, coll: CollectionEntry, names: Sequence[str]
) -> tuple[list[int] | None, dict[int, str]]:
    """The partitions a read names (None: every loaded one), and their names for errors."""
    if not names:
        return None, {}
    if coll.partition_key is not None:
        raise InvalidArgument("not support manually specifying the partition names if partition key mode is used")
    for n in names:
        check_partition_name(n, strict=False)
    ids = {await partition_id(cache, coll, n): n for n in names}
    return sorted(ids), ids


class PartitionRPCs(ProxyParts):
    def _partitions_changed(self, coll: CollectionEntry) -> None:
        self._cache.invalidate(coll.name)
        self._reads.forget_view(coll.collection_id)

    @milvus_rpc(common_pb2.Status)
    async def CreatePartition(
        self, request: milvus_pb2.CreatePartitionRequest, context: grpc.aio.ServicerContext
    ) -> common_pb2.Status:
        coll = await self._coll(request.collection_name)
        await self._coord.create_partition(coll.collection_id, request.partition_name)
        self._partitions_changed(coll)
        return success()

    @milvus_rpc(common_pb2.Status)
    async def DropPartition(
        self, request: milvus_pb2.DropPartitionRequest, context: grpc.aio.ServicerContext
    ) -> common_pb2.Status:
        coll = await self._coll(request.collection_name)
        await self._coord.drop_partition(coll.collection_id, request.partition_name)
        self._partitions_changed(coll)
        return success()

    @milvus_rpc(milvus_pb2.BoolResponse)
    async def HasPartition(
        self, request: milvus_pb2.HasPartitionRequest, context: grpc.aio.ServicerContext
    ) -> milvus_pb2.BoolResponse:
        check_collection_name(request.collection_name)
        check_partition_name(request.partition_name)
        coll = await self._cache.get(request.collection_name, refresh=True)
        return milvus_pb2.BoolResponse(status=success(), value=request.partition_name in coll.partitions)

    @milvus_rpc(milvus_pb2.ShowPartitionsResponse)
    async def ShowPartitions(
        self, request: milvus_pb2.ShowPartitionsRequest, context: grpc.aio.ServicerContext
    ) -> milvus_pb2.ShowPartitionsResponse:
        check_collection_name(request.collection_name)
        if request.type == milvus_pb2.InMemory:
            for n in request.partition_names:
                check_partition_name(n)
        coll = await self._cache.get(request.collection_name, refresh=True)
        names = list(request.partition_names) or list(coll.partitions)
        for n in names:
            if n not in coll.partitions:
                raise PartitionNotFound(f"partition not found[partition={n}]")
        view = await self._reads.load_view(coll)
        loaded = set(view.loaded_partitions) if view.state != LoadState.NOT_LOAD else set()
        return milvus_pb2.ShowPartitionsResponse(
            status=success(),
            partition_names=names,
            partitionIDs=[coll.partitions[n] for n in names],
            created_timestamps=[coll.created_ts for _ in names],
            created_utc_timestamps=[0 for _ in names],
            inMemory_percentages=[100 if coll.partitions[n] in loaded else 0 for n in names],
        )

    @milvus_rpc(common_pb2.Status)
    async def LoadPartitions(
        self, request: milvus_pb2.LoadPartitionsRequest, context: grpc.aio.ServicerContext
    ) -> common_pb2.Status:
        check_collection_name(request.collection_name)
        coll = await self._cache.get(request.collection_name, refresh=True)
        if not request.partition_names:
            raise InvalidArgument("partition names should not be empty")
        for n in request.partition_names:
            await partition_id(self._cache, coll, n)
        await self._coord.load_collection(
            coll.collection_id,
            replicas=request.replica_number or await default_replicas(self._cache),
            partition_names=list(request.partition_names),
        )
        self._reads.forget_view(coll.collection_id)
        return success()

    @milvus_rpc(common_pb2.Status)
    async def ReleasePartitions(
        self, request: milvus_pb2.ReleasePartitionsRequest, context: grpc.aio.ServicerContext
    ) -> common_pb2.Status:
        coll = await self._coll(request.collection_name)
        if not request.partition_names:
            raise InvalidArgument("partition names should not be empty")
        await self._coord.release_partitions(coll.collection_id, list(request.partition_names))
        self._partitions_changed(coll)
        return success()

    @milvus_rpc(milvus_pb2.GetPartitionStatisticsResponse)
    async def GetPartitionStatistics(
        self, request: milvus_pb2.GetPartitionStatisticsRequest, context: grpc.aio.ServicerContext
    ) -> milvus_pb2.GetPartitionStatisticsResponse:
        # As Milvus: the rows of the partition's flushed segments in the coordinator's metadata, so no
        # load is needed; rows count once flushed, deleted rows are subtracted once compacted away.
        coll = await self._lookup(request.collection_name)
        pid = await partition_id(self._cache, coll, request.partition_name)
        rows = sum(s.rows for s in await self._coord.list_segments(coll.collection_id) if s.partition_id == pid)
        return milvus_pb2.GetPartitionStatisticsResponse(
            status=success(), stats=[common_pb2.KeyValuePair(key="row_count", value=str(rows))]
        )
