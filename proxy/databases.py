"""Database RPCs of the proxy (mixed into ``MilvusProxy``): the "default" database, as Milvus 2.6.

``DescribeDatabase`` and ``ListDatabases`` answer from the coordinator's record of it
(``coordinator/databases.py``): name, id 1, creation time (nanoseconds, as Milvus), no properties.
pymilvus' ``using_database("default")`` describes it first. Any other name is Milvus'
``database not found[database=<name>]`` (code 800); creating, dropping or altering a database
is refused until Strata has more than one (issue #29).
"""

from __future__ import annotations

from typing import Any

import grpc
from pymilvus.grpc_gen import common_pb2, milvus_pb2

from common.errors import NotSupported
from common.names import DEFAULT_DATABASE
from protos import databases_pb2 as dpb
from proxy.rpc import milvus_rpc
from proxy.status import success

DATABASE_TIMEOUT = 30.0
ONE_DATABASE = 'multiple databases are not supported yet: "default" is the only database'


class DatabaseRPCs:
    async def _stub(self) -> Any:
        raise NotImplementedError

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
        return milvus_pb2.ListDatabasesResponse(
            status=success(),
            db_names=[d.name for d in resp.databases],
            created_timestamp=[d.created_timestamp for d in resp.databases],
            db_ids=[d.id for d in resp.databases],
        )

    @milvus_rpc(common_pb2.Status)
    async def CreateDatabase(
        self, request: milvus_pb2.CreateDatabaseRequest, context: grpc.aio.ServicerContext
    ) -> common_pb2.Status:
        raise NotSupported(ONE_DATABASE)

    @milvus_rpc(common_pb2.Status)
    async def DropDatabase(
        self, request: milvus_pb2.DropDatabaseRequest, context: grpc.aio.ServicerContext
    ) -> common_pb2.Status:
        raise NotSupported(ONE_DATABASE)

    @milvus_rpc(common_pb2.Status)
    async def AlterDatabase(
        self, request: milvus_pb2.AlterDatabaseRequest, context: grpc.aio.ServicerContext
    ) -> common_pb2.Status:
        raise NotSupported(ONE_DATABASE)
