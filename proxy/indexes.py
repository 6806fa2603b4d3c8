"""Index RPCs of the proxy (mixed into ``MilvusProxy``).

The coordinator keeps the index definitions (``coordinator/indexes.py``) and
counts how far each is built (``coordinator/data/index_progress.py``); the
proxy checks a new index's parameters against the field before anything is
written, and turns the coordinator's counts into Milvus' index descriptions.

As Milvus 2.6 answers them: an index is named by its name only (a request's
``field_name`` is not looked at; no name means every index of the collection);
``describe_index`` and ``get_index_statistics`` describe the indexes named,
``get_index_state`` and ``get_index_build_progress`` (which pymilvus 2.6 no
longer calls: it reads ``describe_index``) answer for exactly one and refuse a
name that matches several ("index duplicates"). The state is Failed when a
segment's build failed for good (with Milvus' ``fail_reason``), InProgress
while a flushed segment waits for its index, else Finished. ``alter_index``
changes properties only (``common/index_properties.py``), of a released
collection.
"""

from __future__ import annotations

import grpc
from pymilvus.grpc_gen import common_pb2, milvus_pb2

from common.coordapi.api import IndexInfo
from common.errors import IndexDuplicate, IndexNotFound
from common.fulltext.functions import bm25_outputs
from common.index_properties import check_configurable
from proxy.metacache import CollectionEntry
from proxy.parts import ProxyParts
from proxy.rpc import milvus_rpc
from proxy.scalarindex import scalar_index_request
from proxy.status import success
from proxy.vectorindex import vector_index_params


def _index_state(i: IndexInfo, total: int, indexed: int) -> common_pb2.IndexState:
    if i.fail_reason:
        return common_pb2.Failed
    return common_pb2.Finished if indexed >= total else common_pb2.InProgress


def _index_description(i: IndexInfo, rows: int) -> milvus_pb2.IndexDescription:
    """An index as describe_index shows it: InProgress while sealed segments wait for their index
    (query nodes build them in the background), with Milvus's row counts. ``rows``: the collection's,
    for a coordinator that cannot count (no object storage: every segment is indexed on load)."""
    total, indexed = (i.total_rows, i.indexed_rows) if i.progress_known else (rows, rows)
    return milvus_pb2.IndexDescription(
        index_name=i.index_name,
        indexID=i.index_id,
        field_name=i.field_name,
        params=[common_pb2.KeyValuePair(key=k, value=v) for k, v in i.params.items()],
        state=_index_state(i, total, indexed),
        index_state_fail_reason=i.fail_reason,
        total_rows=total,
        indexed_rows=indexed,
        pending_index_rows=total - indexed,
    )


class IndexRPCs(ProxyParts):
    """The index RPCs of ``MilvusProxy`` (what they use of it: ``ProxyParts``)."""

    @milvus_rpc(common_pb2.Status)
    async def CreateIndex(
        self, request: milvus_pb2.CreateIndexRequest, context: grpc.aio.ServicerContext
    ) -> common_pb2.Status:
        coll = await self._coll(request.collection_name)
        params = {p.key: p.value for p in request.extra_params}
        field_name, index_name = request.field_name, request.index_name
        field = coll.schema.field(field_name) if coll.schema.has_field(field_name) else None
        if field is not None and field.dtype.is_vector:
            # Defaults filled in; InvalidArgument naming a bad metric, index type or build parameter.
            params = vector_index_params(field, params, bm25=field.name in bm25_outputs(coll.schema))
        else:
            # Scalar, ARRAY and JSON fields, dynamic keys: Milvus's index types, checked before any write.
            field_name, index_name, params = scalar_index_request(coll.schema, field_name, index_name, params)
        await self._coord.create_index(coll.collection_id, field_name=field_name, index_name=index_name, params=params)
        self._cache.invalidate(coll.name)
        return success()

    async def _indexes(self, coll: CollectionEntry, index_name: str) -> list[IndexInfo]:
        """The collection's indexes named ``index_name`` (empty: all of them)."""
        indexes = await self._coord.describe_indexes(coll.collection_id)
        return [i for i in indexes if not index_name or i.index_name == index_name]

    async def _descriptions(
        self, coll: CollectionEntry, indexes: list[IndexInfo]
    ) -> list[milvus_pb2.IndexDescription]:
        known = all(i.progress_known for i in indexes)
        rows = 0 if known else await self._stats.collection_rows(coll)
        return [_index_description(i, rows) for i in indexes]

    async def _one_index(self, coll: CollectionEntry, index_name: str) -> milvus_pb2.IndexDescription:
        """The one index ``index_name`` names (empty: the collection's only index)."""
        indexes = await self._indexes(coll, index_name)
        if not indexes:
            raise IndexNotFound(f"index not found[indexName={index_name}]")
        if len(indexes) > 1:
            raise IndexDuplicate(f"index duplicates[indexName={index_name}]")
        return (await self._descriptions(coll, indexes))[0]

    @milvus_rpc(milvus_pb2.DescribeIndexResponse)
    async def DescribeIndex(
        self, request: milvus_pb2.DescribeIndexRequest, context: grpc.aio.ServicerContext
    ) -> milvus_pb2.DescribeIndexResponse:
        coll = await self._coll(request.collection_name)
        indexes = await self._indexes(coll, request.index_name)
        if not indexes:
            if request.index_name:
                raise IndexNotFound(f"index not found[indexName={request.index_name}]")
            raise IndexNotFound(f"index not found[collection={coll.name}]")
        return milvus_pb2.DescribeIndexResponse(
            status=success(), index_descriptions=await self._descriptions(coll, indexes)
        )

    @milvus_rpc(milvus_pb2.GetIndexStatisticsResponse)
    async def GetIndexStatistics(
        self, request: milvus_pb2.GetIndexStatisticsRequest, context: grpc.aio.ServicerContext
    ) -> milvus_pb2.GetIndexStatisticsResponse:
        coll = await self._coll(request.collection_name)
        indexes = await self._indexes(coll, request.index_name)
        if not indexes:
            raise IndexNotFound(f"index not found[indexName={request.index_name}]")
        return milvus_pb2.GetIndexStatisticsResponse(
            status=success(), index_descriptions=await self._descriptions(coll, indexes)
        )

    @milvus_rpc(milvus_pb2.GetIndexStateResponse)
    async def GetIndexState(
        self, request: milvus_pb2.GetIndexStateRequest, context: grpc.aio.ServicerContext
    ) -> milvus_pb2.GetIndexStateResponse:
        coll = await self._coll(request.collection_name)
        index = await self._one_index(coll, request.index_name)
        return milvus_pb2.GetIndexStateResponse(
            status=success(), state=index.state, fail_reason=index.index_state_fail_reason
        )

    @milvus_rpc(milvus_pb2.GetIndexBuildProgressResponse)
    async def GetIndexBuildProgress(
        self, request: milvus_pb2.GetIndexBuildProgressRequest, context: grpc.aio.ServicerContext
    ) -> milvus_pb2.GetIndexBuildProgressResponse:
        coll = await self._coll(request.collection_name)
        index = await self._one_index(coll, request.index_name)
        return milvus_pb2.GetIndexBuildProgressResponse(
            status=success(), indexed_rows=index.indexed_rows, total_rows=index.total_rows
        )

    @milvus_rpc(common_pb2.Status)
    async def AlterIndex(
        self, request: milvus_pb2.AlterIndexRequest, context: grpc.aio.ServicerContext
    ) -> common_pb2.Status:
        # Milvus checks the keys before it looks the collection up.
        params = {p.key: p.value for p in request.extra_params}
        check_configurable([*params, *request.delete_keys])
        coll = await self._coll(request.collection_name)
        await self._coord.alter_index(
            coll.collection_id, request.index_name, params=params, delete_keys=list(request.delete_keys)
        )
        self._cache.invalidate(coll.name)
        return success()

    @milvus_rpc(common_pb2.Status)
    async def DropIndex(
        self, request: milvus_pb2.DropIndexRequest, context: grpc.aio.ServicerContext
    ) -> common_pb2.Status:
        coll = await self._coll(request.collection_name)
        await self._coord.drop_index(coll.collection_id, request.index_name)
        self._cache.invalidate(coll.name)
        return success()
