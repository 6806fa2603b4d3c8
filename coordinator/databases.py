"""Databases: "default", created with the cluster as Milvus' rootcoord creates it, and those users create.

A record ``rootcoord/database/<name>`` (JSON) holds the id ("default" has 1, Milvus'
``DefaultDBID``; others get one from the id allocator), the creation time in nanoseconds since
the epoch (as Milvus keeps it) and the properties. The first coordinator that leads writes
"default" once (put-if-absent); later leaders read it. Collections, names and aliases carry the
database id (``coordinator/catalog.py``).

Creating, dropping and altering a database take the collection DDL's lock, so a database cannot
be dropped while a collection is being created in it. As in Milvus 2.6 (``meta_table.go``, whose
refusals here are plain errors, code 65535):
at most ``MAX_DATABASES`` besides "default"; "default" cannot be dropped; a database that still
holds collections cannot be dropped; dropping one that does not exist succeeds.
``DatabaseRPCs`` is mixed into ``CoordinatorService``.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, field, replace

import grpc
import structlog

from common.errors import DatabaseNumLimitExceeded, ErrorCode, InvalidArgument, StrataError
from common.etcd.metastore import MetaStore
from common.grpcutil import ok_status, rpc_method
from common.names import DEFAULT_DATABASE, DEFAULT_DATABASE_ID, check_database_name, database_not_found
from common.timezone import check_timezone
from protos import databases_pb2 as dpb

_DATABASE = "rootcoord/database/"


def _refused(message: str) -> StrataError:
    """Milvus 2.6's meta table refuses these with plain errors: code 65535."""
    return StrataError(message, ErrorCode.REFUSED)
MAX_DATABASES = 64  # Milvus' rootCoord.maxDatabaseNum, "default" not counted


@dataclass(frozen=True, slots=True, kw_only=True)
class DatabaseMeta:
    name: str
    database_id: int
    created_ns: int
    properties: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> bytes:
        return json.dumps(asdict(self)).encode()

    @staticmethod
    def from_json(raw: bytes) -> DatabaseMeta:
        return DatabaseMeta(**json.loads(raw))

    def to_pb(self) -> dpb.DatabaseInfo:
        return dpb.DatabaseInfo(
            name=self.name, id=self.database_id, created_timestamp=self.created_ns, properties=self.properties
        )


class Databases:
    """The database records; ``start`` makes sure "default" exists.

    ``lock`` (the collection DDL's, given by ``bind``) serialises changes with collection DDL;
    ``has_collections(db_id)`` tells whether a database still holds any.
    """

    def __init__(
        self,
        store: MetaStore,
        clock_ns: Callable[[], int] = time.time_ns,
        allocate_id: Callable[[], Awaitable[int]] | None = None,
    ) -> None:
        self._store = store
        self._clock_ns = clock_ns
        self._allocate_id = allocate_id
        self._lock = asyncio.Lock()
        self._has_collections: Callable[[int], Awaitable[bool]] | None = None
        self._log = structlog.get_logger().bind(component="databases")

    def bind(self, lock: asyncio.Lock, has_collections: Callable[[int], Awaitable[bool]]) -> None:
        self._lock = lock
        self._has_collections = has_collections

    async def start(self) -> None:
        default = DatabaseMeta(name=DEFAULT_DATABASE, database_id=DEFAULT_DATABASE_ID, created_ns=self._clock_ns())
        if await self._store.create_if_absent(f"{_DATABASE}{DEFAULT_DATABASE}", default.to_json()):
            self._log.info("default database created", created_ns=default.created_ns)

    async def find(self, name: str) -> DatabaseMeta | None:
        raw = await self._store.get(f"{_DATABASE}{name or DEFAULT_DATABASE}")
        return None if raw is None else DatabaseMeta.from_json(raw)

    async def get(self, name: str) -> DatabaseMeta:
        """The database ``name`` ("" is "default"); ``DatabaseNotFound`` (Milvus code 800) if there is none."""
        found = await self.find(name)
        if found is None:
            raise database_not_found(name)
        return found

    async def list(self) -> list[DatabaseMeta]:
        """Every database, by id."""
        found = [DatabaseMeta.from_json(kv.value) for kv in await self._store.scan(_DATABASE)]
        return sorted(found, key=lambda d: d.database_id)

    async def create(self, name: str, properties: dict[str, str]) -> DatabaseMeta:
        check_database_name(name)
        check_timezone(properties)
        if self._allocate_id is None:
            raise InvalidArgument("this coordinator cannot create databases (no id allocator)")
        async with self._lock:
            existing = await self.list()
            if any(d.name == name for d in existing):
                raise _refused(f"database already exist: {name}")
            if len(existing) > MAX_DATABASES:  # "default" not counted, as in Milvus
                raise DatabaseNumLimitExceeded(f"exceeded the limit number of database[limit={MAX_DATABASES}]")
            meta = DatabaseMeta(
                name=name, database_id=await self._allocate_id(), created_ns=self._clock_ns(), properties=properties
            )
            if not await self._store.create_if_absent(f"{_DATABASE}{name}", meta.to_json()):
                raise _refused(f"database already exist: {name}")
        self._log.info("database created", name=name, database_id=meta.database_id, properties=properties)
        return meta

    async def drop(self, name: str) -> None:
        check_database_name(name)
        if name == DEFAULT_DATABASE:
            raise _refused("can not drop default database")
        async with self._lock:
            meta = await self.find(name)
            if meta is None:
                return  # dropping a database that does not exist succeeds, as in Milvus
            if self._has_collections is not None and await self._has_collections(meta.database_id):
                raise _refused(f"database:{name} not empty, must drop all collections before drop database")
            await self._store.delete(f"{_DATABASE}{name}")
        self._log.info("database dropped", name=name, database_id=meta.database_id)

    async def alter(self, name: str, properties: dict[str, str], delete_keys: Sequence[str]) -> DatabaseMeta:
        """Set ``properties``, then remove ``delete_keys``."""
        check_timezone(properties)
        async with self._lock:
            meta = await self.get(name)
            merged = {k: v for k, v in {**meta.properties, **properties}.items() if k not in delete_keys}
            meta = replace(meta, properties=merged)
            await self._store.put(f"{_DATABASE}{meta.name}", meta.to_json())
        self._log.info("database altered", name=meta.name, set=sorted(properties), deleted=delete_keys)
        return meta


class DatabaseRPCs:
    """The database RPCs of the coordinator service."""

    _databases: Databases

    @rpc_method(dpb.DatabaseResponse)
    async def DescribeDatabase(self, request: dpb.DatabaseRef, context: grpc.aio.ServicerContext) -> dpb.DatabaseResponse:
        meta = await self._databases.get(request.name)
        return dpb.DatabaseResponse(status=ok_status(), database=meta.to_pb())

    @rpc_method(dpb.ListDatabasesResponse)
    async def ListDatabases(
        self, request: dpb.ListDatabasesRequest, context: grpc.aio.ServicerContext
    ) -> dpb.ListDatabasesResponse:
        return dpb.ListDatabasesResponse(status=ok_status(), databases=[d.to_pb() for d in await self._databases.list()])

    @rpc_method(dpb.DatabaseResponse)
    async def CreateDatabase(
        self, request: dpb.CreateDatabaseRequest, context: grpc.aio.ServicerContext
    ) -> dpb.DatabaseResponse:
        meta = await self._databases.create(request.name, dict(request.properties))
        return dpb.DatabaseResponse(status=ok_status(), database=meta.to_pb())

    @rpc_method(dpb.DatabaseResponse)
    async def DropDatabase(self, request: dpb.DropDatabaseRequest, context: grpc.aio.ServicerContext) -> dpb.DatabaseResponse:
        await self._databases.drop(request.name)
        return dpb.DatabaseResponse(status=ok_status())

    @rpc_method(dpb.DatabaseResponse)
    async def AlterDatabase(
        self, request: dpb.AlterDatabaseRequest, context: grpc.aio.ServicerContext
    ) -> dpb.DatabaseResponse:
        meta = await self._databases.alter(request.name, dict(request.properties), list(request.delete_keys))
        return dpb.DatabaseResponse(status=ok_status(), database=meta.to_pb())
