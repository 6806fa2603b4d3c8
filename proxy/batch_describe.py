"""``BatchDescribeCollection`` of the proxy (mixed into ``MilvusProxy``), as Milvus 2.6 answers it.

One ``DescribeCollection`` answer per collection asked for, names first, then
ids, in the order given, each from the proxy's own ``DescribeCollection`` (the
same checks, texts and fields). As in Milvus, a collection that cannot be
described does not fail the batch: its answer carries the error status. An
id is turned into its collection's name by the coordinator first; an unknown
id is Milvus's ``collection not found[database=<db>][collection=<id>]``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import grpc
from pymilvus.grpc_gen import milvus_pb2

from common.errors import CollectionNotFound
from common.names import collection_not_found
from proxy.dbcontext import current_database
from proxy.parts import ProxyParts
from proxy.rpc import milvus_rpc
from proxy.status import milvus_status, success


class BatchDescribeRPCs(ProxyParts):
    DescribeCollection: Callable[..., Awaitable[milvus_pb2.DescribeCollectionResponse]]  # MilvusProxy's own

    async def _describe_id(
        self, collection_id: int, db_name: str, context: grpc.aio.ServicerContext
    ) -> milvus_pb2.DescribeCollectionResponse:
        try:
            info = await self._coord.describe_collection(collection_id=collection_id)
        except CollectionNotFound:
            return milvus_pb2.DescribeCollectionResponse(
                status=milvus_status(collection_not_found(collection_id, db_name))
            )
        # An id names one collection whatever the database: describe it in its own.
        request = milvus_pb2.DescribeCollectionRequest(
            db_name=info.db_name or db_name, collection_name=info.name
        )
        return await self.DescribeCollection(request, context)

    @milvus_rpc(milvus_pb2.BatchDescribeCollectionResponse)
    async def BatchDescribeCollection(
        self, request: milvus_pb2.BatchDescribeCollectionRequest, context: grpc.aio.ServicerContext
    ) -> milvus_pb2.BatchDescribeCollectionResponse:
        answers = [
            await self.DescribeCollection(
                milvus_pb2.DescribeCollectionRequest(db_name=request.db_name, collection_name=name), context
            )
            for name in request.collection_name
        ]
        answers += [await self._describe_id(cid, current_database(), context) for cid in request.collectionID]
        return milvus_pb2.BatchDescribeCollectionResponse(status=success(), responses=answers)
