"""The query coordinator's side of each delegator's distribution, one checker round at a time.

A round (``sync_replica``, once per replica of a loaded collection) places the replica's FLUSHED
L1 segments of loaded partitions on its workers, then, for each vchannel on its planned node:

* no delegator there: ``WatchChannel`` with the vchannel's checkpoint and then (read after it)
  its FLUSHED segments: L0 ones to read, L1 ones each with the worker to load it on;
* a serviceable delegator whose sealed segments or their workers differ from the target:
  ``SyncDistribution`` (load these there, release those).

The round reads the FLUSHED segments once for all its syncs: a sync releases only what that view
no longer holds and places what it does. Read again per sync, a compaction committed while an
earlier vchannel's sync was awaited would release its inputs without placing its outputs.

``DelegatorSync`` owns what each delegator confirmed (segment -> worker, per node and vchannel):
the query coordinator reads it for its views and for which worker segments are still used, and
forgets a delegator's entry when the delegator stops or is gone from its node's report.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import grpc
import structlog

from common.errors import StrataError
from common.etcd.session import SessionInfo
from common.position import Position
from common.segment import SegmentLevel, SegmentMeta, SegmentState
from common.segment_pb import position_to_pb, segment_to_pb
from coordinator.catalog import Catalog, CollectionMeta
from coordinator.data.datacoord import DataCoordinator
from coordinator.query.distribution import ChannelState, NodeDist
from coordinator.query.placement import place_segments
from protos import querynode_pb2, querynode_pb2_grpc


class DelegatorSync:
    """Watches and syncs delegators toward the target; remembers what each confirmed."""

    def __init__(
        self,
        *,
        catalog: Catalog,
        data: DataCoordinator,
        stub: Callable[[str], querynode_pb2_grpc.QueryNodeStub],
        nodes: Callable[[], Mapping[int, SessionInfo]],
    ) -> None:
        """``stub`` gives a query node's stub by address; ``nodes`` the live query nodes now."""
        self._catalog = catalog
        self._data = data
        self._stub = stub
        self._nodes = nodes
        self._sent: dict[tuple[int, str], dict[int, int]] = {}  # (node, vchannel) -> placements it confirmed
        self._log = structlog.get_logger().bind(component="query-coord")

    # -- what the delegators confirmed ----------------------------------------------------------

    def routes(self, node_id: int, vchannel: str) -> dict[int, int]:
        """Segment -> worker, as the delegator of ``vchannel`` on ``node_id`` confirmed it."""
        return self._sent.get((node_id, vchannel), {})

    def workers(self) -> dict[tuple[int, str], set[int]]:
        """``(node, vchannel)`` -> the workers its delegator routes to."""
        return {key: set(placed.values()) for key, placed in self._sent.items()}

    def used(self) -> set[tuple[int, int]]:
        """``(worker node, segment)`` pairs some delegator routes to."""
        return {(n, sid) for placed in self._sent.values() for sid, n in placed.items()}

    def forget(self, node_id: int, vchannel: str) -> None:
        """The delegator of ``vchannel`` on ``node_id`` was stopped: a new one starts from scratch."""
        self._sent.pop((node_id, vchannel), None)

    def forget_gone(self, dist: Mapping[int, NodeDist]) -> None:
        """Forget every delegator the nodes' latest reports (``dist``) no longer list."""
        for node_id, vchannel in list(self._sent):
            if vchannel not in dist.get(node_id, NodeDist()).channels:
                del self._sent[(node_id, vchannel)]  # its delegator is gone: a new one starts from scratch

    # -- a round ---------------------------------------------------------------------------------

    async def sync_replica(
        self,
        meta: CollectionMeta,
        rid: int,
        nodes: set[int],
        channels: Mapping[str, int],
        dist: dict[int, NodeDist],
        partitions: set[int],
        indexes: list[querynode_pb2.IndexSpec],
    ) -> None:
        """One round for replica ``rid`` (its ``nodes``, each vchannel's delegator node in ``channels``).

        ``dist`` is the round's pulled distribution (a delegator watched now is added to it);
        ``partitions`` the collection's loaded partitions. A call that fails or is refused is
        logged and left to the next round.
        """
        # Where each sealed segment is, as the replica's workers report it, then the target.
        current = {sid: n for n in nodes for (c, sid) in dist.get(n, NodeDist()).segments if c == meta.collection_id}
        # One view of the FLUSHED segments for the whole round (the module docstring says why).
        flushed = {v: self._flushed(v) for v in meta.vchannels}
        l1 = {
            s.segment_id: s
            for v in meta.vchannels
            for s in flushed[v]
            if s.level == SegmentLevel.L1 and s.partition_id in partitions
        }
        others = {
            n: sum(r for (c, _), r in dist.get(n, NodeDist()).segments.items() if c != meta.collection_id)
            for n in nodes
        }
        segments = place_segments({sid: max(s.rows, 1) for sid, s in l1.items()}, current, nodes, others)
        for vchannel, node_id in channels.items():
            state = dist.get(node_id, NodeDist()).channels.get(vchannel)
            mine = {sid: segments[sid] for sid, s in l1.items() if s.vchannel == vchannel and sid in segments}
            if state is None:
                await self._watch(meta, vchannel, node_id, rid, mine, indexes, dist)
            elif state.serviceable:
                target = {sid for sid, s in l1.items() if s.vchannel == vchannel}
                await self._sync(meta, vchannel, node_id, state, mine, indexes, target, flushed[vchannel])

    def _flushed(self, vchannel: str) -> list[SegmentMeta]:
        """The vchannel's FLUSHED segments readers may load (a job's outputs only once it committed)."""
        return self._data.flushed_segments(vchannel=vchannel)

    def _excluded(self, vchannel: str, checkpoint: Position | None) -> list[int]:
        """Segments a compaction replaced whose inserts a delegator starting at ``checkpoint`` would
        still consume: their rows are in the outputs, so it must skip them."""
        return [
            s.segment_id
            for s in self._data.segments(vchannel=vchannel)
            if s.compacted
            and s.state == SegmentState.DROPPED
            and (checkpoint is None or s.position is None or not checkpoint.covers(s.position.timetick))
        ]

    def _placements(
        self, meta_by_id: dict[int, SegmentMeta], wanted: dict[int, int]
    ) -> list[querynode_pb2.SegmentPlacement]:
        out = []
        for sid, node_id in sorted(wanted.items()):
            node = self._nodes().get(node_id)
            if node is not None:
                out.append(
                    querynode_pb2.SegmentPlacement(
                        segment=segment_to_pb(meta_by_id[sid]), node_id=node_id, address=node.address
                    )
                )
        return out

    async def _sync(
        self,
        meta: CollectionMeta,
        vchannel: str,
        node_id: int,
        state: ChannelState,
        wanted: dict[int, int],
        indexes: list[querynode_pb2.IndexSpec],
        target: set[int],
        segments: Sequence[SegmentMeta],
    ) -> None:
        """``target``: the L1 segments the delegator should serve (FLUSHED, of loaded partitions);
        ``segments``: the vchannel's FLUSHED segments in the view ``target`` and ``wanted`` come from."""
        flushed = {s.segment_id: s for s in segments}
        l0 = [m for sid, m in sorted(flushed.items()) if m.level == SegmentLevel.L0 and sid not in state.sealed]
        # Offline segments too: one that failed to load and was then compacted or dropped away
        # must stop holding its delegator's reads.
        release = sorted(
            sid
            for sid in state.sealed | state.offline
            if sid not in flushed or (flushed[sid].level == SegmentLevel.L1 and sid not in target)
        )
        confirmed = self._sent.get((node_id, vchannel), {})
        moved = {sid: n for sid, n in wanted.items() if sid not in state.sealed or confirmed.get(sid) != n}
        if not l0 and not release and not moved:
            return
        req = querynode_pb2.SyncDistributionRequest(
            collection_id=meta.collection_id,
            vchannel=vchannel,
            load=[segment_to_pb(m) for m in l0],
            release=release,
            placements=self._placements(flushed, moved),
            indexes=indexes,
        )
        try:
            await self._stub(self._nodes()[node_id].address).SyncDistribution(req, timeout=600)
        except grpc.aio.AioRpcError as err:
            self._log.info("sync distribution failed", vchannel=vchannel, node=node_id, error=err.code().name)
            return
        except StrataError as err:
            self._log.info("sync distribution refused", vchannel=vchannel, node=node_id, reason=err.message)
            return
        self._sent[(node_id, vchannel)] = {**{s: n for s, n in confirmed.items() if s in flushed}, **moved}
        self._log.info(
            "distribution synced",
            vchannel=vchannel,
            node=node_id,
            placed=sorted(moved),
            released=release,
            l0=[m.segment_id for m in l0],
        )

    async def _watch(
        self,
        meta: CollectionMeta,
        vchannel: str,
        node_id: int,
        rid: int,
        wanted: dict[int, int],
        indexes: list[querynode_pb2.IndexSpec],
        dist: dict[int, NodeDist],
    ) -> None:
        node = self._nodes()[node_id]
        # The checkpoint first, then the segments: whatever the checkpoint covers is in a
        # FLUSHED segment by then (the flusher reports files before it moves the checkpoint).
        checkpoint = self._data.checkpoint(vchannel)
        flushed = {s.segment_id: s for s in self._flushed(vchannel)}
        wanted = {sid: n for sid, n in wanted.items() if sid in flushed}
        # The schema after the checkpoint: a SchemaChange the checkpoint passed was appended after
        # its schema was saved (pending), so the delegator starts with it instead of missing it.
        schema = (await self._catalog.get_collection(meta.collection_id) or meta).latest_schema
        req = querynode_pb2.WatchChannelRequest(
            collection_id=meta.collection_id,
            vchannel=vchannel,
            pchannel=meta.pchannels[meta.vchannels.index(vchannel)],
            schema_json=schema.to_json(),
            segments=[segment_to_pb(m) for m in flushed.values() if m.level == SegmentLevel.L0],
            placements=self._placements(flushed, wanted),
            indexes=indexes,
            replica_id=rid,
            excluded_segments=self._excluded(vchannel, checkpoint),
        )
        if checkpoint is not None:
            req.checkpoint.CopyFrom(position_to_pb(checkpoint))
        try:
            await self._stub(node.address).WatchChannel(req, timeout=10)
        except grpc.aio.AioRpcError as err:
            self._log.info("watch channel failed", vchannel=vchannel, node=node_id, error=err.code().name)
            return
        except StrataError as err:
            self._log.info("watch channel refused", vchannel=vchannel, node=node_id, reason=err.message)
            return
        self._sent[(node_id, vchannel)] = dict(wanted)
        dist.setdefault(node_id, NodeDist()).channels.setdefault(
            vchannel, ChannelState(0, frozenset(), False, rid)
        )
        self._log.info("channel watched", vchannel=vchannel, node=node_id, replica=rid, segments=sorted(wanted))
