"""``FlushAll`` and ``GetFlushAllState`` of the proxy (mixed into ``MilvusProxy``), as Milvus 2.6 answers them.

``FlushAll`` flushes every collection (``coordinator/flush_all.py``) and
answers ``flush_all_ts`` (what pymilvus polls ``GetFlushAllState`` with) and,
per collection, the segments sealed and its flush timestamp. A database named
(``db_name`` or a flush target) must exist (else Milvus's ``database not
found``), and a target's collections must exist in it; the flush itself covers
every collection of every database (flushing more than named is harmless), each
reported under its own database.
``GetFlushAllState`` is true once everything written before ``flush_all_ts``
is in object storage, with each collection's state in ``flush_states``.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterable

import grpc
from pymilvus.grpc_gen import milvus_pb2, schema_pb2

from common.names import DEFAULT_DATABASE
from proxy.dbcontext import enter_database, leave_database
from proxy.parts import ProxyParts
from proxy.rpc import milvus_rpc
from proxy.status import success


class FlushAllRPCs(ProxyParts):
    async def _check_databases(self, names: Iterable[str]) -> None:
        for name in names:
            if name:
                await self._cache.database(name)

    @milvus_rpc(milvus_pb2.FlushAllResponse)
    async def FlushAll(
        self, request: milvus_pb2.FlushAllRequest, context: grpc.aio.ServicerContext
    ) -> milvus_pb2.FlushAllResponse:
        await self._check_databases([request.db_name, *(t.db_name for t in request.flush_targets)])
        for target in request.flush_targets:
            token = enter_database(target.db_name or request.db_name or DEFAULT_DATABASE)
            try:
                for name in target.collection_names:
                    await self._lookup(name)
            finally:
                leave_database(token)
        resp = await self._coord.flush_all()
        sealed_at = int(time.time())
        by_db: dict[str, list[milvus_pb2.FlushCollectionResult]] = defaultdict(list)
        for c in resp.collections:
            by_db[c.db_name or DEFAULT_DATABASE].append(
                milvus_pb2.FlushCollectionResult(
                    collection_name=c.name,
                    segment_ids=schema_pb2.LongArray(data=list(c.segment_ids)),
                    flush_segment_ids=schema_pb2.LongArray(data=list(c.segment_ids)),
                    seal_time=sealed_at,
                    flush_ts=c.flush_ts,
                )
            )
        return milvus_pb2.FlushAllResponse(
            status=success(),
            flush_all_ts=resp.flush_all_ts,
            flush_results=[
                milvus_pb2.FlushAllResult(db_name=db, collection_results=results)
                for db, results in sorted(by_db.items())
            ]
            or [milvus_pb2.FlushAllResult(db_name=DEFAULT_DATABASE)],
        )

    @milvus_rpc(milvus_pb2.GetFlushAllStateResponse)
    async def GetFlushAllState(
        self, request: milvus_pb2.GetFlushAllStateRequest, context: grpc.aio.ServicerContext
    ) -> milvus_pb2.GetFlushAllStateResponse:
        await self._check_databases([request.db_name, *(t.db_name for t in request.flush_targets)])
        resp = await self._coord.flush_all_state(request.flush_all_ts)
        by_db: dict[str, dict[str, bool]] = defaultdict(dict)
        for key, flushed in resp.collections.items():
            db, _, name = key.partition("/")
            by_db[db][name] = flushed
        return milvus_pb2.GetFlushAllStateResponse(
            status=success(),
            flushed=resp.flushed,
            flush_states=[
                milvus_pb2.FlushAllState(db_name=db, collection_flush_states=states)
                for db, states in sorted(by_db.items())
            ]
            or [milvus_pb2.FlushAllState(db_name=DEFAULT_DATABASE)],
        )
