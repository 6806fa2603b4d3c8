"""The proxy's cache of collection metadata, keyed by (database, name), and of database records.

A name is looked up in the database of the RPC being served (``dbcontext.current_database``).

DDL through this proxy invalidates what it changed at once. DDL through another proxy
(a field added, properties altered, a rename, an index) is seen within milliseconds:
``start`` follows the coordinator's catalog in etcd (``rootcoord/``) and forgets a
collection's entries when its keys change, as Milvus' root coordinator expires every
proxy's cache. While that watch is down (etcd away), entries also expire after
``ENTRY_TTL_SECONDS``.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

import structlog
from aetcd.utils import prefix_range_end

from common.coordapi import CoordinatorAPI
from common.coordapi.api import CollectionInfo, DatabaseInfo
from common.etcd.metastore import MetaStore
from common.etcd.watch import EtcdWatch
from common.names import DEFAULT_DATABASE, DEFAULT_DATABASE_ID
from common.schema import CollectionSchema
from common.tasks import BackgroundTasks
from proxy.dbcontext import current_database

DEFAULT_PARTITION = "_default"
ENTRY_TTL_SECONDS = 5.0  # how long a proxy may act on metadata another proxy changed, if not told
CATALOG_PREFIX = "rootcoord/"  # the coordinator's catalog (coordinator/README.md, "etcd keys")
# Catalog keys naming one collection by id: a change forgets that collection; any other key, everything.
_BY_ID = ("collection/", "index/")


@dataclass(frozen=True, slots=True, kw_only=True)
class CollectionEntry:
    collection_id: int
    name: str
    schema: CollectionSchema
    vchannels: tuple[str, ...]
    pchannels: tuple[str, ...]
    consistency_level: int
    properties: dict[str, str]
    created_ts: int
    default_partition_id: int
    partitions: dict[str, int]  # name -> id, in creation order
    partition_key: str | None = None  # the partition key field, if any
    aliases: tuple[str, ...] = ()
    index_metrics: dict[str, str] = field(default_factory=dict)  # vector field -> its index's metric
    index_types: dict[str, str] = field(default_factory=dict)  # vector field -> its index_type, upper case
    update_ts: int = 0  # when the schema last changed (the creation until then): Milvus' update_timestamp
    db_name: str = DEFAULT_DATABASE
    db_id: int = DEFAULT_DATABASE_ID

    @property
    def key_partitions(self) -> list[tuple[str, int]]:
        """A partition-key collection's partitions in hash order (``_default_0`` first)."""
        return sorted(self.partitions.items(), key=lambda kv: int(kv[0].rsplit("_", 1)[1]))

    @staticmethod
    def from_info(info: CollectionInfo) -> CollectionEntry:
        schema = CollectionSchema.from_json(info.schema_json)
        return CollectionEntry(
            collection_id=info.collection_id,
            name=info.name,
            schema=schema,
            vchannels=tuple(info.vchannels),
            pchannels=tuple(info.pchannels),
            consistency_level=info.consistency_level,
            properties=dict(info.properties),
            created_ts=info.created_timestamp,
            default_partition_id=info.default_partition_id,
            partitions={p.name: p.partition_id for p in info.partitions}
            or {DEFAULT_PARTITION: info.default_partition_id},
            partition_key=next((f.name for f in schema.fields if f.is_partition_key), None),
            aliases=tuple(info.aliases),
            index_metrics={i.field_name: i.params.get("metric_type", "").upper() for i in info.indexes},
            index_types={i.field_name: i.params.get("index_type", "").upper() for i in info.indexes},
            update_ts=info.update_timestamp or info.created_timestamp,
            db_name=info.db_name or DEFAULT_DATABASE,
            db_id=info.db_id or DEFAULT_DATABASE_ID,
        )


class MetaCache:
    """Entries keyed by the name asked for (a collection name or an alias). DDL through this
    proxy invalidates them; DDL through another proxy, once the catalog watch sees it (``start``)."""

    def __init__(self, coord: CoordinatorAPI, ttl: float = ENTRY_TTL_SECONDS) -> None:
        self._coord = coord
        self._ttl = ttl
        self._by_name: dict[tuple[str, str], tuple[float, CollectionEntry]] = {}
        self._databases: dict[str, tuple[float, DatabaseInfo]] = {}
        self._generation = 0  # bumped by every invalidation
        self._log = structlog.get_logger().bind(component="meta-cache")
        self._tasks = BackgroundTasks("meta-cache")

    def start(self, store: MetaStore) -> None:
        """Follow the catalog in ``store`` until ``stop``."""
        self._tasks.start(self._follow_catalog(store), name="meta-cache-follow")

    async def stop(self) -> None:
        await self._tasks.stop()

    async def _follow_catalog(self, store: MetaStore) -> None:
        """Forget entries whose catalog keys change; everything when the watch (re)starts, since
        changes while no watch was open are not known."""
        full = store.full_key(CATALOG_PREFIX)
        while True:
            try:
                async with EtcdWatch(store.client, full, range_end=prefix_range_end(full)) as watch:
                    self.invalidate_all()
                    async for batch in watch.events():
                        for ev in batch:
                            self._changed(ev.key.decode()[len(full.decode()) :])
            except asyncio.CancelledError:
                raise
            except Exception as err:  # task boundary: the watch must outlive etcd hiccups
                self._log.warning("catalog watch failed, re-watching", error=str(err))
            await asyncio.sleep(0.5)

    def _changed(self, key: str) -> None:
        """A catalog key changed: ``collection/<id>``, ``index/<id>/<name>``, or a name or alias key."""
        for prefix in _BY_ID:
            if key.startswith(prefix):
                raw = key[len(prefix) :].split("/", 1)[0]
                if raw.isdigit():
                    self.invalidate_id(int(raw))
                    return
        self.invalidate_all()

    def invalidate_id(self, collection_id: int) -> None:
        self._generation += 1
        for key in [k for k, (_, e) in self._by_name.items() if e.collection_id == collection_id]:
            del self._by_name[key]

    async def get(self, name: str, *, refresh: bool = False) -> CollectionEntry:
        """The collection ``name`` in the current database; raises ``CollectionNotFound`` if it
        does not exist there (``DatabaseNotFound`` if the database does not)."""
        db = current_database()
        cached = None if refresh else self._by_name.get((db, name))
        if cached is not None and time.monotonic() - cached[0] < self._ttl:
            return cached[1]
        generation = self._generation
        entry = CollectionEntry.from_info(await self._coord.describe_collection(name=name, db_name=db))
        if generation == self._generation:  # else a change arrived meanwhile: the answer may predate it
            self._by_name[(db, name)] = (time.monotonic(), entry)
        return entry

    async def database(self, name: str) -> DatabaseInfo:
        """The database ``name`` (its properties); raises ``DatabaseNotFound`` if there is none."""
        cached = self._databases.get(name)
        if cached is not None and time.monotonic() - cached[0] < self._ttl:
            return cached[1]
        generation = self._generation
        database = await self._coord.describe_database(name)
        if generation == self._generation:
            self._databases[name] = (time.monotonic(), database)
        return database

    def invalidate(self, name: str) -> None:
        """Forget ``name`` (a collection name or alias) in every database: a conservative reach."""
        self._generation += 1
        for key in [k for k, (_, e) in self._by_name.items() if k[1] == name or e.name == name or name in e.aliases]:
            del self._by_name[key]

    def invalidate_all(self) -> None:
        self._generation += 1
        self._by_name.clear()
        self._databases.clear()
