"""Truncate: the collection keeps its name, schema, partitions, indexes, aliases and load
state, and loses every row.

It is done by succession rather than by deleting rows: a successor collection
(new id, new vchannels on the same pchannels, partitions of the same names)
takes the name, the indexes, the aliases and the load config in one etcd
transaction that also marks the old collection DROPPING; then the successor
is created on the WAL and loaded, and the old one is dropped like any other
(its segments become DROPPED and are garbage-collected). A coordinator that
dies in between finishes both at recovery, since the transaction left the
successor CREATING and the old one DROPPING. Readers see the old rows until
the transaction and none after it; the collection id changes (Milvus keeps it).
"""

from __future__ import annotations

from dataclasses import replace

import structlog

from common.names import collection_not_found
from coordinator.catalog import (
    Catalog,
    CollectionMeta,
    CollectionState,
    LoadMeta,
    PartitionInfo,
    pchannel_of,
    vchannel_name,
)
from coordinator.ddl import DDL
from coordinator.idalloc import IDAllocator
from coordinator.query.coord import QueryCoordinator
from coordinator.tso import TimestampOracle


class Truncator:
    def __init__(
        self, ddl: DDL, catalog: Catalog, ids: IDAllocator, tso: TimestampOracle, query: QueryCoordinator
    ) -> None:
        self._ddl = ddl
        self._catalog = catalog
        self._ids = ids
        self._tso = tso
        self._query = query
        self._log = structlog.get_logger().bind(component="ddl")

    async def truncate(self, meta: CollectionMeta) -> CollectionMeta:
        async with self._ddl.lock:
            old = await self._catalog.get_collection(meta.collection_id)
            if old is None or old.state != CollectionState.CREATED:
                raise collection_not_found(meta.name)
            parts = old.all_partitions()
            new_id = await self._ids.allocate(1 + len(parts))
            created_ts = await self._tso.allocate()
            renumbered = {p.partition_id: new_id + 1 + i for i, p in enumerate(parts)}
            new = replace(
                old,
                collection_id=new_id,
                vchannels=tuple(vchannel_name(pchannel_of(v), new_id, i) for i, v in enumerate(old.vchannels)),
                created_ts=created_ts,
                default_partition_id=renumbered.get(old.default_partition_id, new_id + 1),
                partitions=tuple(PartitionInfo(renumbered[p.partition_id], p.name, created_ts) for p in parts),
                state=CollectionState.CREATING,
            )
            indexes = [
                replace(i, collection_id=new_id, index_id=await self._ids.allocate())
                for i in await self._catalog.list_indexes(old.collection_id)
            ]
            aliases = sorted(a for a, c in (await self._catalog.list_aliases(old.db_id)).items() if c == old.collection_id)
            old_load = await self._catalog.get_load(old.collection_id)
            load = None
            if old_load is not None:
                ids = None if old_load.partition_ids is None else [renumbered[p] for p in old_load.partition_ids]
                released = [renumbered[p] for p in old_load.released_ids if p in renumbered]
                load = LoadMeta(
                    collection_id=new_id,
                    replica_number=old_load.replica_number,
                    partition_ids=ids,
                    released_ids=released,
                )
            dropping = replace(old, state=CollectionState.DROPPING)
            await self._catalog.replace_collection(dropping, new, indexes, aliases, load)
            new = await self._ddl.finish_create(new)
            if load is not None:
                await self._query.load(new, load.replica_number, load.partition_ids)
                if load.released_ids:
                    await self._query.release_partitions(new, load.released_ids)
            await self._ddl.finish_drop(dropping)
        self._log.info("collection truncated", name=new.name, old_id=old.collection_id, new_id=new_id)
        return new
