"""The delegator of one vchannel in one replica: growing data here, sealed segments on workers.

Lifetime (``start`` to ``stop``), one task and its consumer:

1. read the deletes of the FLUSHED L0 segments ``WatchChannel`` named, then
   load its FLUSHED L1 segments onto the workers it named (``sync``); from
   then on the delegator is *serviceable*;
2. meanwhile, from the start, consume the vchannel from the checkpoint:
   inserts go to growing segments (skipping segments served sealed), deletes
   everywhere; each TimeTick advances tsafe. What arrives while a segment
   loads reaches it as in any handoff (below).

What ends a version of a key — a delete, or an insert of the key in another
segment of its partition — is applied to growing data here and **forwarded** to
the sealed segments of that partition (a delete naming none: of every one)
whose PK statistics (the *PK oracle*: bloom filter + min/max of each sealed
segment) may hold the key, on their workers, before the next message is
applied; so by the time tsafe passes it, every segment has it. Everything is
also kept in the ``CutLog`` for segments loaded later. Rows of one key in two
partitions (or twice in one insert) are all live, as in Milvus: ``count(*)``
counts each, and a query keeps the newest per key (``dedupe.py``).

**Loading a sealed segment** (no gap, no duplicate): read its PK stats and its
rows' ``(pk, ts)`` from object storage; note the cut log's position; ask the
worker to load it with every cut recorded so far that may concern it; then,
under the data lock, forward what arrived meanwhile, cut older versions
elsewhere by its rows, drop its growing copy and publish it in the
distribution, all in one step.

One ``SyncDistribution`` changes the distribution in one step: every segment
it loads is loaded and cut first, then all of them are published and the
segments it releases removed in a single snapshot. A compaction's outputs
therefore replace its inputs at once (never both, never neither); if a load
fails while the sync also releases segments, nothing changes and the
coordinator asks again. A released segment is *excluded*: inserts of it that
the consume loop meets later (a compacted segment's rows after an old
checkpoint) are skipped, as ``WatchChannel``'s ``excluded_segments`` are. A
segment's own delta logs (deletes an L0 compaction folded into it) are applied
when it loads.

The distribution is versioned (``distribution.py``): reads pin a snapshot and
a released segment leaves its worker only once no pinned snapshot names it.
A forward or read that fails on a worker takes that worker's segments out of
the distribution (*offline*); reads then fail with NOT_READY until the
coordinator has them loaded again (possibly elsewhere), and the proxy can use
another replica meanwhile. A segment whose load fails is recorded with its
reason (``load_failures.py``) and retried with a backoff; with no other copy of
its rows here it is offline too, so no read answers without them.

A SchemaChange (a field added to the collection) is applied in WAL order: the
growing segments get the field (old rows read its default or null), inserts
converted with an older schema get it filled, then every worker holding a
sealed segment of the vchannel is given the schema (``update_schema``) before the
next message, so tsafe passes the change only once every copy has the field;
the proxy's reads wait for that (their guarantee timestamp is at least the
schema's update timestamp). A worker that cannot be told takes its segments
offline until they are loaded again (with the new schema).

If the WAL no longer holds the position to resume from (``PositionTruncated``),
the delegator stops and reports itself *broken*; the coordinator watches the
channel again with a fresh checkpoint.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator, Awaitable, Sequence
from dataclasses import dataclass, field, replace
from typing import TypeVar

import grpc
import numpy as np
import pyarrow as pa
import structlog

from common.errors import ErrorCode, NotReady, PositionTruncated, StrataError
from common.failpoints import failpoint
from common.fulltext.index_params import bm25_params
from common.message import Delete, DropPartition, Insert, SchemaChange, TimeTick, decode
from common.position import Position
from common.readplan import ReadPlan, VectorQuery
from common.schema import TIMESTAMP_COLUMN, CollectionSchema
from common.schema_evolution import conform_table, is_newer
from common.segment import SegmentMeta
from common.storage.layout import ALL_PARTITIONS
from common.storage.objectstore import ObjectStore
from common.storage.segment_io import SegmentReader
from common.storage.stats import SegmentStats
from common.tasks import BackgroundTasks
from common.tracing import traced
from protos import querynode_pb2 as qpb
from protos.common_pb2 import Message, MessageType
from querynode.delegator.bm25_oracle import Bm25Oracle, SegmentBm25, read_segment_bm25
from querynode.delegator.cutlog import CutLog
from querynode.delegator.distribution import Distribution, Placement, Snapshot
from querynode.delegator.load_failures import LoadFailures
from querynode.delegator.readable import wait_readable
from querynode.delegator.shard_data import ShardData, reaches
from querynode.delegator.tsafe import TSafe
from querynode.offload import concat_slices, run_sliced, search_cost
from querynode.worker.client import WorkerClient
from querynode.worker.segment import search_rows
from segcore.index.base import search_params
from segcore.segments.growing import GrowingStore
from segcore.segments.readmask import read_mask
from segcore.segments.reduce import merge_counts, merge_rows, merge_topk
from segcore.segments.sealed import load_deletes
from streamingnode.client.assignment import AssignmentSource
from streamingnode.client.consumer import consume
from streamingnode.client.timetick import TimeTickRequester

# Worker answers that mean the segments there may be gone or stale: reload before reading them.
WORKER_LOST = {ErrorCode.SEGMENT_NOT_FOUND, ErrorCode.NOT_READY, ErrorCode.UNAVAILABLE, ErrorCode.NODE_NOT_FOUND}


_T = TypeVar("_T")
# Hits merged on the event loop up to this many (a millisecond or so); more in a thread.
INLINE_MERGE_ROWS = 4096


@dataclass(frozen=True, slots=True)
class PlacedSegment:
    meta: SegmentMeta
    placement: Placement


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


class Oracle:
    """PK statistics of each sealed segment: which segments may hold a key."""

    def __init__(self) -> None:
        self.stats: dict[int, list[SegmentStats]] = {}

    def may_contain(self, segment_id: int, pks: pa.Array) -> np.ndarray:
        stats = self.stats.get(segment_id)
        if not stats:
            return np.ones(len(pks), dtype=bool)
        hit = np.zeros(len(pks), dtype=bool)
        for s in stats:
            hit |= s.may_contain(pks)
        return hit


class Delegator:
    def __init__(
        self,
        *,
        collection_id: int,
        vchannel: str,
        pchannel: str,
        schema: CollectionSchema,
        source: AssignmentSource,
        storage: ObjectStore,
        workers: WorkerClient,
        checkpoint: Position | None = None,
        l0_segments: Sequence[SegmentMeta] = (),
        placements: Sequence[PlacedSegment] = (),
        indexes: Sequence[qpb.IndexSpec] = (),
        replica_id: int = 0,
        excluded: Sequence[int] = (),
        ticks: TimeTickRequester | None = None,
    ) -> None:
        self.collection_id = collection_id
        self.vchannel = vchannel
        self.pchannel = pchannel
        self.schema = schema
        self.replica_id = replica_id
        self._source = source
        self._ticks = ticks  # asks the pchannel's owner for a TimeTick a read waits for (readable.py)
        self._storage = storage
        self._workers = workers
        self._checkpoint = checkpoint
        self._initial_l0 = list(l0_segments)
        self._initial = list(placements)
        self.indexes = list(indexes)
        self.data = ShardData(schema)  # growing segments only: sealed ones live on workers
        self.cutlog = CutLog(schema.primary_field.arrow_type())
        self.oracle = Oracle()
        self.bm25 = Bm25Oracle()
        self.dist = Distribution()
        self.l0_segments: set[int] = set()
        self.offline: set[int] = set()
        # Segments whose last load failed (and why); those with no other copy here are offline too.
        self.load_failures = LoadFailures()
        self.failure = ""  # why the delegator broke, when it did
        # Segments whose rows come from elsewhere (released, or compacted away): their inserts are skipped.
        self.excluded: set[int] = set(excluded)
        self._rows: dict[int, int] = {}  # rows per sealed segment served
        self._partition_of: dict[int, int] = {}  # segment -> partition, growing and sealed
        self.tsafe = TSafe()
        self.serviceable = False
        self.broken = False
        self._lock = asyncio.Lock()  # data: no message, load or forward is half-applied while reading
        self._sync_lock = asyncio.Lock()  # one distribution change at a time
        self._arrow_schema = schema.arrow_schema()
        self._pk = schema.primary_field.name
        self._log = structlog.get_logger().bind(component="delegator", vchannel=vchannel, replica=replica_id)
        self._tasks = BackgroundTasks("delegator", vchannel=vchannel, replica=replica_id)

    def start(self) -> None:
        self._tasks.start(self._run(), name=f"delegator-{self.vchannel}")

    async def stop(self) -> None:
        await self._tasks.stop()

    @property
    def sealed_segments(self) -> list[int]:
        """Every segment served from object storage, L1 (on workers) and L0 (deletes here)."""
        return sorted([*self.dist.current.sealed, *self.l0_segments])

    @property
    def sealed_rows(self) -> int:
        return sum(self._rows.get(sid, 0) for sid in self.dist.current.sealed)

    # -- lifetime ---------------------------------------------------------------------------

    async def _run(self) -> None:
        try:
            async with asyncio.TaskGroup() as tg:
                # Consume from the checkpoint while the sealed segments load, as after a handoff: the
                # cut log takes what arrives meanwhile to them. The delegator keeps its place near the
                # WAL's head instead of asking, after a long load, for a position truncated meanwhile.
                tg.create_task(self._consume(), name=f"delegator-consume-{self.vchannel}")
                await self.sync(l0=self._initial_l0, placements=self._initial)
                self.serviceable = True
                self._log.info("delegator serviceable", sealed=len(self.dist.current.sealed),
                               l0=len(self.l0_segments), offline=sorted(self.offline))
        except* PositionTruncated as group:
            reason = "; ".join(str(e) for e in group.exceptions)
            self.failure = f"resume position truncated: {reason}"
            self.broken = True
            self._log.warning("resume position truncated, the channel must be watched again", reason=reason)
        except* Exception as group:  # task boundary: report broken so the coordinator watches the channel again
            err = group.exceptions[0]
            self.failure = f"{type(err).__name__}: {err}"
            self.broken = True
            self._log.error("delegator failed", exc_info=err)

    async def _consume(self) -> None:
        cp = self._checkpoint
        async for _, msg in consume(
            self._source, self.pchannel, self.vchannel, start_from=None if cp is None else cp.message_id
        ):
            if cp is not None and cp.covers(msg.timetick):
                continue  # in the segments loaded from object storage
            try:
                await self._apply(msg)
            except asyncio.CancelledError:
                raise
            except Exception:  # a message we cannot apply must not kill the shard; it is logged
                if msg.type == MessageType.SCHEMA_CHANGE:
                    raise  # on the old schema later rows would not fit: broken, the coordinator watches again
                self._log.exception("cannot apply message", type=MessageType.Name(msg.type))

    async def _apply(self, msg: Message) -> None:
        match decode(msg):
            case TimeTick(timetick=timetick):
                await self.tsafe.advance(timetick)
            case Insert() as ins:
                segment_id = ins.segment_id or 0
                if segment_id in self.dist.current.sealed or segment_id in self.excluded:
                    return  # its rows come from object storage
                partition = self._partition_of[segment_id] = ins.partition_id
                table = ins.table()
                ts = pa.array(np.full(table.num_rows, msg.timetick, dtype=np.uint64))
                table = conform_table(table.append_column(TIMESTAMP_COLUMN, ts), self._arrow_schema, self.schema)
                pks = table.column(self._pk).combine_chunks()
                stamps = np.full(len(pks), msg.timetick, dtype=np.uint64)
                async with self._lock:
                    self.data.insert(segment_id, table, partition)
                    self.cutlog.add_versions(segment_id, partition, pks, stamps)
                    await self._forward(pks, stamps, partition, exclude=segment_id)
            case Delete() as dele:
                pks = dele.pks()
                stamps = np.full(len(pks), msg.timetick, dtype=np.uint64)
                partition = dele.partition_id
                async with self._lock:
                    self.data.delete(pks, msg.timetick, partition)
                    self.cutlog.add_deletes(pks, stamps, partition)
                    await self._forward(pks, stamps, partition)
            case DropPartition(partition_id=dropped):
                async with self._lock:
                    for sid in [sid for sid in self.data.growing if self._partition_of.get(sid) == dropped]:
                        self.data.growing.pop(sid)
                self._log.info("partition dropped: its growing segments are gone", partition=dropped)
            case SchemaChange(schema=schema):
                await self._schema_changed(schema)
            case _:
                pass  # other DDL and flush messages carry nothing for reads

    async def _schema_changed(self, schema: CollectionSchema) -> None:
        """Take a newer schema: growing data here, then every worker of the distribution."""
        if not is_newer(self.schema, schema):
            return
        async with self._lock:
            await asyncio.to_thread(self.data.add_fields, schema)
            self.schema = schema
            self._arrow_schema = schema.arrow_schema()
        for placement, sids in self.dist.current.by_worker().items():
            await self._tell_schema(placement, sids)
        self._log.info("schema changed", version=schema.version, fields=len(schema.fields))

    async def _tell_schema(self, placement: Placement, sids: list[int]) -> None:
        try:
            await self._workers.at(placement.address).update_schema(self.collection_id, self.schema)
        except (grpc.aio.AioRpcError, StrataError) as err:
            self._take_offline(sids, f"schema change on node {placement.node_id} failed: {err}")

    async def _forward(
        self, pks: pa.Array, ts: np.ndarray, partition: int, *, exclude: int | None = None,
        skip: set[int] | None = None,
    ) -> None:
        """Send cuts to the sealed segments of ``partition`` (``ALL_PARTITIONS``: of every one) whose PK
        stats may hold the keys (call under the data lock)."""
        per_worker: dict[Placement, dict[int, tuple[pa.Array, np.ndarray]]] = {}
        for sid, placement in self.dist.current.sealed.items():
            if sid == exclude or (skip is not None and sid in skip):
                continue
            if not reaches(partition, self._partition_of.get(sid, ALL_PARTITIONS)):
                continue
            hit = self.oracle.may_contain(sid, pks)
            if hit.any():
                per_worker.setdefault(placement, {})[sid] = (pks.filter(pa.array(hit)), ts[hit])
        for placement, cuts in per_worker.items():
            try:
                await self._workers.at(placement.address).cut(self.collection_id, cuts)
            except (grpc.aio.AioRpcError, StrataError) as err:
                self._take_offline(list(cuts), f"forwarding to node {placement.node_id} failed: {err}")

    def _take_offline(self, segment_ids: list[int], reason: str) -> None:
        """These segments may miss a cut or a worker: serve none of them until they are loaded again."""
        self.dist.update(remove=segment_ids)
        self.offline.update(segment_ids)
        self._log.warning("segments offline", segments=segment_ids, reason=reason)

    def _read_failed(self, placement: Placement, sids: list[int], err: Exception) -> StrataError:
        """The error a failed worker read becomes. A worker that cannot be reached or no longer holds
        the segments takes them offline (they may miss cuts); an error the read itself caused (a
        filter that cannot be evaluated, say) is the caller's and leaves the distribution alone."""
        if isinstance(err, StrataError) and err.code not in WORKER_LOST:
            return err
        self._take_offline(sids, f"read on node {placement.node_id} failed: {err}")
        return NotReady(f"{self.vchannel}: worker {placement.node_id} failed: {err}")

    # -- distribution ---------------------------------------------------------------------------

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
            failed: list[int] = []
            for placed in placements:
                current = self.dist.current.sealed.get(placed.meta.segment_id)
                if current is not None and current.node_id == placed.placement.node_id:
                    continue
                if not self.load_failures.due(placed.meta.segment_id):
                    failed.append(placed.meta.segment_id)  # failed lately: tried again after its backoff
                    continue
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
                    for q in prepared:
                        if q is not p and len(q.keys) and q.placed.meta.partition_id == partition:
                            hit = p.oracle.may_contain(sid, q.keys)
                            if hit.any():
                                mask = pa.array(hit)
                                pks = pa.concat_arrays([pks, q.keys.filter(mask).cast(pks.type)])
                                ts = np.concatenate([ts, q.stamps[hit]])
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
        for placement, sids in _group({**held, **old}).items():
            try:
                await self._workers.at(placement.address).release(self.collection_id, sids)
            except (grpc.aio.AioRpcError, StrataError) as err:
                self._log.info("release failed", segments=sids, error=str(err))
        if release:
            self._log.info("segments released", segments=release)

    # -- reads -----------------------------------------------------------------------------------

    def _check_readable(self) -> None:
        if not self.serviceable:
            raise NotReady(f"{self.vchannel}: its sealed segments are still loading")
        if not self.offline:
            return
        failed = [f for sid in sorted(self.offline) if (f := self.load_failures.get(sid)) is not None]
        if failed:
            raise NotReady(
                f"{self.vchannel}: {failed[0].describe()}; reads fail until it is loaded (retried), so that no "
                "answer leaves its rows out"
            )
        raise NotReady(
            f"{self.vchannel}: sealed segments {sorted(self.offline)} are being loaded again; retry or use "
            "another replica"
        )

    @contextlib.asynccontextmanager
    async def _read_view(self, plan: ReadPlan) -> AsyncIterator[tuple[dict[Placement, list[int]], list[GrowingStore]]]:
        """The sealed segments a read covers (by worker, pinned until the block ends) and its growing
        segments, as of one moment: a handoff takes a segment out of the growing ones and puts it in
        the snapshot in one step under the data lock, so both are read under it. (Pinned before the
        lock, the snapshot could predate a handoff that held the lock across its worker calls,
        and the growing segments read after it: the read would see neither copy.)"""
        with contextlib.ExitStack() as pins:
            async with self._lock:
                snap = pins.enter_context(self.dist.pinned())
                sealed, stores = self._sealed_in(snap, plan), self._growing_in(plan)
            yield sealed, stores

    async def _remote(self, placement: Placement, sids: list[int], call: Awaitable[_T]) -> _T:
        """``call``'s answer; a worker's failure becomes ``_read_failed`` for its segments."""
        try:
            return await call
        except (grpc.aio.AioRpcError, StrataError) as err:
            raise self._read_failed(placement, sids, err) from err

    def _growing_in(self, plan: ReadPlan) -> list[GrowingStore]:
        """The growing segments a read covers (call under the data lock): none with ``ignore_growing``."""
        if plan.ignore_growing:
            return []
        if plan.partitions is None:
            return list(self.data.growing.values())
        return [s for sid, s in self.data.growing.items() if self._partition_of.get(sid) in plan.partitions]

    def _sealed_in(self, snap: Snapshot, plan: ReadPlan) -> dict[Placement, list[int]]:
        """The pinned snapshot's sealed segments a read covers, by worker."""
        if plan.partitions is None:
            return snap.by_worker()
        out: dict[Placement, list[int]] = {}
        for placement, sids in snap.by_worker().items():
            mine = [sid for sid in sids if self._partition_of.get(sid) in plan.partitions]
            if mine:
                out[placement] = mine
        return out

    @traced("delegator.search")
    async def search(self, plan: ReadPlan, query: VectorQuery) -> pa.Table:
        """This vchannel's top ``query.topk`` hits per query vector: the growing segments searched
        here, the sealed ones on their workers, merged."""
        read_ts = await wait_readable(self.tsafe, self._ticks, self.pchannel, plan.guarantee_ts,
                                      timeout=plan.timeout, what=f"search {self.vchannel}")
        self._check_readable()
        if query.metric.upper() == "BM25":  # text queries: term frequencies weighted by this shard's IDF
            built = bm25_params(next((dict(i.params) for i in self.indexes if i.field_name == query.anns_field), {}))
            weighed, weights = self.bm25.weigh(query.anns_field, query.vectors, dict(query.params), built,
                                               self.data.growing)
            query = replace(query, vectors=weighed, params=weights)
        field, vectors, metric, topk = query.anns_field, query.vectors, query.metric, query.topk
        parsed = search_params(dict(query.params))

        def on_worker(placement: Placement, sids: list[int]) -> Awaitable[pa.Table]:
            worker = self._workers.at(placement.address)
            return self._remote(placement, sids, worker.search(self.collection_id, sids, read_ts, plan, query))

        async def growing(stores: list[GrowingStore]) -> list[pa.Table]:
            if not stores:
                return []
            expr = plan.expr
            # A store's filter mask, kept while no insert has grown it (rows only ever get appended).
            masks: dict[int, tuple[int, np.ndarray | None]] = {}

            def mask(i: int, store: GrowingStore) -> np.ndarray | None:
                kept = masks.get(i)
                if kept is None or kept[0] != store.num_rows:
                    kept = masks[i] = (store.num_rows, read_mask(store, expr=expr, expire_before=plan.expire_before))
                return kept[1]

            def run(part: slice, _threads: int) -> list[pa.Table]:  # exact search: numpy picks its threads
                return [
                    search_rows(
                        store,
                        None,
                        field_name=field,
                        queries=vectors[part],
                        metric=metric,
                        topk=topk,
                        read_ts=read_ts,
                        mask=mask(i, store),
                        params=parsed,
                        output_fields=plan.output_fields,
                    )
                    for i, store in enumerate(stores)
                ]

            size = plan.filter_cost
            cost = sum(search_cost(s.num_rows, None, vectors, parsed, filter_size=size) for s in stores)
            # Slice by slice under the data lock (no message is applied to the stores meanwhile): the
            # WAL's messages, and so tsafe and the reads waiting for it, move on between slices. A row
            # inserted or deleted between two slices is later than read_ts, so every slice sees the same.
            slices, answers = await run_sliced(
                run, nq=len(vectors), cost=cost, guard=lambda: self._lock, parallel=False
            )
            return [concat_slices([a[i] for a in answers], slices) for i in range(len(stores))]

        async with self._read_view(plan) as (sealed, stores):
            if not stores and len(sealed) == 1:  # one worker holds all of it: no task to gather
                [(placement, sids)] = sealed.items()
                parts = [await on_worker(placement, sids)]
            else:
                # The workers' searches start first (their walks run in threads); hits keep the growing
                # segments first, as merge_topk ranks ties in input order.
                *others, local = await asyncio.gather(*(on_worker(p, s) for p, s in sealed.items()), growing(stores))
                parts = [*local, *others]
        if not parts:
            empty = GrowingStore(self.schema)
            none = np.empty(0, dtype=np.int64)
            return empty.hits_table(none, none, np.empty(0, np.float32), plan.output_fields)
        if len(parts) == 1:
            return parts[0]
        merge = functools.partial(merge_topk, parts, topk=topk, metric=metric, pk_field=self._pk)
        return merge() if sum(p.num_rows for p in parts) <= INLINE_MERGE_ROWS else await asyncio.to_thread(merge)

    async def query(self, plan: ReadPlan, *, limit: int | None, count_only: bool) -> tuple[pa.Table | None, int]:
        """This vchannel's rows (sorted by key, at most ``limit``) or, ``count_only``, their count."""
        read_ts = await wait_readable(self.tsafe, self._ticks, self.pchannel, plan.guarantee_ts,
                                      timeout=plan.timeout, what=f"query {self.vchannel}")
        self._check_readable()
        asked = plan
        if not count_only:  # rows carry their _ts: a key in two partitions keeps its newest row
            plan = replace(plan, output_fields=(*plan.output_fields, TIMESTAMP_COLUMN))

        def remote(placement: Placement, sids: list[int]) -> Awaitable[tuple[pa.Table | None, int]]:
            worker = self._workers.at(placement.address)
            return self._remote(placement, sids, worker.query(self.collection_id, sids, read_ts, plan, limit, count_only))

        async def growing(stores: list[GrowingStore]) -> list[tuple[pa.Table | None, int]]:
            if not stores:
                return []

            def mask(store: GrowingStore) -> np.ndarray | None:
                return read_mask(store, expr=plan.expr, expire_before=plan.expire_before)

            async with self._lock:

                def run() -> list[tuple[pa.Table | None, int]]:
                    if count_only:
                        return [(None, s.count(read_ts=read_ts, mask=mask(s))) for s in stores]
                    parts = [
                        s.query(read_ts=read_ts, mask=mask(s), output_fields=plan.output_fields, limit=limit)
                        for s in stores
                    ]
                    return [(p, p.num_rows) for p in parts]

                return await asyncio.to_thread(run)

        async with self._read_view(plan) as (sealed, stores):
            local, *others = await asyncio.gather(growing(stores), *(remote(p, s) for p, s in sealed.items()))
        results = [*local, *others]
        if count_only:
            return None, merge_counts([n for _, n in results])
        tables = [t for t, _ in results if t is not None and t.num_rows]
        if not tables:
            empty = GrowingStore(self.schema).query(read_ts=read_ts, output_fields=asked.output_fields)
            return empty, 0
        keep_ts = TIMESTAMP_COLUMN in asked.output_fields
        merge = functools.partial(merge_rows, tables, pk_field=self._pk, limit=limit, keep_ts=keep_ts)
        table = merge() if sum(t.num_rows for t in tables) <= INLINE_MERGE_ROWS else await asyncio.to_thread(merge)
        return table, table.num_rows


def _group(held: dict[int, Placement]) -> dict[Placement, list[int]]:
    out: dict[Placement, list[int]] = {}
    for sid, p in held.items():
        out.setdefault(p, []).append(sid)
    return out


