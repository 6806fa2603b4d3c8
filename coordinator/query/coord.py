"""Loads and releases collections on query nodes, replica by replica.

A loaded collection (``querycoord/load/<id>``) has ``replica_number`` replicas,
each a disjoint set of query nodes (``querycoord/replica/<id>``, decisions in
``placement.py``). Every replica has one delegator per vchannel on one of its
nodes and each FLUSHED sealed segment on one of its nodes' workers.

A checker loop (every ``interval`` seconds, and at once on changes) pulls
every node's distribution (``GetDataDistribution``: delegators with their
tsafe and sealed segments, worker segments) and compares it with the target:

* a vchannel without a delegator in a replica gets ``WatchChannel`` with the
  vchannel's checkpoint and then (read after it) its FLUSHED segments: L0 ones
  to read, L1 ones each with the worker to load it on;
* a serviceable delegator whose sealed segments or their workers differ from
  the target gets ``SyncDistribution`` (load these there, release those); the
  delegator's distribution changes only through these two calls, which
  ``DelegatorSync`` (``delegator_sync.py``) makes, remembering what each
  delegator confirmed;
* a node that moved to another replica stops the delegators of its old one;
* worker segments of collections no longer loaded are released, and so are
  segments no delegator routes to any more, after a grace period (a search
  pinned to the old distribution may still read them).

Current placements are read back from the nodes' reports, so a new leader
continues with what is loaded instead of moving it. A lost node leaves its
replica; its delegators and segments are placed on the replica's other nodes,
or on a node that joins later.

A replica is *ready* once each of its delegators is serviceable (its initial
segments loaded) and has passed the load timestamp, so it serves every write
acknowledged before the load. The collection is LOADED when every replica is
ready; reads use any ready replica.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import replace

import grpc
import structlog

from common.errors import InvalidArgument, StrataError
from common.etcd.metastore import MetaStore
from common.etcd.session import SessionInfo, follow_sessions
from common.grpcutil import StubCache
from common.tasks import BackgroundTasks
from coordinator.catalog import Catalog, CollectionMeta, IndexMeta, LoadMeta
from coordinator.data.datacoord import DataCoordinator
from coordinator.query.delegator_sync import DelegatorSync
from coordinator.query.distribution import (
    PERSISTENT_AFTER_ATTEMPTS,
    ChannelView,
    NodeDist,
    node_dist,
)
from coordinator.query.placement import assign_replicas, place_channels
from coordinator.query.replicas import ReplicaView, replica_views
from coordinator.query.segments import DelegatorServing, ServedSegment, served_segments
from coordinator.tso import TimestampOracle
from protos import querynode_pb2, querynode_pb2_grpc

QUERY_NODE_ROLE = "querynode"
UNUSED_SEGMENT_GRACE_SECONDS = 30.0  # a worker segment no delegator routes to is released after this


def _index_spec(i: IndexMeta) -> querynode_pb2.IndexSpec:
    return querynode_pb2.IndexSpec(field_name=i.field_name, index_id=i.index_id, params=i.params)


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
        self._replicas: dict[int, dict[int, frozenset[int]]] = {}
        self._channels: dict[tuple[int, int], dict[str, int]] = {}  # (collection, replica) -> vchannel -> node
        self._dist: dict[int, NodeDist] = {}
        # vchannel -> (times in a row, why) its delegator broke, until one is ready again
        self._broken: dict[str, tuple[int, str]] = {}
        self._loading: set[int] = set()  # loaded collections not ready yet, as of the last check
        self._unused_since: dict[tuple[int, int, int], float] = {}  # (node, collection, segment) -> first seen unused
        self._stubs = StubCache(querynode_pb2_grpc.QueryNodeStub)
        self._stub = self._stubs.get
        self._delegators = DelegatorSync(catalog=catalog, data=data, stub=self._stubs.get, nodes=lambda: self._nodes)
        self._wake = asyncio.Event()
        self._tasks = BackgroundTasks("querycoord")
        self._log = structlog.get_logger().bind(component="query-coord")

    async def start(self) -> None:
        replicas = await self._catalog.list_replicas()
        for load in await self._catalog.list_loads():
            self._loads[load.collection_id] = load
            self._load_ts[load.collection_id] = await self._tso.allocate()
            self._replicas[load.collection_id] = replicas.get(load.collection_id, {})
        self._loading = set(self._loads)  # until a check finds them ready
        self._tasks.start(self._watch_nodes(), name="querycoord-nodes")
        self._tasks.start(self._loop(), name="querycoord-checker")

    async def stop(self) -> None:
        await self._tasks.stop()
        await self._stubs.close()

    # -- load / release ---------------------------------------------------------------------------

    async def load(self, meta: CollectionMeta, replica_number: int, partition_ids: list[int] | None = None) -> None:
        """Load the collection, or (``partition_ids``) these partitions of it, added to those loaded.

        The first load sets the load type (``LoadMeta``): loading the collection after some of
        its partitions makes it a collection load; loading partitions of a loaded collection
        loads again those released since.
        """
        loaded = self._loads.get(meta.collection_id)
        if loaded is not None:
            if loaded.replica_number != replica_number:
                raise InvalidArgument(
                    f"collection {meta.name} is loaded with {loaded.replica_number} replicas; release it before "
                    f"loading it with {replica_number}"
                )
            if loaded.partition_ids is None:
                released = [] if partition_ids is None else sorted(set(loaded.released_ids) - set(partition_ids))
                load = replace(loaded, released_ids=released)
            else:
                merged = None if partition_ids is None else sorted(set(loaded.partition_ids) | set(partition_ids))
                load = replace(loaded, partition_ids=merged)
            if load != loaded:
                await self._catalog.save_load(load)
                self._loads[meta.collection_id] = load
                self._load_ts[meta.collection_id] = await self._tso.allocate()
                self._wake.set()
            return
        if replica_number < 1:
            raise InvalidArgument(f"replica_number must be at least 1, got {replica_number}")
        if replica_number > len(self._nodes):
            raise InvalidArgument(
                f"not enough query nodes to load {meta.name} with {replica_number} replicas: "
                f"{len(self._nodes)} query node(s) alive"
            )
        load = LoadMeta(
            collection_id=meta.collection_id,
            replica_number=replica_number,
            partition_ids=None if partition_ids is None else sorted(set(partition_ids)),
        )
        replicas = assign_replicas(replica_number, {}, set(self._nodes), self._busy())
        await self._catalog.save_replicas(meta.collection_id, replicas)
        await self._catalog.save_load(load)
        self._load_ts[meta.collection_id] = await self._tso.allocate()
        self._replicas[meta.collection_id] = replicas
        self._loads[meta.collection_id] = load
        self._log.info(
            "collection loading", collection_id=meta.collection_id, replicas={r: sorted(n) for r, n in replicas.items()}
        )
        self._wake.set()

    async def release(self, collection_id: int) -> None:
        self._loads.pop(collection_id, None)
        self._load_ts.pop(collection_id, None)
        self._replicas.pop(collection_id, None)
        await self._catalog.remove_load(collection_id)
        await self._catalog.remove_replicas(collection_id)
        for key in [k for k in self._channels if k[0] == collection_id]:
            for vchannel, node_id in self._channels.pop(key).items():
                node = self._nodes.get(node_id)
                self._delegators.forget(node_id, vchannel)
                self._broken.pop(vchannel, None)
                if node is not None:
                    with contextlib.suppress(grpc.aio.AioRpcError, StrataError):
                        await self._stub(node.address).UnwatchChannel(
                            querynode_pb2.UnwatchChannelRequest(collection_id=collection_id, vchannel=vchannel),
                            timeout=10,
                        )
        await self._release_worker_segments()

    async def release_partitions(self, meta: CollectionMeta, partition_ids: list[int]) -> None:
        """Release these partitions; releasing the last loaded one releases the collection."""
        loaded = self._loads.get(meta.collection_id)
        if loaded is None:
            return
        current = [p.partition_id for p in meta.all_partitions()]
        remaining = sorted(set(loaded.loaded(current)) - set(partition_ids))
        if not remaining:
            await self.release(meta.collection_id)
            return
        if loaded.partition_ids is None:
            load = replace(loaded, released_ids=sorted(set(current) - set(remaining)))
        else:
            load = replace(loaded, partition_ids=remaining)
        if load != loaded:
            await self._catalog.save_load(load)
            self._loads[meta.collection_id] = load
            self._wake.set()

    def loading(self) -> bool:
        """Whether a loaded collection was not ready to read at the last check (a load, a restart)."""
        return bool(self._loading)

    def is_loaded(self, collection_id: int) -> bool:
        return collection_id in self._loads

    def loaded_partitions(self, meta: CollectionMeta) -> list[int]:
        """The collection's loaded partitions (none when it is not loaded)."""
        load = self._loads.get(meta.collection_id)
        return [] if load is None else load.loaded(p.partition_id for p in meta.all_partitions())

    def is_partition_loaded(self, collection_id: int, partition_id: int) -> bool:
        load = self._loads.get(collection_id)
        return load is not None and load.is_loaded(partition_id)

    def nodes(self) -> dict[int, str]:
        """The address of every live query node, by node id."""
        return {node_id: node.address for node_id, node in self._nodes.items()}

    def holders(self) -> dict[tuple[int, int], int]:
        """``(collection, segment)`` -> a live node whose worker holds it, as of the last check."""
        return {key: node_id for node_id, dist in self._dist.items() if node_id in self._nodes for key in dist.segments}

    def view(self, meta: CollectionMeta) -> tuple[list[ChannelView], int, bool]:
        """Every replica's channel placements, the loading progress in percent, and whether all are ready."""
        load_ts = self._load_ts.get(meta.collection_id, 0)
        load = self._loads.get(meta.collection_id)
        views = []
        for rid in range(1, (load.replica_number if load else 1) + 1):
            placement = self._channels.get((meta.collection_id, rid), {})
            for vchannel, pchannel in zip(meta.vchannels, meta.pchannels, strict=True):
                node_id = placement.get(vchannel, 0)
                node = self._nodes.get(node_id)
                state = self._dist.get(node_id, NodeDist()).channels.get(vchannel)
                ready = node is not None and state is not None and state.ready_to_read and state.tsafe >= load_ts
                error = "" if ready else (state.load_error if state is not None else "") or self._broken_error(vchannel)
                views.append(ChannelView(vchannel, pchannel, node_id, node.address if node else "", ready, rid, error))
        progress = 100 * sum(v.ready for v in views) // max(len(views), 1)
        return views, progress, bool(views) and all(v.ready for v in views)

    def replicas(self, meta: CollectionMeta) -> list[ReplicaView]:
        """The collection's replicas as they serve now (``replicas.py``); none when it is not loaded."""
        cid = meta.collection_id
        if cid not in self._loads:
            return []
        members = self._replicas.get(cid, {})
        leaders = {
            rid: {
                v: n
                for v, n in self._channels.get((cid, rid), {}).items()
                if (st := self._dist.get(n, NodeDist()).channels.get(v)) is not None and st.replica_id == rid
            }
            for rid in members
        }
        return replica_views(list(meta.vchannels), members, leaders, self._delegators.workers(), self.nodes())

    def served_segments(self, meta: CollectionMeta) -> list[ServedSegment]:
        """The sealed segments the collection is served from now (``segments.py``); none when it is not loaded."""
        cid = meta.collection_id
        if cid not in self._loads:
            return []
        delegators = [
            DelegatorServing(node_id=n, replica_id=st.replica_id, sealed=st.sealed, routes=self._delegators.routes(n, v))
            for n, dist in self._dist.items()
            if n in self._nodes
            for v, st in dist.channels.items()
            if v in meta.vchannels
        ]
        held = {
            n: {sid: dist.indexes.get((c, sid), ()) for c, sid in dist.segments if c == cid}
            for n, dist in self._dist.items()
            if n in self._nodes
        }
        metas = {s.segment_id: s for s in self._data.flushed_segments(collection_id=cid)}
        return served_segments(delegators, metas, held)

    def replica_numbers(self) -> dict[int, int]:
        """Collection id -> its replicas, for every loaded collection."""
        return {cid: load.replica_number for cid, load in self._loads.items()}

    def _broken_error(self, vchannel: str) -> str:
        """Why the vchannel's delegators keep breaking, once it happened often enough in a row to
        report (one break, such as a truncated resume position, is mended by watching it again)."""
        times, reason = self._broken.get(vchannel, (0, ""))
        return reason if times >= PERSISTENT_AFTER_ATTEMPTS else ""

    # -- the checker -------------------------------------------------------------------------------

    def _busy(self) -> dict[int, int]:
        busy: dict[int, int] = {}
        for replicas in self._replicas.values():
            for nodes in replicas.values():
                for n in nodes:
                    busy[n] = busy.get(n, 0) + 1
        return busy

    async def _watch_nodes(self) -> None:
        async for nodes in follow_sessions(self._store, QUERY_NODE_ROLE):
            if set(nodes) != set(self._nodes):
                self._log.info("query nodes changed", nodes=sorted(nodes))
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
            load = self._loads[collection_id]
            replicas = assign_replicas(load.replica_number, self._replicas.get(collection_id, {}), live, self._busy())
            if replicas != self._replicas.get(collection_id):
                await self._catalog.save_replicas(collection_id, replicas)
                self._replicas[collection_id] = replicas
                self._log.info(
                    "replicas changed",
                    collection_id=collection_id,
                    replicas={r: sorted(n) for r, n in replicas.items()},
                )
            await self._unwatch_foreign(meta, replicas)
            indexes = [_index_spec(i) for i in await self._catalog.list_indexes(collection_id)]
            for rid, nodes in replicas.items():
                await self._check_replica(meta, rid, set(nodes), indexes)
            if self.view(meta)[2]:
                self._loading.discard(collection_id)
            else:
                self._loading.add(collection_id)
        self._loading &= set(self._loads)
        await self._release_worker_segments()

    async def _unwatch_foreign(self, meta: CollectionMeta, replicas: dict[int, frozenset[int]]) -> None:
        """A node that moved to another replica stops the delegators it ran for the old one."""
        replica_of = {n: r for r, ns in replicas.items() for n in ns}
        for node_id, dist in self._dist.items():
            node = self._nodes.get(node_id)
            for vchannel, state in list(dist.channels.items()):
                if vchannel not in meta.vchannels or replica_of.get(node_id) == state.replica_id or node is None:
                    continue
                self._log.info(
                    "delegator of another replica stopped", vchannel=vchannel, node=node_id, replica=state.replica_id
                )
                with contextlib.suppress(grpc.aio.AioRpcError, StrataError):
                    await self._stub(node.address).UnwatchChannel(
                        querynode_pb2.UnwatchChannelRequest(collection_id=meta.collection_id, vchannel=vchannel),
                        timeout=10,
                    )
                del dist.channels[vchannel]
                self._delegators.forget(node_id, vchannel)
                for key, placement in self._channels.items():
                    if (
                        key[0] == meta.collection_id
                        and placement.get(vchannel) == node_id
                        and key[1] != replica_of.get(node_id)
                    ):
                        del placement[vchannel]

    async def _check_replica(
        self, meta: CollectionMeta, rid: int, nodes: set[int], indexes: list[querynode_pb2.IndexSpec]
    ) -> None:
        key = (meta.collection_id, rid)
        reported = {
            v: n
            for n in nodes
            for v, st in self._dist.get(n, NodeDist()).channels.items()
            if v in meta.vchannels and st.replica_id == rid
        }
        channels = place_channels(list(meta.vchannels), {**self._channels.get(key, {}), **reported}, nodes)
        self._channels[key] = channels
        partitions = set(self.loaded_partitions(meta))
        await self._delegators.sync_replica(meta, rid, nodes, channels, self._dist, partitions, indexes)

    async def _release_worker_segments(self) -> None:
        """Workers drop segments of collections that are not loaded any more, and segments
        no delegator has routed to for ``UNUSED_SEGMENT_GRACE_SECONDS`` (moved or compacted away)."""
        used = self._delegators.used()
        now = time.monotonic()
        seen: set[tuple[int, int, int]] = set()
        for node_id, dist in list(self._dist.items()):
            stale: dict[int, list[int]] = {}
            for c, sid in dist.segments:
                if c in self._loads and (node_id, sid) in used:
                    continue
                if c in self._loads:
                    key = (node_id, c, sid)
                    seen.add(key)
                    if now - self._unused_since.setdefault(key, now) < UNUSED_SEGMENT_GRACE_SECONDS:
                        continue
                stale.setdefault(c, []).append(sid)
            node = self._nodes.get(node_id)
            if node is None:
                continue
            for c, sids in stale.items():
                self._log.info("worker segments released", node=node_id, collection_id=c, segments=sorted(sids))
                with contextlib.suppress(grpc.aio.AioRpcError, StrataError):
                    await self._stub(node.address).ReleaseSegments(
                        querynode_pb2.ReleaseSegmentsRequest(collection_id=c, segment_ids=sids), timeout=30
                    )
        self._unused_since = {k: t for k, t in self._unused_since.items() if k in seen}

    async def _pull_distribution(self) -> None:
        dist: dict[int, NodeDist] = {}
        for node_id, node in list(self._nodes.items()):
            try:
                resp = await self._stub(node.address).GetDataDistribution(
                    querynode_pb2.GetDataDistributionRequest(), timeout=5
                )
            except (grpc.aio.AioRpcError, StrataError):
                continue
            dist[node_id] = node_dist(resp)
            for b in resp.broken:
                self._log.warning("delegator broke", vchannel=b.vchannel, node=node_id, reason=b.reason)
                times = self._broken.get(b.vchannel, (0, ""))[0] + 1
                self._broken[b.vchannel] = (times, f"the delegator of {b.vchannel} on query node {node_id} stopped: {b.reason}")
        for states in (d.channels for d in dist.values()):
            for vchannel, st in states.items():
                if st.ready_to_read:
                    self._broken.pop(vchannel, None)
        self._delegators.forget_gone(dist)
        self._dist = dist
