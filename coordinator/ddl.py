"""Collection DDL: the WAL of every vchannel hears of it first, then the catalog changes.

create: reserve the name (state CREATING) -> append CreateCollection to each vchannel ->
        each vchannel's checkpoint starts at its CreateCollection -> CREATED.
drop:   mark DROPPING -> release -> append DropCollection to each vchannel -> the collection's
        segments become DROPPED (their files are garbage-collected later) -> remove the entries.
A coordinator that restarts finishes any CREATING or DROPPING collection it finds; a create
that finds its name held by a CREATING collection (an earlier create failed half-way) finishes it first.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable

import structlog

from common.database_properties import check_collection_count
from common.errors import ErrorCode, InvalidArgument, StrataError
from common.message import CreateCollection, DropCollection
from common.names import DEFAULT_DATABASE, DEFAULT_DATABASE_ID, check_collection_name, collection_not_found
from common.position import Position
from common.schema import CollectionSchema
from common.timezone import with_default_timezone
from coordinator.catalog import Catalog, CollectionMeta, CollectionState, PartitionInfo, vchannel_name
from coordinator.data.datacoord import DataCoordinator
from coordinator.databases import DatabaseMeta, Databases
from coordinator.idalloc import IDAllocator
from coordinator.partitions import initial_partitions
from coordinator.tso import TimestampOracle
from streamingnode.client.producer import Producer

MAX_SHARDS = 16


class DDL:
    def __init__(
        self,
        catalog: Catalog,
        ids: IDAllocator,
        tso: TimestampOracle,
        producer: Producer,
        pchannels: list[str],
        release: Callable[[int], Awaitable[None]],
        data: DataCoordinator,
        databases: Databases | None = None,
    ) -> None:
        self._catalog = catalog
        self._databases = databases
        self._data = data
        self._ids = ids
        self._tso = tso
        self._producer = producer
        self._pchannels = pchannels
        self._release = release
        self.lock = self._lock = asyncio.Lock()  # DDL is rare; one at a time keeps name checks simple
        self._log = structlog.get_logger().bind(component="ddl")
        if databases is not None:
            databases.bind(self._lock, self.has_collections)

    async def _database(self, name: str) -> DatabaseMeta:
        if self._databases is None:
            return DatabaseMeta(name=DEFAULT_DATABASE, database_id=DEFAULT_DATABASE_ID, created_ns=0)
        return await self._databases.get(name)

    async def has_collections(self, db_id: int) -> bool:
        """Whether database ``db_id`` holds a collection (one being created or dropped counts)."""
        return any(m.db_id == db_id for m in await self._catalog.list_collections())

    async def recover(self) -> None:
        for meta in await self._catalog.list_collections():
            if meta.state == CollectionState.CREATING:
                await self.finish_create(meta)
            elif meta.state == CollectionState.DROPPING:
                await self.finish_drop(meta)

    async def vchannel_counts(self) -> Counter[str]:
        counts: Counter[str] = Counter({p: 0 for p in self._pchannels})
        for meta in await self._catalog.list_collections():
            counts.update(meta.pchannels)
        return counts

    async def create_collection(
        self,
        schema: CollectionSchema,
        *,
        shards_num: int,
        consistency_level: int,
        properties: dict[str, str],
        num_partitions: int = 0,
        db_name: str = "",
    ) -> CollectionMeta:
        if shards_num < 1 or shards_num > MAX_SHARDS:
            raise InvalidArgument(f"shards_num must be between 1 and {MAX_SHARDS}, got {shards_num}")
        check_collection_name(schema.name)
        partition_names = initial_partitions(schema, num_partitions)
        async with self._lock:
            db = await self._database(db_name)
            properties = with_default_timezone(properties, db.properties)
            if await self._catalog.alias_target(schema.name, db.database_id) is not None:
                raise InvalidArgument(f"{schema.name} is an alias: it cannot be used as a collection name")
            taken_by = await self._catalog.collection_id_by_name(schema.name, db.database_id)
            if taken_by is not None:
                return await self._resume_create(
                    taken_by, schema, shards_num=shards_num, consistency_level=consistency_level, properties=properties
                )
            in_db = sum(m.db_id == db.database_id for m in await self._catalog.list_collections())
            check_collection_count(db.name, db.properties, in_db)
            counts = await self.vchannel_counts()
            chosen = sorted(self._pchannels, key=lambda p: (counts[p], p))
            collection_id = await self._ids.allocate(1 + len(partition_names))
            created_ts = await self._tso.allocate()
            vchannels = tuple(vchannel_name(chosen[i % len(chosen)], collection_id, i) for i in range(shards_num))
            meta = CollectionMeta(
                collection_id=collection_id,
                name=schema.name,
                schema=schema,
                vchannels=vchannels,
                consistency_level=consistency_level,
                properties=properties,
                created_ts=created_ts,
                default_partition_id=collection_id + 1,
                partitions=tuple(
                    PartitionInfo(collection_id + 1 + i, name, created_ts) for i, name in enumerate(partition_names)
                ),
                db_id=db.database_id,
                db_name=db.name,
            )
            if not await self._catalog.reserve_name(meta):
                raise StrataError(f"collection {schema.name} already exists", ErrorCode.COLLECTION_ALREADY_EXISTS)
            return await self.finish_create(meta)

    async def _resume_create(
        self,
        collection_id: int,
        schema: CollectionSchema,
        *,
        shards_num: int,
        consistency_level: int,
        properties: dict[str, str],
    ) -> CollectionMeta:
        """The name is taken. A CREATING collection is a create that failed half-way (a WAL append
        failed, e.g. while etcd or a streaming node was away): finish it now, as recovery would,
        rather than leave the name unusable (invisible yet "already exists") until the next
        coordinator start. If this request asks for that same collection, it is a client retrying
        an ambiguous failure and gets it; any other request finds the name taken.
        """
        taken = StrataError(f"collection {schema.name} already exists", ErrorCode.COLLECTION_ALREADY_EXISTS)
        meta = await self._catalog.get_collection(collection_id)
        if meta is None or meta.state != CollectionState.CREATING:
            raise taken
        self._log.info("finishing an earlier create", name=meta.name, collection_id=meta.collection_id)
        meta = await self.finish_create(meta)
        same = (
            meta.schema.to_json() == schema.to_json()
            and len(meta.vchannels) == shards_num
            and meta.consistency_level == consistency_level
            and meta.properties == properties
        )
        if not same:
            raise taken
        return meta

    async def finish_create(self, meta: CollectionMeta) -> CollectionMeta:
        appended = await asyncio.gather(
            *(
                self._producer.append(
                    p, [CreateCollection(vchannel=v, collection_id=meta.collection_id, schema=meta.schema)]
                )
                for v, p in zip(meta.vchannels, meta.pchannels, strict=True)
            )
        )
        # Flushers and delegators of a new vchannel start right after its CreateCollection.
        await self._data.collection_created(
            [(v, Position(r.message_id, r.timetick)) for v, (r,) in zip(meta.vchannels, appended, strict=True)]
        )
        meta = await self._catalog.mark_state(meta, CollectionState.CREATED)
        self._log.info("collection created", name=meta.name, collection_id=meta.collection_id)
        return meta

    async def drop_collection(self, meta: CollectionMeta) -> None:
        async with self._lock:
            meta = await self._catalog.mark_state(meta, CollectionState.DROPPING)
            await self.finish_drop(meta)

    async def finish_drop(self, meta: CollectionMeta) -> None:
        await self._release(meta.collection_id)
        await asyncio.gather(
            *(
                self._producer.append(p, [DropCollection(vchannel=v, collection_id=meta.collection_id)])
                for v, p in zip(meta.vchannels, meta.pchannels, strict=True)
            )
        )
        await self._data.collection_dropped(meta)
        await self._catalog.remove_collection(meta)
        self._log.info("collection dropped", name=meta.name, collection_id=meta.collection_id)

    async def get(self, *, name: str = "", collection_id: int = 0, db_name: str = "") -> CollectionMeta:
        """A CREATED collection by id, or by name (or alias) in database ``db_name`` ("": "default";
        ``DatabaseNotFound`` if there is no such database)."""
        if not collection_id:
            db = await self._database(db_name)
            found = await self._catalog.collection_id_by_name(name, db.database_id)
            if found is None:
                found = await self._catalog.alias_target(name, db.database_id)
            if found is None:
                raise collection_not_found(name, db.name)
            collection_id = found
        meta = await self._catalog.get_collection(collection_id)
        if meta is None or meta.state != CollectionState.CREATED:
            raise collection_not_found(name or collection_id, db_name)
        return meta
