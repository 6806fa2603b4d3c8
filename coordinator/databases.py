"""Databases: the "default" one, created with the cluster, as Milvus' rootcoord creates it.

Its record ``rootcoord/database/<name>`` (JSON) holds the id (1, Milvus' ``DefaultDBID``), the
creation time in nanoseconds since the epoch (as Milvus keeps it) and the properties (none). The
first coordinator that leads writes it once (put-if-absent); later leaders read it. Other
databases are issue #29: asking for one is Milvus' ``database not found[database=<name>]``.
``DatabaseRPCs`` is mixed into ``CoordinatorService``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import grpc
import structlog

from common.etcd.metastore import MetaStore
from common.grpcutil import ok_status, rpc_method
from common.names import DEFAULT_DATABASE, DEFAULT_DATABASE_ID, database_not_found
from protos import databases_pb2 as dpb

_DATABASE = "rootcoord/database/"


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
    """The database records; ``start`` makes sure "default" exists."""

    def __init__(self, store: MetaStore, clock_ns: Callable[[], int] = time.time_ns) -> None:
        self._store = store
        self._clock_ns = clock_ns
        self._log = structlog.get_logger().bind(component="databases")

    async def start(self) -> None:
        default = DatabaseMeta(name=DEFAULT_DATABASE, database_id=DEFAULT_DATABASE_ID, created_ns=self._clock_ns())
        if await self._store.create_if_absent(f"{_DATABASE}{DEFAULT_DATABASE}", default.to_json()):
            self._log.info("default database created", created_ns=default.created_ns)

    async def get(self, name: str) -> DatabaseMeta:
        """The database ``name``; ``DatabaseNotFound`` (Milvus code 800) if there is none."""
        raw = await self._store.get(f"{_DATABASE}{name or DEFAULT_DATABASE}")
        if raw is None:
            raise database_not_found(name)
        return DatabaseMeta.from_json(raw)

    async def list(self) -> list[DatabaseMeta]:
        """Every database, by id."""
        found = [DatabaseMeta.from_json(kv.value) for kv in await self._store.scan(_DATABASE)]
        return sorted(found, key=lambda d: d.database_id)


class DatabaseRPCs:
    """``DescribeDatabase`` and ``ListDatabases`` of the coordinator service."""

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
