"""The collection catalog in etcd (key layout in ``coordinator/README.md``).

Collection names and aliases are scoped by database: the "default" database's keep the keys
they always had (``rootcoord/collection-name/<name>``, ``rootcoord/alias/<alias>``), another
database's are ``.../<database id>/<name>`` (a name cannot start with a digit, so the two never
meet). ``db_id`` defaults to the "default" database's.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, replace
from enum import Enum

from common.etcd.metastore import MetaStore, Op
from common.names import DEFAULT_DATABASE, DEFAULT_DATABASE_ID
from common.schema import CollectionSchema

_COLL = "rootcoord/collection/"
_NAME = "rootcoord/collection-name/"
_ALIAS = "rootcoord/alias/"
_INDEX = "rootcoord/index/"
_LOAD = "querycoord/load/"
_REPLICA = "querycoord/replica/"


def _scoped(db_id: int, name: str) -> str:
    return name if db_id == DEFAULT_DATABASE_ID else f"{db_id}/{name}"


def name_key(db_id: int, name: str) -> str:
    return f"{_NAME}{_scoped(db_id, name)}"


def alias_key(db_id: int, alias: str) -> str:
    return f"{_ALIAS}{_scoped(db_id, alias)}"


def _split_alias_key(key: str) -> tuple[int, str]:
    """``rootcoord/alias/...`` -> (database id, alias)."""
    rest = key.removeprefix(_ALIAS)
    head, _, tail = rest.partition("/")
    return (int(head), tail) if tail and head.isdigit() else (DEFAULT_DATABASE_ID, rest)


class CollectionState(str, Enum):
    CREATING = "CREATING"
    CREATED = "CREATED"
    DROPPING = "DROPPING"


DEFAULT_PARTITION = "_default"


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    partition_id: int
    name: str
    created_ts: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class CollectionMeta:
    collection_id: int
    name: str
    schema: CollectionSchema
    vchannels: tuple[str, ...]
    consistency_level: int
    properties: dict[str, str] = field(default_factory=dict)
    created_ts: int = 0
    default_partition_id: int = 0
    state: CollectionState = CollectionState.CREATING
    # Empty in metadata written before partitions existed: the default partition alone.
    partitions: tuple[PartitionInfo, ...] = ()
    # When the schema last changed (0: never; the creation timestamp stands for it).
    updated_ts: int = 0
    # A schema change (a field added) on its way to the WAL: the next one until every vchannel has
    # it, then ``schema`` (``coordinator/schema_ddl.py``). Readers of the data take it already.
    pending_schema: CollectionSchema | None = None
    # The database it belongs to (metadata written before databases existed: "default").
    db_id: int = DEFAULT_DATABASE_ID
    db_name: str = DEFAULT_DATABASE

    @property
    def update_ts(self) -> int:
        """Milvus' ``update_timestamp``: the last schema change, else the creation."""
        return self.updated_ts or self.created_ts

    @property
    def latest_schema(self) -> CollectionSchema:
        """The schema the data is written with: a pending change's, else the current one. Flushers,
        delegators and jobs take this one (they fill an added field in older rows either way)."""
        return self.pending_schema or self.schema

    @property
    def pchannels(self) -> tuple[str, ...]:
        return tuple(pchannel_of(v) for v in self.vchannels)

    def all_partitions(self) -> tuple[PartitionInfo, ...]:
        return self.partitions or (PartitionInfo(self.default_partition_id, DEFAULT_PARTITION, self.created_ts),)

    def partition(self, name: str) -> PartitionInfo | None:
        return next((p for p in self.all_partitions() if p.name == name), None)

    def to_json(self) -> bytes:
        d = asdict(self)
        d["schema"] = self.schema.to_json()
        d["pending_schema"] = None if self.pending_schema is None else self.pending_schema.to_json()
        d["state"] = self.state.value
        return json.dumps(d).encode()

    @staticmethod
    def from_json(raw: bytes) -> CollectionMeta:
        d = json.loads(raw)
        d["schema"] = CollectionSchema.from_json(d["schema"])
        pending = d.get("pending_schema")
        d["pending_schema"] = None if pending is None else CollectionSchema.from_json(pending)
        d["vchannels"] = tuple(d["vchannels"])
        d["state"] = CollectionState(d["state"])
        d["partitions"] = tuple(PartitionInfo(**p) for p in d.get("partitions", ()))
        return CollectionMeta(**d)


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexMeta:
    collection_id: int
    field_name: str
    index_name: str
    index_id: int
    params: dict[str, str]

    def to_json(self) -> bytes:
        return json.dumps(asdict(self)).encode()

    @staticmethod
    def from_json(raw: bytes) -> IndexMeta:
        return IndexMeta(**json.loads(raw))


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadMeta:
    """What is loaded, as Milvus's load types have it.

    ``partition_ids`` None: ``load_collection`` (LoadCollection): every partition, those created
    later too, but for ``released_ids``, partitions released since (``load_partitions`` or
    ``load_collection`` loads them again). A list: ``load_partitions`` (LoadPartition): those
    partitions only; a partition created later is not loaded.
    """

    collection_id: int
    replica_number: int
    partition_ids: list[int] | None = None
    released_ids: list[int] = field(default_factory=list)

    def loaded(self, partitions: Iterable[int]) -> list[int]:
        """Which of ``partitions`` (the collection's) are loaded."""
        if self.partition_ids is None:
            return [p for p in partitions if p not in self.released_ids]
        return [p for p in partitions if p in self.partition_ids]

    def is_loaded(self, partition_id: int) -> bool:
        if self.partition_ids is None:
            return partition_id not in self.released_ids
        return partition_id in self.partition_ids

    def to_json(self) -> bytes:
        return json.dumps(asdict(self)).encode()

    @staticmethod
    def from_json(raw: bytes) -> LoadMeta:
        return LoadMeta(**json.loads(raw))


def vchannel_name(pchannel: str, collection_id: int, shard: int) -> str:
    return f"{pchannel}_{collection_id}v{shard}"


def pchannel_of(vchannel: str) -> str:
    return vchannel.rsplit("_", 1)[0]


class Catalog:
    """Typed reads and writes of collection, index and load metadata."""

    def __init__(self, store: MetaStore) -> None:
        self._store = store

    async def list_collections(self) -> list[CollectionMeta]:
        return [CollectionMeta.from_json(kv.value) for kv in await self._store.scan(_COLL)]

    async def get_collection(self, collection_id: int) -> CollectionMeta | None:
        raw = await self._store.get(f"{_COLL}{collection_id}")
        return None if raw is None else CollectionMeta.from_json(raw)

    async def collection_id_by_name(self, name: str, db_id: int = DEFAULT_DATABASE_ID) -> int | None:
        raw = await self._store.get(name_key(db_id, name))
        return None if raw is None else int(raw)

    async def reserve_name(self, meta: CollectionMeta) -> bool:
        """Claim ``meta.name`` and save ``meta`` in one transaction; False if a collection already has the name.

        One transaction, so a failure cannot leave the name claimed by a collection that was never saved
        (which nothing would ever finish or remove).
        """
        return await self._store.create_if_absent(
            name_key(meta.db_id, meta.name),
            str(meta.collection_id).encode(),
            also=[Op(key=f"{_COLL}{meta.collection_id}", value=meta.to_json())],
        )

    async def rename(
        self, meta: CollectionMeta, new_name: str, *, db_id: int | None = None, db_name: str = ""
    ) -> bool:
        """Move ``meta``'s name reservation to ``new_name`` (in database ``db_id``, else its own)
        and save it renamed, in one transaction; False if a collection there already has ``new_name``."""
        moved = replace(meta, name=new_name)
        if db_id is not None:
            moved = replace(moved, db_id=db_id, db_name=db_name)
        return await self._store.create_if_absent(
            name_key(moved.db_id, new_name),
            str(meta.collection_id).encode(),
            also=[
                Op(key=name_key(meta.db_id, meta.name), value=None),
                Op(key=f"{_COLL}{meta.collection_id}", value=moved.to_json()),
            ],
        )

    async def alias_target(self, alias: str, db_id: int = DEFAULT_DATABASE_ID) -> int | None:
        raw = await self._store.get(alias_key(db_id, alias))
        return None if raw is None else int(raw)

    async def list_aliases(self, db_id: int | None = None) -> dict[str, int]:
        """Alias -> collection id, of database ``db_id`` (None: every database's, which may repeat a name)."""
        out: dict[str, int] = {}
        for kv in await self._store.scan(_ALIAS):
            alias_db, alias = _split_alias_key(kv.key)
            if db_id is None or alias_db == db_id:
                out[alias] = int(kv.value)
        return out

    async def save_alias(self, alias: str, collection_id: int, db_id: int = DEFAULT_DATABASE_ID) -> None:
        await self._store.put(alias_key(db_id, alias), str(collection_id).encode())

    async def remove_alias(self, alias: str, db_id: int = DEFAULT_DATABASE_ID) -> None:
        await self._store.delete(alias_key(db_id, alias))

    async def replace_collection(
        self,
        old: CollectionMeta,
        new: CollectionMeta,
        indexes: list[IndexMeta],
        aliases: list[str],
        load: LoadMeta | None,
    ) -> None:
        """Truncate's one transaction: ``new`` takes ``old``'s name, indexes, aliases and load
        config, and ``old`` (now DROPPING) is left for the drop to finish."""
        ops = [
            Op(key=f"{_COLL}{new.collection_id}", value=new.to_json()),
            Op(key=name_key(new.db_id, new.name), value=str(new.collection_id).encode()),
            Op(key=f"{_COLL}{old.collection_id}", value=old.to_json()),
        ]
        ops += [Op(key=f"{_INDEX}{i.collection_id}/{i.index_name}", value=i.to_json()) for i in indexes]
        ops += [Op(key=alias_key(new.db_id, a), value=str(new.collection_id).encode()) for a in aliases]
        if load is not None:
            ops.append(Op(key=f"{_LOAD}{load.collection_id}", value=load.to_json()))
        await self._store.multi(ops)

    async def save_collection(self, meta: CollectionMeta) -> None:
        await self._store.put(f"{_COLL}{meta.collection_id}", meta.to_json())

    async def mark_state(self, meta: CollectionMeta, state: CollectionState) -> CollectionMeta:
        updated = replace(meta, state=state)
        await self.save_collection(updated)
        return updated

    async def remove_collection(self, meta: CollectionMeta) -> None:
        """Drop a collection's catalog entries (collection, name, indexes, load config) at once."""
        ops = [
            Op(key=f"{_COLL}{meta.collection_id}", value=None),
            Op(key=f"{_LOAD}{meta.collection_id}", value=None),
        ]
        if await self.collection_id_by_name(meta.name, meta.db_id) == meta.collection_id:  # else truncate's successor has it
            ops.append(Op(key=name_key(meta.db_id, meta.name), value=None))
        ops += [Op(key=kv.key, value=None) for kv in await self._store.scan(f"{_INDEX}{meta.collection_id}/")]
        await self._store.multi(ops)

    async def list_indexes(self, collection_id: int) -> list[IndexMeta]:
        return [IndexMeta.from_json(kv.value) for kv in await self._store.scan(f"{_INDEX}{collection_id}/")]

    async def save_index(self, index: IndexMeta) -> None:
        await self._store.put(f"{_INDEX}{index.collection_id}/{index.index_name}", index.to_json())

    async def drop_index(self, index: IndexMeta) -> None:
        await self._store.delete(f"{_INDEX}{index.collection_id}/{index.index_name}")

    async def list_loads(self) -> list[LoadMeta]:
        return [LoadMeta.from_json(kv.value) for kv in await self._store.scan(_LOAD)]

    async def get_load(self, collection_id: int) -> LoadMeta | None:
        raw = await self._store.get(f"{_LOAD}{collection_id}")
        return None if raw is None else LoadMeta.from_json(raw)

    async def save_load(self, load: LoadMeta) -> None:
        await self._store.put(f"{_LOAD}{load.collection_id}", load.to_json())

    async def remove_load(self, collection_id: int) -> None:
        await self._store.delete(f"{_LOAD}{collection_id}")

    async def list_replicas(self) -> dict[int, dict[int, frozenset[int]]]:
        """collection -> replica id -> member query nodes."""
        out: dict[int, dict[int, frozenset[int]]] = {}
        for kv in await self._store.scan(_REPLICA):
            d = json.loads(kv.value)
            out[int(d["collection_id"])] = {int(r): frozenset(ns) for r, ns in d["replicas"].items()}
        return out

    async def save_replicas(self, collection_id: int, replicas: dict[int, frozenset[int]]) -> None:
        doc = {"collection_id": collection_id, "replicas": {str(r): sorted(ns) for r, ns in replicas.items()}}
        await self._store.put(f"{_REPLICA}{collection_id}", json.dumps(doc).encode())

    async def remove_replicas(self, collection_id: int) -> None:
        await self._store.delete(f"{_REPLICA}{collection_id}")
