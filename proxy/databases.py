"""Database RPCs of the proxy (mixed into ``MilvusProxy``), as Milvus 2.6 answers them.

The coordinator keeps the records (``coordinator/databases.py``); the proxy checks names first
(``check_database_name``: code 802), forwards, and forgets its cached metadata after a change.
``DescribeDatabase`` answers name, id, creation time (nanoseconds, as Milvus) and properties;
pymilvus' ``using_database`` describes the database first, so a missing one is Milvus'
``database not found[database=<name>]`` (code 800) there. ``default_replicas`` applies
``database.replica.number`` to loads.
"""

from __future__ import annotations

import grpc
from pymilvus.grpc_gen import common_pb2, milvus_pb2

from common.database_properties import replica_number
from common.names import DEFAULT_DATABASE, check_database_name
from proxy.dbcontext import current_database
from proxy.metacache import MetaCache
from proxy.parts import ProxyParts
from proxy.rpc import milvus_rpc
from proxy.status import success


async def default_replicas(cache: MetaCache) -> int:
    """The replicas a load gets when the request leaves the number to the server (pymilvus sends
    0 then): the current database's ``database.replica.number``, else 1, as in Milvus."""
    return replica_number((await cache.database(current_database())).properties) or 1


class DatabaseRPCs(ProxyParts):
    def _databases_changed(self) -> None:
        self._cache.invalidate_all()

    @milvus_rpc(milvus_pb2.DescribeDatabaseResponse)
    async def DescribeDatabase(
        self, request: milvus_pb2.DescribeDatabaseRequest, context: grpc.aio.ServicerContext
    ) -> milvus_pb2.DescribeDatabaseResponse:
        db = await self._coord.describe_database(request.db_name or DEFAULT_DATABASE)
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
        listed = await self._coord.list_databases()
        visible = self._security.visible_databases()  # the caller's grants, as Milvus
        dbs = [d for d in listed if visible is None or d.name in visible]
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
        await self._coord.create_database(request.db_name, properties)
        self._databases_changed()
        return success()

    @milvus_rpc(common_pb2.Status)
    async def DropDatabase(
        self, request: milvus_pb2.DropDatabaseRequest, context: grpc.aio.ServicerContext
    ) -> common_pb2.Status:
        check_database_name(request.db_name)
        await self._coord.drop_database(request.db_name)
        self._databases_changed()
        return success()

    @milvus_rpc(common_pb2.Status)
    async def AlterDatabase(
        self, request: milvus_pb2.AlterDatabaseRequest, context: grpc.aio.ServicerContext
    ) -> common_pb2.Status:
        check_database_name(request.db_name)
        await self._coord.alter_database(
            request.db_name,
            properties={p.key: p.value for p in request.properties},
            delete_keys=list(request.delete_keys),
        )
        self._databases_changed()
        return success()
