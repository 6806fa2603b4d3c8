"""Index RPCs of the proxy (mixed into ``MilvusProxy``).

The coordinator keeps the index definitions (``coordinator/catalog.py``) and
counts how far each is built (``coordinator/data/index_progress.py``); the
proxy checks a new index's parameters against the field before anything is
written, and turns the coordinator's counts into Milvus' index descriptions.
"""

from __future__ import annotations

from typing import Any

import grpc
from pymilvus.grpc_gen import common_pb2, milvus_pb2

from protos import coordinator_pb2
from services.errors import ErrorCode, IndexNotSupported, InvalidArgument, StrataError
from services.grpcutil import raise_for_status
from services.proxy.metacache import CollectionEntry, MetaCache
from services.proxy.rpc import milvus_rpc
from services.proxy.stats import WALStats
from services.proxy.status import success
from services.proxy.vectorindex import vector_index_params

INDEX_TIMEOUT = 30.0


def _index_description(i: coordinator_pb2.IndexInfo, rows: int) -> milvus_pb2.IndexDescription:
    """An index as describe_index shows it: InProgress while sealed segments wait for their index
    (query nodes build them in the background), with Milvus's row counts."""
    total, indexed = (i.total_rows, i.indexed_rows) if i.progress_known else (rows, rows)
    return milvus_pb2.IndexDescription(
        index_name=i.index_name,
        indexID=i.index_id,
        field_name=i.field_name,
        params=[common_pb2.KeyValuePair(key=k, value=v) for k, v in i.params.items()],
        state=common_pb2.Finished if indexed >= total else common_pb2.InProgress,
        total_rows=total,
        indexed_rows=indexed,
        pending_index_rows=total - indexed,
    )


class IndexRPCs:
    """Needs ``_stub()`` and ``_coll(name)`` of the proxy it is mixed into."""

    _cache: MetaCache
    _stats: WALStats

    async def _stub(self) -> Any:
        raise NotImplementedError

    async def _coll(self, name: str) -> CollectionEntry:
        raise NotImplementedError

    @milvus_rpc(common_pb2.Status)
    async def CreateIndex(
        self, request: milvus_pb2.CreateIndexRequest, context: grpc.aio.ServicerContext
    ) -> common_pb2.Status:
        coll = await self._coll(request.collection_name)
        params = {p.key: p.value for p in request.extra_params}
        if not coll.schema.has_field(request.field_name):
            raise InvalidArgument(f"cannot create index on non-exist field: {request.field_name}")
        field = coll.schema.field(request.field_name)
        if field.dtype.is_vector:
            # Defaults filled in; InvalidArgument naming a bad metric, index type or build parameter.
            params = vector_index_params(field, params)
        else:
            # Refused before anything is written: a worker builds vector indexes only, and an index
            # it cannot build must not be accepted (and then fail every load).
            raise IndexNotSupported(
                f"index type {params.get('index_type') or 'AUTOINDEX'} on field {field.name} "
                f"({field.dtype.name}) is not supported: Strata builds indexes on vector fields only "
                "(FLAT, HNSW, AUTOINDEX, the IVF families, SCANN, HNSW_SQ/PQ/PRQ, DISKANN); filters on scalar "
                "and JSON fields scan the column"
            )
        resp = await (await self._stub()).CreateIndex(
            coordinator_pb2.CreateIndexRequest(
                collection=coordinator_pb2.CollectionRef(collection_id=coll.collection_id),
                index=coordinator_pb2.IndexInfo(
                    field_name=request.field_name, index_name=request.index_name, params=params
                ),
            ),
            timeout=INDEX_TIMEOUT,
        )
        raise_for_status(resp.status)
        self._cache.invalidate(coll.name)
        return success()

    async def _indexes(self, coll: CollectionEntry) -> list[coordinator_pb2.IndexInfo]:
        resp = await (await self._stub()).DescribeIndex(
            coordinator_pb2.CollectionRef(collection_id=coll.collection_id), timeout=INDEX_TIMEOUT
        )
        raise_for_status(resp.status)
        return list(resp.indexes)

    @milvus_rpc(milvus_pb2.DescribeIndexResponse)
    async def DescribeIndex(
        self, request: milvus_pb2.DescribeIndexRequest, context: grpc.aio.ServicerContext
    ) -> milvus_pb2.DescribeIndexResponse:
        coll = await self._coll(request.collection_name)
        indexes = await self._indexes(coll)
        if request.index_name:
            indexes = [i for i in indexes if i.index_name == request.index_name]
        elif request.field_name:
            indexes = [i for i in indexes if i.field_name == request.field_name]
        if not indexes:
            raise StrataError(f"index not found[collection={coll.name}]", ErrorCode.INDEX_NOT_FOUND)
        rows = await self._stats.collection_rows(coll)
        return milvus_pb2.DescribeIndexResponse(
            status=success(), index_descriptions=[_index_description(i, rows) for i in indexes]
        )

    @milvus_rpc(common_pb2.Status)
    async def DropIndex(
        self, request: milvus_pb2.DropIndexRequest, context: grpc.aio.ServicerContext
    ) -> common_pb2.Status:
        coll = await self._coll(request.collection_name)
        resp = await (await self._stub()).DropIndex(
            coordinator_pb2.DropIndexRequest(
                collection=coordinator_pb2.CollectionRef(collection_id=coll.collection_id),
                index_name=request.index_name,
            ),
            timeout=INDEX_TIMEOUT,
        )
        raise_for_status(resp.status)
        self._cache.invalidate(coll.name)
        return success()
