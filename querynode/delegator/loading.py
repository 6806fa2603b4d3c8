"""Distribution changes: L0 deletes read, sealed segments loaded on their workers and published.

``sync`` (``WatchChannel``'s segments, then each ``SyncDistribution``) loads first, each
segment with every cut recorded so far, then publishes every loaded segment and removes every
released one in one snapshot under the data lock; old copies leave their workers once no pinned
snapshot names them. What to load and how to group segments by worker is decided without I/O
(``planning.py``).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Sequence
from dataclasses import dataclass, field

import grpc
import numpy as np
import pyarrow as pa

from common.errors import StrataError
from common.failpoints import failpoint
from common.schema import TIMESTAMP_COLUMN
from common.segment import SegmentMeta
from common.storage.segment_io import SegmentReader
from common.storage.stats import SegmentStats
from protos import querynode_pb2 as qpb
from querynode.delegator.bm25_oracle import SegmentBm25, read_segment_bm25
from querynode.delegator.core import DelegatorCore
from querynode.delegator.distribution import Placement
from querynode.delegator.planning import Oracle, PlacedSegment, group_by_worker, loads_due, with_batch_versions
from segcore.segments.sealed import load_deletes


@dataclass(frozen=True, slots=True, kw_only=True)
class _Prepared:
    """A segment loaded on its worker (with the cuts recorded up to ``mark``), not yet published."""

    placed: PlacedSegment
    oracle: Oracle
    stats: list[SegmentStats]
    keys: pa.Array
    stamps: np.ndarray
    mark: int
    moving_from: Placement | None
    cuts: int
    bm25: SegmentBm25 = field(default_factory=dict)


class SegmentLoading(DelegatorCore):
    """The coordinator's distribution applied: segments loaded, published and released."""

    async def sync(
        self,
        *,
        l0: Sequence[SegmentMeta] = (),
        placements: Sequence[PlacedSegment] = (),
        release: Sequence[int] = (),
        indexes: Sequence[qpb.IndexSpec] | None = None,
    ) -> None:
        """The coordinator's view: read new L0 deletes, load L1 segments on their workers, release others.

        Loads come first; then every loaded segment is published and every released one
        removed in one snapshot. If a load fails and the sync releases segments, nothing is
        published or released (a compaction's outputs never appear beside, nor instead of
        only some of, its inputs); the coordinator sends the sync again.
        """
        async with self._sync_lock:
            if indexes is not None:
                self.indexes = list(indexes)
            for meta in l0:
                await self._load_l0(meta)
            prepared: list[_Prepared] = []
            load, failed = loads_due(self.dist.current.sealed, placements, self.load_failures)
            for placed, current in load:
                ready = await self._prepare(placed, moving_from=current)
                if ready is None:
                    failed.append(placed.meta.segment_id)
                else:
                    prepared.append(ready)
            if failed and release:
                # What serves now keeps serving (a compaction's inputs hold its outputs' rows).
                self._log.warning("sync deferred: a load failed, nothing is swapped", failed=failed,
                                  release=sorted(release))
                return
            self._missing(failed)
            if prepared or release:
                await self._publish(prepared, list(release))

    async def _load_l0(self, meta: SegmentMeta) -> None:
        if meta.segment_id in self.l0_segments:
            return
        if self.serviceable:
            # Consumed already or still to come from the WAL (its deletes follow the checkpoint
            # this delegator started from): nothing to read.
            self.l0_segments.add(meta.segment_id)
            return
        failpoint("delegator.load_l0")
        pks, ts = await asyncio.to_thread(load_deletes, self._storage, self.schema, meta)
        async with self._lock:
            self.data.add_deletes(pks, ts, meta.partition_id)
            self.cutlog.add_deletes(pks, ts, meta.partition_id)
        self.l0_segments.add(meta.segment_id)

    def _read_keys(self, meta: SegmentMeta) -> tuple[list[SegmentStats], pa.Array, np.ndarray, tuple[pa.Array, np.ndarray]]:
        """The segment's PK stats, its rows' keys and timestamps, and its own deletes (delta logs)."""
        failpoint("delegator.read_keys")
        reader = SegmentReader(self._storage, self.schema)
        manifest = reader.read_manifest(meta.manifest)
        rows = reader.read_inserts(manifest, columns=[self._pk, TIMESTAMP_COLUMN])
        ts = np.asarray(rows.column(TIMESTAMP_COLUMN).to_numpy(), dtype=np.uint64)
        deltas = reader.read_deltas(manifest)
        own = (deltas.column("pk").combine_chunks(), np.asarray(deltas.column("ts").to_numpy(), dtype=np.uint64))
        return reader.read_stats(manifest), rows.column(self._pk).combine_chunks(), ts, own

    async def _prepare(self, placed: PlacedSegment, *, moving_from: Placement | None) -> _Prepared | None:
        """Load the segment on its worker with every cut recorded so far (and its own deletes); not published.

        Returns None when it cannot be loaded (``_load_failed``): a growing or sealed copy here, if
        any, keeps serving; a segment with none is offline until a later load succeeds.
        """
        meta, target = placed.meta, placed.placement
        sid = meta.segment_id
        try:
            stats, keys, stamps, (own_pks, own_ts) = await asyncio.to_thread(self._read_keys, meta)
            bm25 = await asyncio.to_thread(read_segment_bm25, self._storage, self.schema, meta)
        except Exception as err:  # any failure to read it is a failed load, reported and retried
            self._load_failed(placed, err)
            return None
        oracle = Oracle()
        oracle.stats[sid] = stats
        mark = self.cutlog.mark()
        def may_hold(k: pa.Array) -> np.ndarray:
            return oracle.may_contain(sid, k)

        pks, ts = self.cutlog.cuts_for(sid, meta.partition_id, may_hold)
        if len(own_pks):
            pks, ts = pa.concat_arrays([pks, own_pks.cast(pks.type)]), np.concatenate([ts, own_ts])
        schema = self.schema
        try:
            await self._workers.at(target.address).load(self.collection_id, schema, [meta], self.indexes,
                                                         {sid: (pks, ts)})
            if self.schema is not schema:  # a field was added while it loaded
                await self._workers.at(target.address).update_schema(self.collection_id, self.schema)
        except Exception as err:  # the worker's failure (an in-process worker raises what it met)
            self._load_failed(placed, err)
            return None
        return _Prepared(placed=placed, oracle=oracle, stats=stats, keys=keys, stamps=stamps, mark=mark,
                         moving_from=moving_from, cuts=len(pks), bm25=bm25)

    def _load_failed(self, placed: PlacedSegment, err: BaseException) -> None:
        """Record a failed load (it is tried again after a backoff)."""
        sid = placed.meta.segment_id
        failure = self.load_failures.record(sid, placed.placement.node_id, err)
        self._log.warning("segment load failed", segment=sid, node=placed.placement.node_id,
                          attempts=failure.attempts, error=failure.reason)

    def _missing(self, failed: Sequence[int]) -> None:
        """Segments that failed to load and have no other copy here (none growing, none sealed:
        flushed before this delegator's checkpoint, or imported) would leave their rows out of
        every answer: they go offline, so reads fail until they load."""
        missing = [sid for sid in failed if sid not in self.data.growing and sid not in self.dist.current.sealed]
        if missing:
            self.offline.update(missing)
            self._log.warning("segments offline", segments=missing, reason="load failed")

    async def _publish(self, prepared: list[_Prepared], release: list[int]) -> None:
        """Under the data lock: cuts that arrived since each load, then one snapshot with every
        prepared segment in and every released one out; afterwards the old copies leave their workers."""
        new = {p.placed.meta.segment_id for p in prepared}
        async with self._lock:
            try:
                for p in prepared:
                    sid = p.placed.meta.segment_id
                    partition = p.placed.meta.partition_id
                    pks, ts = self.cutlog.cuts_for(
                        sid, partition, functools.partial(p.oracle.may_contain, sid), since=p.mark
                    )
                    # The other segments of this sync in its partition are versions for it too (the cut
                    # log has them later).
                    others = [(q.placed.meta.partition_id, q.keys, q.stamps) for q in prepared if q is not p]
                    pks, ts = with_batch_versions(pks, ts, sid, partition, p.oracle, others)
                    if len(pks):
                        await self._workers.at(p.placed.placement.address).cut(self.collection_id, {sid: (pks, ts)})
            except (grpc.aio.AioRpcError, StrataError) as err:
                for p in prepared:
                    self._load_failed(p.placed, err)
                if not release:
                    self._missing([p.placed.meta.segment_id for p in prepared])
                return
            for p in prepared:
                sid = p.placed.meta.segment_id
                partition = p.placed.meta.partition_id
                self.oracle.stats[sid] = p.stats
                self.bm25.add_sealed(sid, p.bm25)
                # Its rows end older versions of their keys everywhere else in its partition.
                for _, store in self.data.growing_in(partition, but=sid):
                    store.cut(p.keys, p.stamps)
                await self._forward(p.keys, p.stamps, partition, exclude=sid, skip=new)
                self.cutlog.set_versions(sid, partition, p.keys, p.stamps)
                self.data.growing.pop(sid, None)
                self._partition_of[sid] = partition
                self.offline.discard(sid)
                self.load_failures.forget(sid)
                self._rows[sid] = len(p.keys)
            held = {sid: self.dist.current.sealed[sid] for sid in release if sid in self.dist.current.sealed}
            snap = self.dist.update(add={p.placed.meta.segment_id: p.placed.placement for p in prepared},
                                    remove=release)
            for sid in release:
                self.oracle.stats.pop(sid, None)
                self.bm25.drop_sealed(sid)
                self.cutlog.drop(sid)
                self.l0_segments.discard(sid)
                self.offline.discard(sid)
                self.load_failures.forget(sid)
                self._rows.pop(sid, None)
                self.excluded.add(sid)
        for p in prepared:
            self._log.info("sealed segment loaded", segment=p.placed.meta.segment_id, node=p.placed.placement.node_id,
                           rows=len(p.keys), cuts=p.cuts)
        old = {p.placed.meta.segment_id: p.moving_from for p in prepared if p.moving_from is not None}
        if not old and not held:
            return
        await self.dist.drained(snap.version)
        for placement, sids in group_by_worker({**held, **old}).items():
            try:
                await self._workers.at(placement.address).release(self.collection_id, sids)
            except (grpc.aio.AioRpcError, StrataError) as err:
                self._log.info("release failed", segments=sids, error=str(err))
        if release:
            self._log.info("segments released", segments=release)
