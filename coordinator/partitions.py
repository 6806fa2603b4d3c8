"""Partition DDL: create, drop, and the partitions a new collection starts with.

A collection starts with ``_default``, or, when a field is its partition key,
with ``num_partitions`` partitions ``_default_0`` .. ``_default_{n-1}`` that
rows are hashed into (users cannot add or drop partitions then, as in Milvus).

create: a new id, then the catalog (rows can name the partition at once; the
        WAL needs no notice, segments are created per partition on demand).
drop:   refused while the partition is loaded -> DropPartition to each vchannel
        (the streaming node seals its growing segments and refuses later inserts
        into it) -> its segments become DROPPED -> it leaves the catalog.
A drop that fails half-way leaves the partition in the catalog; dropping it
again finishes the job (every step is idempotent).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace

import structlog

from common.errors import InvalidArgument
from common.message import DropPartition
from common.names import check_partition_name, collection_not_found
from common.schema import CollectionSchema, DataType
from coordinator.catalog import DEFAULT_PARTITION, Catalog, CollectionMeta, PartitionInfo
from coordinator.data.datacoord import DataCoordinator
from coordinator.idalloc import IDAllocator
from coordinator.tso import TimestampOracle
from streamingnode.client.producer import Producer

MAX_PARTITIONS = 1024
DEFAULT_KEY_PARTITIONS = 16


def partition_key_field(schema: CollectionSchema) -> str | None:
    keys = [f for f in schema.fields if f.is_partition_key]
    if not keys:
        return None
    if len(keys) > 1:
        raise InvalidArgument(f"there are more than one partition key fields: {[f.name for f in keys]}")
    key = keys[0]
    if key.is_primary:
        raise InvalidArgument(f"the partition key field {key.name} cannot be the primary key")
    if key.dtype not in (DataType.INT64, DataType.VARCHAR):
        raise InvalidArgument(f"the data type of the partition key field {key.name} must be Int64 or VarChar")
    return key.name


def initial_partitions(schema: CollectionSchema, num_partitions: int) -> list[str]:
    """The names of a new collection's partitions."""
    if partition_key_field(schema) is None:
        if num_partitions:
            raise InvalidArgument("num_partitions should only be specified with a partition key field")
        return [DEFAULT_PARTITION]
    n = num_partitions or DEFAULT_KEY_PARTITIONS
    if not 1 <= n <= MAX_PARTITIONS:
        raise InvalidArgument(f"num_partitions must be between 1 and {MAX_PARTITIONS}, got {n}")
    return [f"{DEFAULT_PARTITION}_{i}" for i in range(n)]


class PartitionDDL:
    def __init__(
        self,
        catalog: Catalog,
        ids: IDAllocator,
        tso: TimestampOracle,
        producer: Producer,
        data: DataCoordinator,
        lock: asyncio.Lock,
        is_loaded: Callable[[int, int], bool],
    ) -> None:
        self._catalog = catalog
        self._ids = ids
        self._tso = tso
        self._producer = producer
        self._data = data
        self._lock = lock  # the collection DDL's: one DDL at a time
        self._is_loaded = is_loaded  # (collection, partition) -> loaded?
        self._log = structlog.get_logger().bind(component="ddl")

    async def _current(self, meta: CollectionMeta) -> CollectionMeta:
        fresh = await self._catalog.get_collection(meta.collection_id)
        if fresh is None:
            raise collection_not_found(meta.name)
        return fresh

    async def create(self, meta: CollectionMeta, name: str) -> None:
        if partition_key_field(meta.schema) is not None:
            raise InvalidArgument("disable create partition if partition key mode is used")
        check_partition_name(name)
        async with self._lock:
            meta = await self._current(meta)
            if meta.partition(name) is not None:
                return  # creating an existing partition is a no-op, as in Milvus
            if len(meta.all_partitions()) >= MAX_PARTITIONS:
                raise InvalidArgument(f"partition number ({MAX_PARTITIONS}) exceeds max configuration")
            info = PartitionInfo(await self._ids.allocate(), name, await self._tso.allocate())
            await self._catalog.save_collection(replace(meta, partitions=(*meta.all_partitions(), info)))
        self._log.info("partition created", collection=meta.name, partition=name, partition_id=info.partition_id)

    async def drop(self, meta: CollectionMeta, name: str) -> None:
        if partition_key_field(meta.schema) is not None:
            raise InvalidArgument("disable drop partition if partition key mode is used")
        check_partition_name(name)
        if name == DEFAULT_PARTITION:
            raise InvalidArgument("default partition cannot be deleted")
        async with self._lock:
            meta = await self._current(meta)
            info = meta.partition(name)
            if info is None:
                return  # dropping a partition that does not exist is a no-op, as in Milvus
            if self._is_loaded(meta.collection_id, info.partition_id):
                raise InvalidArgument(
                    f"partition cannot be dropped, partition is loaded, please release it first: {name}"
                )
            cid, pid = meta.collection_id, info.partition_id
            await asyncio.gather(
                *(
                    self._producer.append(p, [DropPartition(vchannel=v, collection_id=cid, partition_id=pid)])
                    for v, p in zip(meta.vchannels, meta.pchannels, strict=True)
                )
            )
            await self._data.partition_dropped(meta.collection_id, info.partition_id)
            kept = tuple(p for p in meta.all_partitions() if p.partition_id != info.partition_id)
            await self._catalog.save_collection(replace(meta, partitions=kept))
        self._log.info("partition dropped", collection=meta.name, partition=name, partition_id=info.partition_id)
