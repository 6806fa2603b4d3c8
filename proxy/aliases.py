"""Alias, rename, truncate and property RPCs of the proxy (mixed into ``MilvusProxy``).

The coordinator owns the names (``coordinator/aliases.py``); the proxy
forwards them with the request's database (``dbcontext``), then forgets every
cached entry, since an alias or a rename changes which collection a cached
name means. Other proxies see the change when their catalog watch does.
"""

from __future__ import annotations

import grpc
from pymilvus.grpc_gen import common_pb2, milvus_pb2

from common.names import check_alias, check_collection_name, check_database_name
from proxy.dbcontext import current_database
from proxy.parts import ProxyParts
from proxy.rpc import milvus_rpc
from proxy.status import success


class AliasRPCs(ProxyParts):
    def _names_changed(self) -> None:
        self._cache.invalidate_all()

    @milvus_rpc(common_pb2.Status)
    async def CreateAlias(
        self, request: milvus_pb2.CreateAliasRequest, context: grpc.aio.ServicerContext
    ) -> common_pb2.Status:
        check_alias(request.alias)
        check_collection_name(request.collection_name)
        await self._coord.create_alias(request.alias, request.collection_name, current_database())
        self._names_changed()
        return success()

    @milvus_rpc(common_pb2.Status)
    async def AlterAlias(
        self, request: milvus_pb2.AlterAliasRequest, context: grpc.aio.ServicerContext
    ) -> common_pb2.Status:
        check_alias(request.alias)
        check_collection_name(request.collection_name)
        await self._coord.alter_alias(request.alias, request.collection_name, current_database())
        self._names_changed()
        return success()

    @milvus_rpc(common_pb2.Status)
    async def DropAlias(
        self, request: milvus_pb2.DropAliasRequest, context: grpc.aio.ServicerContext
    ) -> common_pb2.Status:
        check_alias(request.alias)
        await self._coord.drop_alias(request.alias, current_database())
        self._names_changed()
        return success()

    @milvus_rpc(milvus_pb2.DescribeAliasResponse)
    async def DescribeAlias(
        self, request: milvus_pb2.DescribeAliasRequest, context: grpc.aio.ServicerContext
    ) -> milvus_pb2.DescribeAliasResponse:
        resp = await self._coord.describe_alias(request.alias, current_database())
        return milvus_pb2.DescribeAliasResponse(
            status=success(), db_name=current_database(), alias=resp.alias, collection=resp.collection_name
        )

    @milvus_rpc(milvus_pb2.ListAliasesResponse)
    async def ListAliases(
        self, request: milvus_pb2.ListAliasesRequest, context: grpc.aio.ServicerContext
    ) -> milvus_pb2.ListAliasesResponse:
        aliases = await self._coord.list_aliases(request.collection_name, current_database())
        return milvus_pb2.ListAliasesResponse(
            status=success(),
            db_name=current_database(),
            collection_name=request.collection_name,
            aliases=list(aliases),
        )

    @milvus_rpc(common_pb2.Status)
    async def RenameCollection(
        self, request: milvus_pb2.RenameCollectionRequest, context: grpc.aio.ServicerContext
    ) -> common_pb2.Status:
        if request.newDBName:
            check_database_name(request.newDBName)
        check_collection_name(request.newName)
        await self._coord.rename_collection(
            request.oldName, current_database(), new_name=request.newName, new_db_name=request.newDBName
        )
        self._names_changed()
        await self._security.collections_changed()  # its grants moved with it (or went, to another database)
        return success()

    @milvus_rpc(milvus_pb2.TruncateCollectionResponse)
    async def TruncateCollection(self, request: milvus_pb2.TruncateCollectionRequest, context: grpc.aio.ServicerContext) -> milvus_pb2.TruncateCollectionResponse:
        await self._coord.truncate_collection(request.collection_name, current_database())
        self._names_changed()
        return milvus_pb2.TruncateCollectionResponse(status=success())

    @milvus_rpc(common_pb2.Status)
    async def AlterCollection(
        self, request: milvus_pb2.AlterCollectionRequest, context: grpc.aio.ServicerContext
    ) -> common_pb2.Status:
        await self._coord.alter_collection(
            request.collection_name,
            current_database(),
            properties={p.key: p.value for p in request.properties},
            delete_keys=list(request.delete_keys),
        )
        self._names_changed()
        return success()
