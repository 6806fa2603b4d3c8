"""Loads and releases collections on query nodes.

A loaded collection (``querycoord/load/<id>`` in etcd) wants one delegator per
vchannel. A checker loop compares that target with what the query nodes report
(``GetDataDistribution``) and issues:

* ``WatchChannel`` for a vchannel without a delegator, carrying the vchannel's
  checkpoint and then (read after it) its FLUSHED segments, L1 and L0: the
  delegator loads those and consumes the WAL from the checkpoint;
* ``SyncDistribution`` for a serviceable delegator whose sealed segments differ
  from the FLUSHED segments of its vchannel: load the new ones (the delegator
  swaps a segment's growing copy for it), release the dropped ones. The
  delegator's distribution changes only this way.

A channel is *ready* once its delegator is serviceable (its initial segments
loaded) and its tsafe has passed the load timestamp, so a loaded collection
serves every write acknowledged before the load.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass

import grpc
import structlog

from coordinator.catalog import Catalog, CollectionMeta, LoadMeta
from coordinator.data.datacoord import DataCoordinator
from coordinator.query.placement import place_channels
from coordinator.tso import TimestampOracle
from protos import querynode_pb2, querynode_pb2_grpc
from services.errors import ErrorCode
from services.etcd.metastore import MetaStore
from services.etcd.session import SessionInfo, follow_sessions
from services.grpcutil import StubCache
from services.segment import SegmentMeta, SegmentState
from services.segment_pb import position_to_pb, segment_to_pb

QUERY_NODE_ROLE = "querynode"


@dataclass(frozen=True, slots=True)
class ChannelState:
    """What a query node reports about one delegator."""

    tsafe: int
    sealed: frozenset[int]
    serviceable: bool


@dataclass(frozen=True, slots=True)
class ChannelView:
    vchannel: str
    pchannel: str
    node_id: int
    address: str
    ready: bool


class QueryCoordinator:
    def __init__(
        self, store: MetaStore, catalog: Catalog, tso: TimestampOracle, data: DataCoordinator, *, interval: float = 0.5
    ) -> None:
        self._store = store
        self._catalog = catalog
        self._data = data
        self._tso = tso
        self._interval = interval
        self._nodes: dict[int, SessionInfo] = {}
        self._loads: dict[int, LoadMeta] = {}
        self._load_ts: dict[int, int] = {}
        self._placement: dict[int, dict[str, int]] = {}
        self._dist: dict[int, dict[str, ChannelState]] = {}  # node -> vchannel -> state
        self._stubs = StubCache(querynode_pb2_grpc.QueryNodeStub)
        self._stub = self._stubs.get
        self._wake = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()
        self._log = structlog.get_logger().bind(component="query-coord")

    async def start(self) -> None:
        for load in await self._catalog.list_loads():
            self._loads[load.collection_id] = load
            self._load_ts[load.collection_id] = await self._tso.allocate()
        self._tasks.add(asyncio.create_task(self._watch_nodes(), name="querycoord-nodes"))
        self._tasks.add(asyncio.create_task(self._loop(), name="querycoord-checker"))

    async def stop(self) -> None:
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await t
        await self._stubs.close()

    async def load(self, meta: CollectionMeta, replica_number: int) -> None:
        if meta.collection_id in self._loads:
            return
        load = LoadMeta(collection_id=meta.collection_id, replica_number=replica_number)
        await self._catalog.save_load(load)
        self._load_ts[meta.collection_id] = await self._tso.allocate()
        self._loads[meta.collection_id] = load
        self._wake.set()

    async def release(self, collection_id: int) -> None:
        self._loads.pop(collection_id, None)
        self._load_ts.pop(collection_id, None)
        await self._catalog.remove_load(collection_id)
        placement = self._placement.pop(collection_id, {})
        for vchannel, node_id in placement.items():
            node = self._nodes.get(node_id)
            if node is not None:
                with contextlib.suppress(grpc.aio.AioRpcError):
                    await self._stub(node.address).UnwatchChannel(
                        querynode_pb2.UnwatchChannelRequest(collection_id=collection_id, vchannel=vchannel), timeout=10
                    )

    def is_loaded(self, collection_id: int) -> bool:
        return collection_id in self._loads

    def view(self, meta: CollectionMeta) -> tuple[list[ChannelView], int]:
        """Channel placements and the loading progress in percent."""
        placement = self._placement.get(meta.collection_id, {})
        load_ts = self._load_ts.get(meta.collection_id, 0)
        views = []
        for vchannel, pchannel in zip(meta.vchannels, meta.pchannels, strict=True):
            node_id = placement.get(vchannel, 0)
            node = self._nodes.get(node_id)
            state = self._dist.get(node_id, {}).get(vchannel)
            ready = node is not None and state is not None and state.serviceable and state.tsafe >= load_ts
            views.append(ChannelView(vchannel, pchannel, node_id, node.address if node else "", ready))
        progress = 100 * sum(v.ready for v in views) // max(len(views), 1)
        return views, progress

    async def _watch_nodes(self) -> None:
        async for nodes in follow_sessions(self._store, QUERY_NODE_ROLE):
            self._nodes = nodes
            self._wake.set()

    async def _loop(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._interval):
                    await self._wake.wait()
            self._wake.clear()
            try:
                await self._check()
            except asyncio.CancelledError:
                raise
            except Exception as err:  # task boundary: log and try again next round
                self._log.warning("query check failed", error=str(err))

    async def _check(self) -> None:
        await self._pull_distribution()
        live = set(self._nodes)
        for collection_id in list(self._loads):
            meta = await self._catalog.get_collection(collection_id)
            if meta is None:
                continue
            wanted = place_channels(list(meta.vchannels), self._placement.get(collection_id, {}), live)
            self._placement[collection_id] = wanted
            for vchannel, node_id in wanted.items():
                state = self._dist.get(node_id, {}).get(vchannel)
                if state is None:
                    await self._watch(meta, vchannel, node_id)
                elif state.serviceable:
                    await self._sync(meta, vchannel, node_id, state)

    def _flushed(self, vchannel: str) -> list[SegmentMeta]:
        return [s for s in self._data.segments(vchannel=vchannel) if s.state == SegmentState.FLUSHED]

    async def _sync(self, meta: CollectionMeta, vchannel: str, node_id: int, state: ChannelState) -> None:
        target = {s.segment_id: s for s in self._flushed(vchannel)}
        load = [m for sid, m in sorted(target.items()) if sid not in state.sealed]
        release = sorted(sid for sid in state.sealed if sid not in target)
        if not load and not release:
            return
        req = querynode_pb2.SyncDistributionRequest(
            collection_id=meta.collection_id,
            vchannel=vchannel,
            load=[segment_to_pb(m) for m in load],
            release=release,
        )
        try:
            resp = await self._stub(self._nodes[node_id].address).SyncDistribution(req, timeout=300)
        except grpc.aio.AioRpcError as err:
            self._log.info("sync distribution failed", vchannel=vchannel, node=node_id, error=err.code().name)
            return
        if resp.status.code != ErrorCode.OK:
            self._log.info("sync distribution refused", vchannel=vchannel, node=node_id, reason=resp.status.reason)
            return
        self._log.info("distribution synced", vchannel=vchannel, node=node_id, loaded=[m.segment_id for m in load],
                       released=release)
        self._dist.setdefault(node_id, {})[vchannel] = ChannelState(
            tsafe=state.tsafe, sealed=frozenset(target), serviceable=True
        )

    async def _watch(self, meta: CollectionMeta, vchannel: str, node_id: int) -> None:
        node = self._nodes[node_id]
        # The checkpoint first, then the segments: whatever the checkpoint covers is in a
        # FLUSHED segment by then (the flusher reports files before it moves the checkpoint).
        checkpoint = self._data.checkpoint(vchannel)
        segments = self._flushed(vchannel)
        req = querynode_pb2.WatchChannelRequest(
            collection_id=meta.collection_id,
            vchannel=vchannel,
            pchannel=meta.pchannels[meta.vchannels.index(vchannel)],
            schema_json=meta.schema.to_json(),
            segments=[segment_to_pb(m) for m in segments],
        )
        if checkpoint is not None:
            req.checkpoint.CopyFrom(position_to_pb(checkpoint))
        try:
            resp = await self._stub(node.address).WatchChannel(req, timeout=10)
        except grpc.aio.AioRpcError as err:
            self._log.info("watch channel failed", vchannel=vchannel, node=node_id, error=err.code().name)
            return
        if resp.status.code != ErrorCode.OK:
            self._log.info("watch channel refused", vchannel=vchannel, node=node_id, reason=resp.status.reason)
            return
        self._dist.setdefault(node_id, {}).setdefault(vchannel, ChannelState(0, frozenset(), False))

    async def _pull_distribution(self) -> None:
        dist: dict[int, dict[str, ChannelState]] = {}
        for node_id, node in list(self._nodes.items()):
            try:
                resp = await self._stub(node.address).GetDataDistribution(
                    querynode_pb2.GetDataDistributionRequest(), timeout=5
                )
            except grpc.aio.AioRpcError:
                continue
            dist[node_id] = {
                c.vchannel: ChannelState(c.tsafe, frozenset(c.sealed_segments), c.serviceable) for c in resp.channels
            }
        self._dist = dist

