"""The data coordinator's offline-job ledger: job records, their segments' visibility, commits.

A job's finished segments are recorded hidden (``add_job_segments``); ``commit_job`` then
writes the job COMMITTED and drops a compaction's inputs in one etcd transaction, which is
the moment readers switch (``visible``); ``fail_job`` drops the hidden segments of a job that
will never commit; ``reveal_job`` clears the job id from the outputs after the commit. Each
collection's row delta (rows imports added, compactions removed) moves in the commit.

The ledger owns the job records and the row deltas. The segments it changes are the data
coordinator's (``datacoord.py``): it gets their cache, the lock that serialises every write
of both, and the coordinator's checks in its constructor, and writes only under that lock.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from types import MappingProxyType

import structlog

from common.errors import InvalidArgument
from common.etcd.metastore import TXN_BATCH_OPS, MetaStore, Op
from common.segment import SegmentMeta, SegmentState
from coordinator.data.jobs import JobRecord, JobState
from coordinator.data.keys import JOB_PREFIX, ROW_DELTA_PREFIX, job_key, segment_key


class JobConflict(InvalidArgument):
    """A job's inputs changed while it ran (dropped, compacted, rewritten): its result cannot commit."""


class JobLedger:
    """Job records and row deltas, written under the data coordinator's lock."""

    def __init__(
        self,
        *,
        store: MetaStore,
        segments: dict[int, SegmentMeta],
        lock: asyncio.Lock,
        require_collection: Callable[[int], Awaitable[None]],
        drop_where: Callable[[Callable[[SegmentMeta], bool]], Awaitable[int]],
        clock: Callable[[], float],
    ) -> None:
        """``segments`` is the data coordinator's cache (changed here, under ``lock``);
        ``require_collection`` raises for a collection that is gone or dropping; ``drop_where``
        moves the chosen segments to DROPPED (called under ``lock``)."""
        self._store = store
        self._segments = segments
        self._lock = lock
        self._require_collection = require_collection
        self._drop_where = drop_where
        self._clock = clock
        self._jobs: dict[int, JobRecord] = {}
        self._row_delta: dict[int, int] = {}  # collection -> rows jobs added (imports) or removed (compaction)
        self._log = structlog.get_logger().bind(component="data-coord")

    async def load(self) -> int:
        """Read the job records and row deltas from etcd; returns how many jobs there are."""
        for kv in await self._store.scan(JOB_PREFIX):
            job = JobRecord.from_json(kv.value)
            self._jobs[job.job_id] = job
        for kv in await self._store.scan(ROW_DELTA_PREFIX):
            self._row_delta[int(kv.key[len(ROW_DELTA_PREFIX) :])] = int(kv.value)
        return len(self._jobs)

    def visible(self, seg: SegmentMeta) -> bool:
        """Written by a flusher, or by a job that committed (a job's segments are hidden until then)."""
        if seg.job_id == 0:
            return True
        job = self._jobs.get(seg.job_id)
        return job is not None and job.state == JobState.COMMITTED

    def forget_row_delta(self, collection_id: int) -> None:
        """A dropped collection's row delta, once its key is removed from etcd."""
        self._row_delta.pop(collection_id, None)

    def job(self, job_id: int) -> JobRecord | None:
        return self._jobs.get(job_id)

    def jobs(self, *, collection_id: int | None = None) -> list[JobRecord]:
        return sorted(
            (j for j in self._jobs.values() if collection_id is None or j.collection_id == collection_id),
            key=lambda j: j.job_id,
        )

    def row_delta(self, collection_id: int) -> int:
        """Rows committed jobs added to (imports) or removed from (compaction) the collection."""
        return self._row_delta.get(collection_id, 0)

    def reserved(self, segment_id: int) -> bool:
        """Whether an unfinished job may write files under this segment id (garbage collection keeps them)."""
        return any(not j.state.finished and j.reserves(segment_id) for j in self._jobs.values())

    async def save_job(self, job: JobRecord) -> None:
        """Create or move a job record (not COMMITTED: that is ``commit_job``)."""
        if job.state == JobState.COMMITTED:
            raise InvalidArgument("a job is committed by commit_job")
        async with self._lock:
            await self._store.put(job_key(job.job_id), job.to_json())
            self._jobs[job.job_id] = job

    async def add_job_segments(self, job_id: int, segments: Sequence[SegmentMeta]) -> None:
        """Record a running job's finished segments: FLUSHED, hidden until the job commits.

        Idempotent (a job run again writes the same ids). Batched: not atomic, and need not be.
        """
        async with self._lock:
            job = self._jobs.get(job_id)
            if job is None or job.state.finished:
                raise JobConflict(f"job {job_id} is not running")
            await self._require_collection(job.collection_id)
            now = self._clock()
            metas = []
            for seg in segments:
                old = self._segments.get(seg.segment_id)
                if old is not None and old.job_id != job_id:
                    raise JobConflict(f"segment {seg.segment_id} exists already and is not job {job_id}'s")
                metas.append(replace(seg, state=SegmentState.FLUSHED, job_id=job_id, flushed_at=now))
            await self._store.multi_batched([Op(key=segment_key(m), value=m.to_json()) for m in metas])
            for m in metas:
                self._segments[m.segment_id] = m

    async def update_targets(self, job_id: int, updates: Sequence[tuple[int, str, str, int]]) -> None:
        """An L0 job's new manifests for its targets: ``(segment, planned manifest, new manifest, deleted rows)``.

        The targets stay what they are; their new versions add delta logs whose deletes the
        job's L0 inputs still hold too, so readers see the same rows before and after.
        Raises ``JobConflict`` if a target changed since the job was planned.
        """
        async with self._lock:
            job = self._jobs.get(job_id)
            if job is None or job.state.finished:
                raise JobConflict(f"job {job_id} is not running")
            metas = []
            for sid, planned, manifest, deleted in updates:
                seg = self._segments.get(sid)
                if seg is None or seg.state != SegmentState.FLUSHED or not self.visible(seg):
                    raise JobConflict(f"segment {sid} is no longer a flushed segment")
                if seg.manifest == manifest:
                    continue  # done by an earlier attempt
                if seg.manifest != planned:
                    raise JobConflict(f"segment {sid} changed while job {job_id} ran")
                metas.append(replace(seg, manifest=manifest, deleted_rows=seg.deleted_rows + deleted))
            await self._store.multi_batched([Op(key=segment_key(m), value=m.to_json()) for m in metas])
            for m in metas:
                self._segments[m.segment_id] = m

    async def commit_job(
        self, job: JobRecord, *, drop: Mapping[int, str] = MappingProxyType({}), row_delta: int = 0
    ) -> None:
        """Make ``job`` COMMITTED and drop the segments ``drop`` (id -> the manifest planned) in ONE
        etcd transaction: readers switch from the inputs to the outputs at this write. The
        collection's row count moves by ``row_delta`` in the same transaction.

        Raises:
            JobConflict: an input is gone, hidden or rewritten since the job was planned; nothing
                is written and the caller fails the job.
        """
        if job.state != JobState.COMMITTED:
            raise InvalidArgument("commit_job takes the COMMITTED record")
        async with self._lock:
            current = self._jobs.get(job.job_id)
            if current is None or current.state.finished:
                raise JobConflict(f"job {job.job_id} is not running")
            await self._require_collection(job.collection_id)
            now = self._clock()
            dropped = []
            for sid, manifest in drop.items():
                seg = self._segments.get(sid)
                if seg is None or seg.state != SegmentState.FLUSHED or not self.visible(seg):
                    raise JobConflict(f"input segment {sid} is no longer a flushed segment")
                if seg.manifest != manifest:
                    raise JobConflict(f"input segment {sid} changed while job {job.job_id} ran")
                moved = seg.moved_to(SegmentState.DROPPED, now=now)
                assert moved is not None
                dropped.append(replace(moved, compacted=True))
            ops = [Op(key=job_key(job.job_id), value=job.to_json())]
            ops += [Op(key=segment_key(m), value=m.to_json()) for m in dropped]
            rows = self._row_delta.get(job.collection_id, 0) + row_delta
            if row_delta:
                ops.append(Op(key=f"{ROW_DELTA_PREFIX}{job.collection_id}", value=str(rows).encode()))
            if len(ops) > TXN_BATCH_OPS:
                raise InvalidArgument(f"job {job.job_id} drops {len(dropped)} segments, more than one commit holds")
            await self._store.multi(ops)
            self._jobs[job.job_id] = job
            if row_delta:
                self._row_delta[job.collection_id] = rows
            for m in dropped:
                self._segments[m.segment_id] = m
        self._log.info("job committed", job=job.job_id, kind=job.kind.value, outputs=list(job.outputs),
                       dropped=sorted(drop))

    async def fail_job(self, job: JobRecord) -> None:
        """Drop what a job that will never commit recorded (its hidden segments), then save it FAILED."""
        if job.state != JobState.FAILED:
            raise InvalidArgument("fail_job takes the FAILED record")
        async with self._lock:
            current = self._jobs.get(job.job_id)
            if current is not None and current.state == JobState.COMMITTED:
                raise JobConflict(f"job {job.job_id} committed already")
            await self._drop_where(lambda seg: seg.job_id == job.job_id)
            await self._store.put(job_key(job.job_id), job.to_json())
            self._jobs[job.job_id] = job

    async def reveal_job(self, job_id: int) -> None:
        """After the commit: clear ``job_id`` on the job's segments (they stay visible), then mark it revealed."""
        async with self._lock:
            job = self._jobs.get(job_id)
            if job is None or job.state != JobState.COMMITTED or job.revealed:
                return
            metas = [replace(s, job_id=0) for s in self._segments.values() if s.job_id == job_id]
            await self._store.multi_batched([Op(key=segment_key(m), value=m.to_json()) for m in metas])
            for m in metas:
                self._segments[m.segment_id] = m
            done = replace(job, revealed=True)
            await self._store.put(job_key(job_id), done.to_json())
            self._jobs[job_id] = done

    async def forget_jobs(self, job_ids: Sequence[int]) -> None:
        """Remove finished job records (their segments no longer name them)."""
        async with self._lock:
            gone = [j for j in job_ids if j in self._jobs and self._jobs[j].state.finished]
            if any(s.job_id in gone for s in self._segments.values()):
                raise InvalidArgument("a segment still names one of these jobs")
            await self._store.multi_batched([Op(key=job_key(j), value=None) for j in gone])
            for j in gone:
                del self._jobs[j]
