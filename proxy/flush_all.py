"""``FlushAll`` and ``GetFlushAllState`` of the proxy (mixed into ``MilvusProxy``), as Milvus 2.6 answers them.

``FlushAll`` flushes every collection (``coordinator/flush_all.py``) and
answers ``flush_all_ts`` (what pymilvus polls ``GetFlushAllState`` with) and,
per collection, the segments sealed and its flush timestamp. Strata has the
one database, ``default``: naming another (``db_name`` or a flush target) is
Milvus's ``database not found``, and a target's collections must exist; the
flush itself covers every collection (flushing more than named is harmless).
``GetFlushAllState`` is true once everything written before ``flush_all_ts``
is in object storage, with each collection's state in ``flush_states``.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

import grpc
from pymilvus.grpc_gen import milvus_pb2, schema_pb2

from common.names import DEFAULT_DATABASE, database_not_found
from protos import coordinator_pb2
from proxy.metacache import CollectionEntry
from proxy.rpc import milvus_rpc
from proxy.status import success

FLUSH_ALL_TIMEOUT = 60.0


def _check_databases(names: Iterable[str]) -> None:
    for name in names:
        if name not in ("", DEFAULT_DATABASE):
            raise database_not_found(name)


class FlushAllRPCs:
    async def _lookup(self, name: str) -> CollectionEntry:
        raise NotImplementedError

    async def _stub(self) -> Any:
        raise NotImplementedError

    @milvus_rpc(milvus_pb2.FlushAllResponse)
    async def FlushAll(
        self, request: milvus_pb2.FlushAllRequest, context: grpc.aio.ServicerContext
    ) -> milvus_pb2.FlushAllResponse:
        _check_databases([request.db_name, *(t.db_name for t in request.flush_targets)])
        for target in request.flush_targets:
            for name in target.collection_names:
                await self._lookup(name)
        resp = await (await self._stub()).FlushAll(coordinator_pb2.FlushAllRequest(), timeout=FLUSH_ALL_TIMEOUT)
        sealed_at = int(time.time())
        return milvus_pb2.FlushAllResponse(
            status=success(),
            flush_all_ts=resp.flush_all_ts,
            flush_results=[
                milvus_pb2.FlushAllResult(
                    db_name=DEFAULT_DATABASE,
                    collection_results=[
                        milvus_pb2.FlushCollectionResult(
                            collection_name=c.name,
                            segment_ids=schema_pb2.LongArray(data=list(c.segment_ids)),
                            flush_segment_ids=schema_pb2.LongArray(data=list(c.segment_ids)),
                            seal_time=sealed_at,
                            flush_ts=c.flush_ts,
                        )
                        for c in resp.collections
                    ],
                )
            ],
        )

    @milvus_rpc(milvus_pb2.GetFlushAllStateResponse)
    async def GetFlushAllState(
        self, request: milvus_pb2.GetFlushAllStateRequest, context: grpc.aio.ServicerContext
    ) -> milvus_pb2.GetFlushAllStateResponse:
        _check_databases([request.db_name, *(t.db_name for t in request.flush_targets)])
        resp = await (await self._stub()).GetFlushAllState(
            coordinator_pb2.GetFlushAllStateRequest(flush_all_ts=request.flush_all_ts), timeout=FLUSH_ALL_TIMEOUT
        )
        return milvus_pb2.GetFlushAllStateResponse(
            status=success(),
            flushed=resp.flushed,
            flush_states=[
                milvus_pb2.FlushAllState(db_name=DEFAULT_DATABASE, collection_flush_states=dict(resp.collections))
            ],
        )
