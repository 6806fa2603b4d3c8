"""Scatter reads to the delegator of every vchannel and gather their answers.

A loaded collection has one delegator per vchannel in each replica. A read
uses the replicas that are ready (every vchannel's delegator serviceable and
caught up), starting at a different one each time (round robin); a vchannel
whose delegator fails with a retryable error (not ready, unavailable, or the
node unreachable) is read from the next ready replica instead.

A search makes one call per query node, not per vchannel: the vchannels whose
delegators share a node in the chosen replica go in one request, and the node
answers their hits together; if that call fails, each vchannel is read on its
own (and moves to another replica as above). A read is one ``ReadPlan``
(``common/readplan.py``) built by the proxy's handler, its filter bound there;
the query node of this process (standalone) gets it as it is
(``localnode.py``), the others encoded for gRPC (``nodereads.py``).

The coordinator's view of a collection (placements, loaded partitions) is
kept for a second once a replica in it is ready, so steady reads cost no
coordinator call each; a read that fails on it runs once more on a fresh
view, and loads and releases through this proxy drop it at once.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import TypeVar

import grpc
import pyarrow as pa

from common.aiogather import gather_all
from common.coordapi import CoordinatorAPI, LoadState
from common.coordapi.api import ChannelPlacement, QueryView
from common.errors import ErrorCode, SegmentLoadFailed, StrataError
from common.grpcutil import StubCache
from common.readplan import ReadPlan, VectorQuery
from common.tracing import traced
from common.tsoutil import compose
from common.ttl import expire_before
from protos import querynode_pb2_grpc
from proxy.metacache import CollectionEntry
from proxy.nodereads import LocalNode, NodeReads, RemoteQueryNode

LOADING_POLL_SECONDS = 0.1
VIEW_TTL_SECONDS = 1.0  # a query view with a ready replica is reused this long (one coordinator call per second)
_RETRY_ON_ANOTHER_REPLICA = {ErrorCode.NOT_READY, ErrorCode.UNAVAILABLE, ErrorCode.TIMEOUT}
T = TypeVar("T")
Replica = dict[str, ChannelPlacement]  # vchannel -> its delegator in one replica


def _by_node(coll: CollectionEntry, replica: Replica) -> list[list[str]]:
    """The collection's vchannels grouped by the node of their delegator in ``replica``."""
    groups: dict[str, list[str]] = {}
    for v in sorted(set(coll.vchannels)):
        groups.setdefault(replica[v].address, []).append(v)
    return list(groups.values())


class ReadRouter:
    def __init__(self, coord: CoordinatorAPI, local: LocalNode | None = None) -> None:
        self._coord = coord
        self._stubs = StubCache(querynode_pb2_grpc.QueryNodeStub)
        self._local = local
        self._turn = itertools.count()
        self._views: dict[int, tuple[float, QueryView]] = {}  # collection -> (when, view)

    def _node(self, address: str) -> NodeReads:
        """The query node at ``address``: this process's own in-process, others over gRPC."""
        if self._local is not None and address == self._local.address:
            return self._local.reads
        return RemoteQueryNode(self._stubs.get(address))

    async def _twice(
        self, coll: CollectionEntry, read: ReadPlan, run: Callable[[list[Replica], ReadPlan], Awaitable[T]]
    ) -> T:
        """``run`` on the replicas of the kept view; if that fails, once more on a fresh view
        (the placements may have moved since it was fetched). Rows older than the collection's
        TTL, counted from now, are left out (as Milvus does, from the read's start)."""
        read = replace(read, expire_before=expire_before(coll.properties, compose(int(time.time() * 1000), 0)))
        replicas, scoped = await self._replicas(coll, read, cached=True)
        try:
            return await run(replicas, scoped)
        except StrataError as err:
            if err.code not in _RETRY_ON_ANOTHER_REPLICA or self._views.pop(coll.collection_id, None) is None:
                raise
        replicas, scoped = await self._replicas(coll, read, cached=False)
        return await run(replicas, scoped)

    def forget_view(self, collection_id: int) -> None:
        """Load or release through this proxy: the next read fetches the view again."""
        self._views.pop(collection_id, None)

    async def load_view(self, coll: CollectionEntry) -> QueryView:
        return await self._coord.query_view(coll.collection_id)

    async def _replicas(
        self, coll: CollectionEntry, read: ReadPlan, *, cached: bool
    ) -> tuple[list[Replica], ReadPlan]:
        """The ready replicas, each as its vchannels' delegators, waiting (up to ``timeout``) for one.

        A loaded collection is still *loading* right after a restart or a node loss, while its
        delegators catch up with the WAL; reads wait for that instead of failing. A view in which
        a replica was ready is kept for ``VIEW_TTL_SECONDS`` (``cached``: it may be used).
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + read.timeout
        while True:
            kept = self._views.get(coll.collection_id) if cached else None
            if kept is not None and loop.time() - kept[0] < VIEW_TTL_SECONDS:
                view = kept[1]
            else:
                view = await self.load_view(coll)
            if view.state == LoadState.NOT_LOAD:
                raise StrataError(f"collection not loaded[collection={coll.name}]", ErrorCode.COLLECTION_NOT_LOADED)
            read = read.within(view.loaded_partitions)
            by_replica: dict[int, Replica] = {}
            for c in view.channels:
                by_replica.setdefault(c.replica_id, {})[c.vchannel] = c
            ready = [
                r
                for _, r in sorted(by_replica.items())
                if len(r) == len(set(coll.vchannels)) and all(c.ready and c.address for c in r.values())
            ]
            if ready:
                if kept is None or kept[1] is not view:
                    self._views[coll.collection_id] = (loop.time(), view)
                start = next(self._turn) % len(ready)
                return ready[start:] + ready[:start], read
            self._views.pop(coll.collection_id, None)
            failed = {c.replica_id: c.load_error for c in view.channels if c.load_error}
            if failed and len(failed) == len(by_replica):
                # Every replica is held up by a load that failed: waiting would end the same way.
                raise SegmentLoadFailed(f"collection {coll.name} cannot be read: {next(iter(failed.values()))}")
            if loop.time() >= deadline:
                waiting = sorted({c.vchannel for c in view.channels if not c.ready})
                raise StrataError(
                    f"collection {coll.name} is still loading ({view.progress}%): {', '.join(waiting)} not ready",
                    ErrorCode.NOT_READY,
                )
            await asyncio.sleep(LOADING_POLL_SECONDS)

    async def _on_some_replica(
        self, vchannel: str, replicas: list[Replica], call: Callable[[ChannelPlacement], Awaitable[T]]
    ) -> T:
        """``call`` on the vchannel's delegator in the first replica that answers; retryable errors move on."""
        last: BaseException | None = None
        for replica in replicas:
            placement = replica[vchannel]
            try:
                return await call(placement)
            except StrataError as err:
                if err.code not in _RETRY_ON_ANOTHER_REPLICA:
                    raise
                last = err
            except grpc.aio.AioRpcError as err:
                last = StrataError(
                    f"query node {placement.node_id} of {vchannel} unreachable: {err.code().name}",
                    ErrorCode.UNAVAILABLE,
                )
        assert last is not None
        raise last

    @traced("proxy.route")
    async def search(self, coll: CollectionEntry, *, read: ReadPlan, query: VectorQuery) -> list[pa.Table]:
        """The delegators' hits (a table per vchannel, or per node called over gRPC), to be merged by the caller."""

        async def call(address: str, vchannels: list[str], read: ReadPlan) -> list[pa.Table]:
            return await self._node(address).search(coll.collection_id, vchannels, read, query)

        async def run(replicas: list[Replica], read: ReadPlan) -> list[pa.Table]:
            groups = _by_node(coll, replicas[0])
            return [t for tables in await gather_all([node(vs, replicas, read) for vs in groups]) for t in tables]

        async def node(vchannels: list[str], replicas: list[Replica], read: ReadPlan) -> list[pa.Table]:
            """One call for the vchannels whose delegators share a node in the first replica; if it
            fails, each vchannel on its own, moving to other replicas as needed."""
            if len(vchannels) > 1:
                try:
                    return await call(replicas[0][vchannels[0]].address, vchannels, read)
                except StrataError as err:
                    if err.code not in _RETRY_ON_ANOTHER_REPLICA:
                        raise
                except grpc.aio.AioRpcError:
                    pass
            return [t for tables in await gather_all([one(v, replicas, read) for v in vchannels]) for t in tables]

        async def one(vchannel: str, replicas: list[Replica], read: ReadPlan) -> list[pa.Table]:
            return await self._on_some_replica(vchannel, replicas, lambda p: call(p.address, [vchannel], read))

        return await self._twice(coll, read, run)

    async def query(
        self, coll: CollectionEntry, *, read: ReadPlan, limit: int, count_only: bool
    ) -> tuple[list[pa.Table], int]:
        """Each vchannel's rows (``limit`` 0: all; those with none left out) and the total count."""

        async def run(replicas: list[Replica], read: ReadPlan) -> list[tuple[pa.Table | None, int]]:
            return list(await asyncio.gather(*(one(v, replicas, read) for v in sorted(set(coll.vchannels)))))

        async def one(vchannel: str, replicas: list[Replica], read: ReadPlan) -> tuple[pa.Table | None, int]:
            return await self._on_some_replica(
                vchannel, replicas, lambda p: self._node(p.address).query(coll.collection_id, vchannel, read, limit,
                                                                          count_only)
            )

        results = await self._twice(coll, read, run)
        tables = [t for t, _ in results if t is not None]
        return tables, sum(n for _, n in results)

    async def close(self) -> None:
        await self._stubs.close()
