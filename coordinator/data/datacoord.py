"""Data coordination: segment metadata and per-vchannel checkpoints.

Flushers of streaming nodes report here (``AllocSegment``, ``UpdateSegmentState``,
``SaveBinlogPaths``, ``UpdateChannelCheckpoint``) and ask where to resume
(``recovery_info``); the query coordinator reads which segments are FLUSHED;
``flush``/``flush_state`` serve pymilvus' ``flush()``.

Everything lives in etcd (keys in ``coordinator/README.md``) and in a cache
rebuilt by ``start()``, so a new leader continues where the old one stopped.
Writes go through the leader-guarded store. One lock serialises them, so the
cache and etcd never disagree.

Write order promised to readers: a flusher writes files, then calls
``save_binlog_paths`` (segment metadata), then moves the checkpoint; a
checkpoint therefore never covers data that is not in a FLUSHED segment or in
a segment's synced files.

Offline jobs (``jobs.py``) are kept by ``JobLedger`` (``job_ledger.py``), which
this class owns and whose writes it serialises with its own: a job's segments
stay hidden until ``commit_job`` writes the job COMMITTED and drops a
compaction's inputs in one etcd transaction, the moment readers switch
(``flushed_segments`` is what they may load).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType

import structlog

from common.errors import CollectionNotFound, InvalidArgument, SegmentNotFound
from common.etcd.metastore import MetaStore, Op
from common.message import ManualFlush
from common.position import Position
from common.schema import CollectionSchema
from common.segment import SegmentLevel, SegmentMeta, SegmentState
from coordinator.catalog import Catalog, CollectionMeta, CollectionState
from coordinator.data.job_ledger import JobLedger
from coordinator.data.jobs import JobRecord
from coordinator.data.keys import (
    CHECKPOINT_PREFIX,
    ROW_DELTA_PREFIX,
    SEGMENT_PREFIX,
    dumps,
    json_of,
    segment_key,
)
from coordinator.tso import TimestampOracle
from streamingnode.client.producer import Producer


@dataclass(frozen=True, slots=True, kw_only=True)
class VChannelRecovery:
    vchannel: str
    collection_id: int
    schema: CollectionSchema
    checkpoint: Position | None
    segments: tuple[SegmentMeta, ...]  # every live segment of the vchannel


class DataCoordinator:
    """Segments and checkpoints; see the module docstring for who calls what."""

    def __init__(
        self,
        store: MetaStore,
        catalog: Catalog,
        tso: TimestampOracle,
        producer: Producer,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self._catalog = catalog
        self._tso = tso
        self._producer = producer
        self._clock = clock
        self._segments: dict[int, SegmentMeta] = {}
        self._checkpoints: dict[str, Position] = {}
        self._lock = asyncio.Lock()  # one for every write, the ledger's too: the cache and etcd never disagree
        self._ledger = JobLedger(
            store=store,
            segments=self._segments,
            lock=self._lock,
            require_collection=self._require_collection,
            drop_where=self._drop_where,
            clock=clock,
        )
        self._log = structlog.get_logger().bind(component="data-coord")

    async def start(self) -> None:
        for kv in await self._store.scan(SEGMENT_PREFIX):
            meta = SegmentMeta.from_json(kv.value)
            self._segments[meta.segment_id] = meta
        for kv in await self._store.scan(CHECKPOINT_PREFIX):
            self._checkpoints[kv.key[len(CHECKPOINT_PREFIX) :]] = Position.from_dict(json_of(kv.value))
        jobs = await self._ledger.load()
        self._log.info(
            "data coordinator loaded", segments=len(self._segments), checkpoints=len(self._checkpoints), jobs=jobs
        )

    # -- reads ----------------------------------------------------------------------------

    def segment(self, segment_id: int) -> SegmentMeta | None:
        return self._segments.get(segment_id)

    def segments(self, *, collection_id: int | None = None, vchannel: str | None = None) -> list[SegmentMeta]:
        """Every known segment (DROPPED included until garbage-collected), by id."""
        return sorted(
            (
                s
                for s in self._segments.values()
                if (collection_id is None or s.collection_id == collection_id)
                and (vchannel is None or s.vchannel == vchannel)
            ),
            key=lambda s: s.segment_id,
        )

    def checkpoint(self, vchannel: str) -> Position | None:
        return self._checkpoints.get(vchannel)

    def visible(self, seg: SegmentMeta) -> bool:
        """Written by a flusher, or by a job that committed (a job's segments are hidden until then)."""
        return self._ledger.visible(seg)

    def flushed_segments(self, *, collection_id: int | None = None, vchannel: str | None = None) -> list[SegmentMeta]:
        """The FLUSHED segments readers may load (hidden job outputs left out), by id."""
        return [
            s
            for s in self.segments(collection_id=collection_id, vchannel=vchannel)
            if s.state == SegmentState.FLUSHED and self.visible(s)
        ]

    async def recovery_info(self, pchannel: str) -> list[VChannelRecovery]:
        """Every vchannel on ``pchannel`` of a created (or dropping) collection, with what a flusher needs."""
        out = []
        for meta in await self._catalog.list_collections():
            if meta.state == CollectionState.CREATING:
                continue  # its CreateCollection, if in the WAL, is consumed like any new one
            for v, p in zip(meta.vchannels, meta.pchannels, strict=True):
                if p != pchannel:
                    continue
                segs = tuple(s for s in self.segments(vchannel=v) if s.is_live and self.visible(s))
                out.append(
                    VChannelRecovery(
                        vchannel=v,
                        collection_id=meta.collection_id,
                        schema=meta.latest_schema,
                        checkpoint=self._checkpoints.get(v),
                        segments=segs,
                    )
                )
        return out

    # -- flusher reports --------------------------------------------------------------------

    async def alloc_segment(self, meta: SegmentMeta) -> None:
        """Record a GROWING segment (a consumed CreateSegment); a known segment id changes nothing."""
        async with self._lock:
            if meta.segment_id in self._segments:
                return
            await self._require_collection(meta.collection_id)
            seg = replace(meta, state=SegmentState.GROWING)
            await self._store.put(segment_key(seg), seg.to_json())
            self._segments[seg.segment_id] = seg
            self._log.info("segment growing", segment=seg.segment_id, vchannel=seg.vchannel, level=seg.level.name)

    async def update_state(self, segment_id: int, state: SegmentState) -> None:
        """Move a segment forward (SEALED, FLUSHING, DROPPED); older reports are ignored."""
        async with self._lock:
            seg = self._segments.get(segment_id)
            if seg is None:
                raise SegmentNotFound(f"segment {segment_id} not found")
            moved = seg.moved_to(state, now=self._clock())
            if moved is None:
                return
            await self._store.put(segment_key(moved), moved.to_json())
            self._segments[segment_id] = moved
            self._log.info("segment state", segment=segment_id, state=moved.state.name)

    async def save_binlog_paths(self, meta: SegmentMeta, *, flushed: bool) -> None:
        """Record a sync: the segment's manifest, total rows and synced position.

        ``flushed`` makes it FLUSHED (DROPPED if it has no rows and no deletes). The segment
        is created if its AllocSegment was lost (an L0 segment is only ever reported here).
        Reports for a DROPPED segment or a collection that is gone are refused.
        """
        async with self._lock:
            await self._require_collection(meta.collection_id)
            seg = self._segments.get(meta.segment_id)
            if seg is None:
                seg = replace(meta, state=SegmentState.GROWING)
            if seg.state == SegmentState.DROPPED:
                raise SegmentNotFound(f"segment {meta.segment_id} was dropped")
            if seg.state == SegmentState.FLUSHED:
                return  # a repeated final report (the flusher crashed before its checkpoint)
            updated = replace(
                seg,
                rows=meta.rows,
                manifest=meta.manifest or seg.manifest,
                position=meta.position or seg.position,
                start_position=seg.start_position or meta.start_position,
                level=meta.level,
            )
            if flushed:
                empty = updated.rows == 0 and not updated.manifest
                target = SegmentState.DROPPED if empty else SegmentState.FLUSHED
                moved = updated.moved_to(target, now=self._clock())
                assert moved is not None
                updated = moved
            await self._store.put(segment_key(updated), updated.to_json())
            self._segments[updated.segment_id] = updated
            self._log.info(
                "binlogs saved",
                segment=updated.segment_id,
                state=updated.state.name,
                rows=updated.rows,
                manifest=updated.manifest,
            )

    async def update_checkpoints(self, checkpoints: Sequence[tuple[str, Position]]) -> None:
        """Move vchannel checkpoints forward (older ones are ignored), at most 100 per etcd transaction."""
        async with self._lock:
            ops, moved = [], {}
            for vchannel, pos in checkpoints:
                current = self._checkpoints.get(vchannel)
                if current is not None and pos.timetick <= current.timetick:
                    continue
                ops.append(Op(key=f"{CHECKPOINT_PREFIX}{vchannel}", value=dumps(pos.to_dict())))
                moved[vchannel] = pos
            if ops:
                await self._store.multi_batched(ops)  # each vchannel's checkpoint stands alone
                self._checkpoints.update(moved)

    # -- DDL hooks ----------------------------------------------------------------------------

    async def collection_created(self, positions: Sequence[tuple[str, Position]]) -> None:
        """Initial checkpoints of a new collection: the positions of its CreateCollection messages."""
        await self.update_checkpoints(positions)

    async def collection_dropped(self, meta: CollectionMeta) -> None:
        """Every segment of the collection becomes DROPPED (files removed by GC later); checkpoints go."""
        async with self._lock:
            dropped = await self._drop_where(
                lambda seg: seg.collection_id == meta.collection_id,
                also=[
                    *(Op(key=f"{CHECKPOINT_PREFIX}{v}", value=None) for v in meta.vchannels),
                    Op(key=f"{ROW_DELTA_PREFIX}{meta.collection_id}", value=None),
                ],
            )
            for v in meta.vchannels:
                self._checkpoints.pop(v, None)
            self._ledger.forget_row_delta(meta.collection_id)
        self._log.info("collection segments dropped", collection_id=meta.collection_id, segments=dropped)

    async def partition_dropped(self, collection_id: int, partition_id: int) -> None:
        """Every segment of the partition becomes DROPPED; later reports for them are refused
        (the flusher then drops its work), so none of them becomes FLUSHED again."""
        async with self._lock:
            dropped = await self._drop_where(
                lambda seg: seg.collection_id == collection_id and seg.partition_id == partition_id
            )
        self._log.info(
            "partition segments dropped", collection_id=collection_id, partition_id=partition_id, segments=dropped
        )

    async def _drop_where(self, chosen: Callable[[SegmentMeta], bool], also: Sequence[Op] = ()) -> int:
        """Move the ``chosen`` segments to DROPPED (and write ``also``); call under the lock.
        Batched writes: the DDL that calls this repeats it until it is done."""
        now = self._clock()
        moved = [
            m for seg in self._segments.values() if chosen(seg) and (m := seg.moved_to(SegmentState.DROPPED, now=now))
        ]
        ops = [Op(key=segment_key(m), value=m.to_json()) for m in moved]
        if ops or also:
            await self._store.multi_batched([*ops, *also])
        for seg in moved:
            self._segments[seg.segment_id] = seg
        return len(moved)

    async def forget_segments(self, segment_ids: Sequence[int]) -> None:
        """Remove the metadata of DROPPED segments whose files are gone (garbage collection)."""
        async with self._lock:
            gone = [self._segments[s] for s in segment_ids if s in self._segments]
            for seg in gone:
                if seg.state != SegmentState.DROPPED:
                    raise InvalidArgument(f"segment {seg.segment_id} is {seg.state.name}, not DROPPED")
            if gone:
                await self._store.multi_batched([Op(key=segment_key(s), value=None) for s in gone])
            for seg in gone:
                del self._segments[seg.segment_id]

    # -- offline jobs (the ledger in ``job_ledger.py``) --------------------------------------------
    # Forwarded, so the job managers, GC, index builds and metrics keep one data coordinator to
    # ask; what each call promises is documented on ``JobLedger``.

    def job(self, job_id: int) -> JobRecord | None:
        return self._ledger.job(job_id)

    def jobs(self, *, collection_id: int | None = None) -> list[JobRecord]:
        return self._ledger.jobs(collection_id=collection_id)

    def row_delta(self, collection_id: int) -> int:
        return self._ledger.row_delta(collection_id)

    def reserved(self, segment_id: int) -> bool:
        return self._ledger.reserved(segment_id)

    async def save_job(self, job: JobRecord) -> None:
        await self._ledger.save_job(job)

    async def add_job_segments(self, job_id: int, segments: Sequence[SegmentMeta]) -> None:
        await self._ledger.add_job_segments(job_id, segments)

    async def update_targets(self, job_id: int, updates: Sequence[tuple[int, str, str, int]]) -> None:
        await self._ledger.update_targets(job_id, updates)

    async def commit_job(
        self, job: JobRecord, *, drop: Mapping[int, str] = MappingProxyType({}), row_delta: int = 0
    ) -> None:
        await self._ledger.commit_job(job, drop=drop, row_delta=row_delta)

    async def fail_job(self, job: JobRecord) -> None:
        await self._ledger.fail_job(job)

    async def reveal_job(self, job_id: int) -> None:
        await self._ledger.reveal_job(job_id)

    async def forget_jobs(self, job_ids: Sequence[int]) -> None:
        await self._ledger.forget_jobs(job_ids)

    # -- flush ----------------------------------------------------------------------------

    async def flush(self, meta: CollectionMeta) -> tuple[list[int], int]:
        """Seal every growing segment of the collection (a ManualFlush on each vchannel).

        Returns the segments that held data then and the flush timestamp; ``flush_state``
        tells when all of it is in object storage. The segments are those the coordinator knew
        unflushed, and those each ManualFlush sealed (the WAL's answer names them, as Milvus'
        ManualFlushExtraResponse: a segment created by an insert just before is sealed by the
        streaming node before its flusher has reported it here).
        """
        flush_ts = await self._tso.allocate()
        known = {
            s.segment_id
            for s in self.segments(collection_id=meta.collection_id)
            if s.level == SegmentLevel.L1
            and s.state in (SegmentState.GROWING, SegmentState.SEALED, SegmentState.FLUSHING)
        }
        answers = await asyncio.gather(
            *(
                self._producer.append(
                    p, [ManualFlush(vchannel=v, collection_id=meta.collection_id, flush_ts=flush_ts)]
                )
                for v, p in zip(meta.vchannels, meta.pchannels, strict=True)
            )
        )
        sealed = {sid for results in answers for r in results for sid in r.sealed_segment_ids}
        return sorted(known | sealed), flush_ts

    def flush_state(self, meta: CollectionMeta | None, segment_ids: Sequence[int], flush_ts: int) -> bool:
        """True once every listed segment is FLUSHED (or DROPPED, or gone) and every vchannel
        checkpoint of ``meta``'s collection has passed ``flush_ts`` (which covers segments created
        before the flush that were not reported yet).

        Without a collection (``meta`` None: the Node.js SDK's ``flushSync`` sends segment ids
        only) the segments alone decide and ``flush_ts`` is not looked at, as in Milvus.
        """
        for sid in segment_ids:
            seg = self._segments.get(sid)
            if seg is not None and seg.state not in (SegmentState.FLUSHED, SegmentState.DROPPED):
                return False
        if meta is None:
            return True
        for v in meta.vchannels:
            cp = self._checkpoints.get(v)
            if cp is None or cp.timetick < flush_ts:
                return False
        return True

    async def _require_collection(self, collection_id: int) -> None:
        meta = await self._catalog.get_collection(collection_id)
        if meta is None or meta.state == CollectionState.DROPPING:
            raise CollectionNotFound(f"collection {collection_id} not found")
