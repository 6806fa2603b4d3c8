"""Database RPCs of the proxy (mixed into ``MilvusProxy``), as Milvus 2.6 answers them.

The coordinator keeps the records (``coordinator/databases.py``); the proxy checks names first
(``check_database_name``: code 802), forwards, and forgets its cached metadata after a change.
``DescribeDatabase`` answers name, id, creation time (nanoseconds, as Milvus) and properties;
pymilvus' ``using_database`` describes the database first, so a missing one is Milvus'
``database not found[database=<name>]`` (code 800) there. ``default_replicas`` applies
``database.replica.number`` to loads.
"""

from __future__ import annotations

from typing import Any

import grpc
from pymilvus.grpc_gen import common_pb2, milvus_pb2

from common.database_properties import replica_number
from common.names import DEFAULT_DATABASE, check_database_name
from protos import databases_pb2 as dpb
from proxy.auth.rpcs import Security
from proxy.dbcontext import current_database
from proxy.metacache import MetaCache
from proxy.rpc import milvus_rpc
from proxy.status import success

DATABASE_TIMEOUT = 30.0


async def default_replicas(cache: MetaCache) -> int:
    """The replicas a load gets when the request leaves the number to the server (pymilvus sends
    0 then): the current database's ``database.replica.number``, else 1, as in Milvus."""
    return replica_number((await cache.database(current_database())).properties) or 1


class DatabaseRPCs:
    _cache: MetaCache
    _security: Security

    async def _stub(self) -> Any:
        raise NotImplementedError

    async def _database_call(self, method: str, request: Any) -> Any:
        resp = await getattr(await self._stub(), method)(request, timeout=DATABASE_TIMEOUT)  # a checked stub: raises
        self._cache.invalidate_all()
        return resp

    @milvus_rpc(milvus_pb2.DescribeDatabaseResponse)
    async def DescribeDatabase(
        self, request: milvus_pb2.DescribeDatabaseRequest, context: grpc.aio.ServicerContext
    ) -> milvus_pb2.DescribeDatabaseResponse:
        resp = await (await self._stub()).DescribeDatabase(
            dpb.DatabaseRef(name=request.db_name or DEFAULT_DATABASE), timeout=DATABASE_TIMEOUT
        )
        db = resp.database
        return milvus_pb2.DescribeDatabaseResponse(
            status=success(),
            db_name=db.name,
            dbID=db.id,
            created_timestamp=db.created_timestamp,
            properties=[common_pb2.KeyValuePair(key=k, value=v) for k, v in sorted(db.properties.items())],
        )

    @milvus_rpc(milvus_pb2.ListDatabasesResponse)
    async def ListDatabases(
        self, request: milvus_pb2.ListDatabasesRequest, context: grpc.aio.ServicerContext
    ) -> milvus_pb2.ListDatabasesResponse:
        resp = await (await self._stub()).ListDatabases(dpb.ListDatabasesRequest(), timeout=DATABASE_TIMEOUT)
        visible = self._security.visible_databases()  # the caller's grants, as Milvus
        dbs = [d for d in resp.databases if visible is None or d.name in visible]
        return milvus_pb2.ListDatabasesResponse(
            status=success(),
            db_names=[d.name for d in dbs],
            created_timestamp=[d.created_timestamp for d in dbs],
            db_ids=[d.id for d in dbs],
        )

    @milvus_rpc(common_pb2.Status)
    async def CreateDatabase(
        self, request: milvus_pb2.CreateDatabaseRequest, context: grpc.aio.ServicerContext
    ) -> common_pb2.Status:
        check_database_name(request.db_name)
        properties = {p.key: p.value for p in request.properties}
        await self._database_call("CreateDatabase", dpb.CreateDatabaseRequest(name=request.db_name, properties=properties))
        return success()

    @milvus_rpc(common_pb2.Status)
    async def DropDatabase(
        self, request: milvus_pb2.DropDatabaseRequest, context: grpc.aio.ServicerContext
    ) -> common_pb2.Status:
        check_database_name(request.db_name)
        await self._database_call("DropDatabase", dpb.DropDatabaseRequest(name=request.db_name))
        return success()

    @milvus_rpc(common_pb2.Status)
    async def AlterDatabase(
        self, request: milvus_pb2.AlterDatabaseRequest, context: grpc.aio.ServicerContext
    ) -> common_pb2.Status:
        check_database_name(request.db_name)
        await self._database_call(
            "AlterDatabase",
            dpb.AlterDatabaseRequest(
                name=request.db_name,
                properties={p.key: p.value for p in request.properties},
                delete_keys=list(request.delete_keys),
            ),
        )
        return success()
