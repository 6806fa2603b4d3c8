"""Compaction: plans chosen by ``policy.py``, run on Spark through the runner, committed here.

Owned by the active coordinator (``start`` / ``stop``); one task per compaction
request plus the automatic round (every ``jobs.compaction_interval_seconds``).
A vchannel has at most one plan running at a time, and every Spark job waits
for the coordinator's job slot (shared with imports), so two jobs never
compact the same segments.

Running the plans of one round or request, in order:

1. each plan gets a ``JobRecord`` (PENDING) and its segment ids; RUNNING once
   the spec is built; all plans of the round go to Spark as one job;
2. per plan, the results: a mix plan's outputs are recorded hidden
   (``add_job_segments``), an L0 plan's targets get their new manifests (the
   deletes are then held twice, which reads the same);
3. ``commit_job``: the plan COMMITTED and its inputs DROPPED in one etcd
   transaction, checked against the inputs as planned; from here query nodes
   swap the inputs for the outputs (each delegator in one step, once the
   outputs are loaded);
4. ``reveal_job`` clears the outputs' job id.

A crash before 3 leaves the inputs visible (the plan fails when the next
coordinator starts, its hidden outputs are dropped, their files collected);
after 3 the outputs. Failpoints ``compaction.after_job``,
``compaction.after_outputs`` and ``compaction.after_commit`` sit between the
steps. A request (pymilvus ``compact()``) runs its L0 plans first, then plans
mix compaction over what they produced. A job waits for its Spark run while
loaded collections are loading (``jobs.compaction_yield_seconds`` at most):
after a restart, the loads come first.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Protocol

import structlog

from common.config import JobsConfig
from common.errors import InvalidArgument, StrataError
from common.etcd.metastore import MetaStore
from common.failpoints import failpoint
from common.position import Position
from common.schema import CollectionSchema, DataType
from common.segment import SegmentLevel, SegmentMeta, SegmentState
from common.storage.layout import ALL_PARTITIONS
from common.tasks import BackgroundTasks
from common.ttl import expire_before
from coordinator.catalog import Catalog, CollectionMeta, CollectionState, IndexMeta
from coordinator.data.datacoord import DataCoordinator
from coordinator.data.jobs import CompactionRequest, JobKind, JobRecord, JobState
from coordinator.data.policy import (
    L0Choice,
    MixChoice,
    PolicyOptions,
    folds_in_mix,
    l0_plan,
    mix_plans,
    with_l0_folded,
)
from coordinator.idalloc import IDAllocator
from coordinator.tso import TimestampOracle
from jobs.plans import CompactionSpec, IndexRef, JobResult, L0Plan, MixPlan, OutputSegment, SegmentRef

_REQUEST = "datacoord/compaction/"
FINISHED_RETENTION_SECONDS = 24 * 3600.0
LOAD_POLL_SECONDS = 1.0  # how often a compaction that yields to loads looks again


class JobRunner(Protocol):
    async def run(
        self, spec_json: str, *, name: str, on_progress: Callable[[float], None] | None = None
    ) -> JobResult: ...


def row_bytes(schema: CollectionSchema) -> int:
    """Estimated bytes of one row in memory (for target sizes): vectors exact, strings 64 bytes."""
    size = 8  # _ts
    for f in schema.fields:
        if f.dtype == DataType.FLOAT_VECTOR:
            size += 4 * f.dim
        elif f.dtype == DataType.BINARY_VECTOR or f.dtype.is_narrow_vector:
            size += f.code_size
        elif f.dtype in (DataType.VARCHAR, DataType.JSON, DataType.ARRAY, DataType.SPARSE_FLOAT_VECTOR) or f.is_dynamic:
            size += 64
        elif f.dtype in (DataType.BOOL, DataType.INT8):
            size += 1
        elif f.dtype == DataType.INT16:
            size += 2
        elif f.dtype in (DataType.INT32, DataType.FLOAT):
            size += 4
        else:
            size += 8
    return size


def target_rows(schema: CollectionSchema, target_bytes: int) -> int:
    return max(1, target_bytes // row_bytes(schema))


def index_refs(indexes: Sequence[IndexMeta]) -> tuple[IndexRef, ...]:
    return tuple(
        IndexRef(field_name=i.field_name, index_id=i.index_id, params=dict(i.params))
        for i in indexes
    )


def _ref(seg: SegmentMeta) -> SegmentRef:
    return SegmentRef(segment_id=seg.segment_id, partition_id=seg.partition_id, manifest=seg.manifest, rows=seg.rows)


class CompactionManager:
    def __init__(
        self,
        store: MetaStore,
        data: DataCoordinator,
        catalog: Catalog,
        ids: IDAllocator,
        tso: TimestampOracle,
        runner: JobRunner,
        *,
        storage_uri: str,
        config: JobsConfig,
        slot: asyncio.Semaphore,
        import_floor: Callable[[int], int | None],
        loading: Callable[[], bool] = lambda: False,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self._data = data
        self._catalog = catalog
        self._ids = ids
        self._tso = tso
        self._runner = runner
        self._storage_uri = storage_uri
        self._config = config
        self._slot = slot
        self._import_floor = import_floor
        self._loading = loading
        self._clock = clock
        self._requests: dict[int, CompactionRequest] = {}
        self._busy: set[str] = set()  # vchannels with a plan being planned or run
        self._log = structlog.get_logger().bind(component="compaction")
        self._tasks = BackgroundTasks("compaction")

    # -- lifetime ------------------------------------------------------------------------------

    async def start(self) -> None:
        for kv in await self._store.scan(_REQUEST):
            req = CompactionRequest.from_json(kv.value)
            self._requests[req.request_id] = req
        # A plan that was running when the last coordinator stopped never commits: its outputs go.
        for job in self._data.jobs():
            if job.kind in (JobKind.MIX, JobKind.L0) and not job.state.finished:
                await self._data.fail_job(job.moved(JobState.FAILED, now=self._clock(), error="coordinator restarted"))
                self._log.info("unfinished plan failed", job=job.job_id, kind=job.kind.value)
            elif job.state == JobState.COMMITTED and not job.revealed:
                await self._data.reveal_job(job.job_id)
        for req in self._requests.values():
            if req.phase != "DONE":
                self._tasks.start(self._run_request(req), name=f"compaction-request-{req.request_id}")
        if self._config.compaction_interval_seconds > 0:
            self._tasks.start(self._loop(), name="compaction-auto")

    async def stop(self) -> None:
        await self._tasks.stop()

    # -- requests (pymilvus compact / get_compaction_state) -------------------------------------

    async def request(self, meta: CollectionMeta, *, l0_only: bool = False, target_bytes: int = 0) -> CompactionRequest:
        """Start compacting ``meta`` (returns at once); ``state`` follows it."""
        if target_bytes < 0:
            raise InvalidArgument(f"target size must be positive, got {target_bytes}")
        req = CompactionRequest(
            request_id=await self._ids.allocate(1),
            collection_id=meta.collection_id,
            created_at=self._clock(),
            l0_only=l0_only,
            target_bytes=target_bytes,
        )
        await self._save_request(req)
        self._tasks.start(self._run_request(req), name=f"compaction-request-{req.request_id}")
        return req

    def state(self, request_id: int) -> tuple[CompactionRequest, list[JobRecord]]:
        """The request and its plans so far. Raises ``InvalidArgument`` for an unknown id."""
        req = self._requests.get(request_id)
        if req is None:
            raise InvalidArgument(f"compaction {request_id} not found")
        jobs = [j for j in (self._data.job(i) for i in req.job_ids) if j is not None]
        return req, jobs

    async def _save_request(self, req: CompactionRequest) -> None:
        await self._store.put(f"{_REQUEST}{req.request_id}", req.to_json())
        self._requests[req.request_id] = req

    async def _run_request(self, req: CompactionRequest) -> None:
        try:
            meta = await self._catalog.get_collection(req.collection_id)
            while meta is not None and meta.state == CollectionState.CREATED and req.phase != "DONE":
                first = req.phase == "L0"
                jobs = await self._compact(
                    meta, l0=first, mix=not first, manual=True, request_id=req.request_id,
                    target_bytes=req.target_bytes, l0_only=req.l0_only,
                )
                nxt = "MIX" if first and not req.l0_only else "DONE"
                req = replace(req, phase=nxt, job_ids=(*req.job_ids, *(j.job_id for j in jobs)))
                await self._save_request(req)
            if req.phase != "DONE":
                await self._save_request(replace(req, phase="DONE"))
        except asyncio.CancelledError:
            raise
        except Exception:  # task boundary: the request ends; its plans say what happened
            self._log.exception("compaction request failed", request=req.request_id)
            with contextlib.suppress(Exception):
                await self._save_request(replace(req, phase="DONE"))

    # -- automatic rounds ------------------------------------------------------------------------

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self._config.compaction_interval_seconds)
            try:
                await self.round()
            except asyncio.CancelledError:
                raise
            except Exception as err:  # task boundary: next round
                self._log.warning("compaction round failed", error=str(err))
            await self._forget_old()

    async def round(self) -> list[JobRecord]:
        """One automatic round over every collection: L0 plans, and mix plans where the policy wants them."""
        done: list[JobRecord] = []
        for meta in await self._catalog.list_collections():
            if meta.state != CollectionState.CREATED:
                continue
            done += await self._compact(meta, l0=True, mix=True, manual=False, request_id=0)
        return done

    async def _forget_old(self) -> None:
        now = self._clock()
        old = [
            j.job_id
            for j in self._data.jobs()
            if j.kind in (JobKind.MIX, JobKind.L0)
            and j.state.finished
            and (j.revealed or j.state == JobState.FAILED)
            and now - j.finished_at > FINISHED_RETENTION_SECONDS
            and not any(s.job_id == j.job_id for s in self._data.segments(collection_id=j.collection_id))
        ]
        if old:
            await self._data.forget_jobs(old)

    # -- planning and running ----------------------------------------------------------------------

    def _options(self, schema: CollectionSchema, target_bytes: int) -> PolicyOptions:
        c = self._config
        return PolicyOptions(
            target_rows=target_rows(schema, target_bytes or c.compaction_target_bytes),
            min_segments=c.compaction_min_segments,
            delete_ratio=c.compaction_delete_ratio,
            l0_segments=c.l0_trigger_segments,
            min_age_seconds=c.compaction_min_age_seconds,
        )

    async def _compact(
        self,
        meta: CollectionMeta,
        *,
        l0: bool,
        mix: bool,
        manual: bool,
        request_id: int,
        target_bytes: int = 0,
        l0_only: bool = False,
    ) -> list[JobRecord]:
        """Plan and run what the policy wants for ``meta`` now; returns the plans' final records."""
        options = self._options(meta.schema, target_bytes)
        now_ts = await self._tso.allocate()
        expiry = expire_before(meta.properties, now_ts)
        floor = self._import_floor(meta.collection_id)
        choices: list[L0Choice | MixChoice] = []
        taken: list[str] = []
        try:
            for vchannel in meta.vchannels:
                if vchannel in self._busy:
                    continue
                live = [s for s in self._data.segments(vchannel=vchannel) if s.is_live]
                flushed = self._data.flushed_segments(vchannel=vchannel)
                mine: list[L0Choice | MixChoice] = []
                # A manual request folds the deletes in its mix plan when one plan rewrites the whole vchannel.
                fold_later = manual and not l0_only and folds_in_mix(flushed, options)
                plan0 = None
                if l0 and not fold_later:
                    plan0 = l0_plan(live, flushed, options, import_floor=floor, manual=manual, now=self._clock())
                if plan0 is not None and plan0.targets:
                    mine.append(plan0)
                elif mix:
                    unfolded = any(s.level == SegmentLevel.L0 for s in flushed)
                    plans = mix_plans(
                        flushed, options, now=self._clock(), expire_before=expiry, manual=manual,
                        unfolded_deletes=unfolded,
                    )
                    mine.extend(with_l0_folded(plans, live, flushed, import_floor=floor) if manual else plans)
                if mine:
                    self._busy.add(vchannel)
                    taken.append(vchannel)
                    choices.extend(mine)
            if not choices:
                return []
            return await self._run_plans(meta, choices, options=options, expiry=expiry, request_id=request_id)
        finally:
            self._busy.difference_update(taken)

    async def _run_plans(
        self,
        meta: CollectionMeta,
        choices: Sequence[L0Choice | MixChoice],
        *,
        options: PolicyOptions,
        expiry: int,
        request_id: int,
    ) -> list[JobRecord]:
        now = self._clock()
        records: list[JobRecord] = []
        mix_plans_: list[MixPlan] = []
        l0_plans_: list[L0Plan] = []
        planned: dict[int, L0Choice | MixChoice] = {}
        for choice in choices:
            job_id = await self._ids.allocate(1)
            if isinstance(choice, MixChoice):
                rows = sum(s.rows for s in choice.inputs)
                count = max(1, math.ceil(rows / options.target_rows))
                base = await self._ids.allocate(count)
                # The deletes of its partition and of every partition (as in Milvus, a delete naming a
                # partition removes rows there only).
                l0s = [
                    s for s in self._data.flushed_segments(vchannel=choice.vchannel)
                    if s.level == SegmentLevel.L0 and s.partition_id in (choice.partition_id, ALL_PARTITIONS)
                ]
                mix_plans_.append(
                    MixPlan(
                        plan_id=job_id, vchannel=choice.vchannel, partition_id=choice.partition_id,
                        inputs=tuple(_ref(s) for s in choice.inputs), deletes=tuple(_ref(s) for s in l0s),
                        expire_before=expiry, target_rows=options.target_rows, segment_id_base=base,
                        segment_id_count=count,
                    )
                )
                rec = JobRecord(
                    job_id=job_id, kind=JobKind.MIX, collection_id=meta.collection_id, created_at=now,
                    request_id=request_id, vchannel=choice.vchannel, partition_id=choice.partition_id,
                    inputs=tuple(s.segment_id for s in choice.inputs), segment_id_base=base, segment_id_count=count,
                    l0=tuple(s.segment_id for s in choice.drop_l0),
                )
            else:
                log_base = await self._ids.allocate(len(choice.targets))
                l0_plans_.append(
                    L0Plan(
                        plan_id=job_id, vchannel=choice.vchannel, l0=tuple(_ref(s) for s in choice.l0),
                        targets=tuple(_ref(s) for s in choice.targets), log_id_base=log_base,
                    )
                )
                rec = JobRecord(
                    job_id=job_id, kind=JobKind.L0, collection_id=meta.collection_id, created_at=now,
                    request_id=request_id, vchannel=choice.vchannel,
                    inputs=tuple(s.segment_id for s in choice.l0), targets=tuple(s.segment_id for s in choice.targets),
                )
            await self._data.save_job(rec)
            records.append(rec)
            planned[job_id] = choice
        spec = CompactionSpec(
            job_id=records[0].job_id,
            storage_uri=self._storage_uri,
            collection_id=meta.collection_id,
            schema_json=meta.latest_schema.to_json(),
            indexes=index_refs(await self._catalog.list_indexes(meta.collection_id)),
            mix=tuple(mix_plans_),
            l0=tuple(l0_plans_),
        )
        await self._yield_to_loads(meta.collection_id)
        async with self._slot:
            running = []
            for rec in records:
                moved = rec.moved(JobState.RUNNING, now=self._clock())
                await self._data.save_job(moved)
                running.append(moved)
            self._log.info(
                "compaction started", collection_id=meta.collection_id, request=request_id,
                plans=[(r.job_id, r.kind.value, r.vchannel, list(r.inputs)) for r in running],
            )
            try:
                result = await self._runner.run(spec.to_json(), name=f"compaction-{spec.job_id}")
            except asyncio.CancelledError:
                raise  # stopping: the plans fail when the next coordinator starts
            except Exception as err:  # the runner itself broke (no Spark, no disk): the plans fail
                self._log.exception("spark runner failed", job=spec.job_id)
                result = JobResult(job_id=spec.job_id, error=f"cannot run the job: {type(err).__name__}: {err}")
        failpoint("compaction.after_job")
        final = []
        for rec in running:
            final.append(await self._commit(rec, planned[rec.job_id], result))
        return final

    async def _yield_to_loads(self, collection_id: int) -> None:
        """Wait while collections are loading (``jobs.compaction_yield_seconds`` at most): a restart's
        loads read and index every segment, and a Spark JVM beside them slows them down."""
        limit = self._config.compaction_yield_seconds
        if limit <= 0 or not self._loading():
            return
        self._log.info("compaction waits for loads to finish", collection_id=collection_id, at_most=limit)
        deadline = time.monotonic() + limit
        while self._loading() and time.monotonic() < deadline:
            await asyncio.sleep(LOAD_POLL_SECONDS)

    async def _commit(self, rec: JobRecord, choice: L0Choice | MixChoice, result: JobResult) -> JobRecord:
        if result.error:
            return await self._fail(rec, result.error)
        try:
            if isinstance(choice, MixChoice):
                outputs = [o for o in result.outputs if o.plan_id == rec.job_id]
                await self._data.add_job_segments(rec.job_id, [output_meta(rec, o) for o in outputs])
                failpoint("compaction.after_outputs")
                done = rec.moved(
                    JobState.COMMITTED, now=self._clock(), outputs=tuple(o.segment_id for o in outputs),
                    rows=sum(o.rows for o in outputs),
                )
                drop = {s.segment_id: s.manifest for s in (*choice.inputs, *choice.drop_l0)}
                removed = sum(s.rows for s in choice.inputs) - done.rows
                await self._data.commit_job(done, drop=drop, row_delta=-removed)
            else:
                planned = {s.segment_id: s.manifest for s in choice.targets}
                updates = [
                    (t.segment_id, planned[t.segment_id], t.manifest, t.deleted_rows)
                    for t in result.targets
                    if t.plan_id == rec.job_id
                ]
                await self._data.update_targets(rec.job_id, updates)
                failpoint("compaction.after_outputs")
                done = rec.moved(JobState.COMMITTED, now=self._clock(), rows=sum(u[3] for u in updates))
                await self._data.commit_job(done, drop={s.segment_id: s.manifest for s in choice.l0})
        except StrataError as err:  # JobConflict, or the collection is gone
            return await self._fail(rec, err.message)
        failpoint("compaction.after_commit")
        await self._data.reveal_job(rec.job_id)
        return self._data.job(rec.job_id) or done

    async def _fail(self, rec: JobRecord, error: str) -> JobRecord:
        failed = rec.moved(JobState.FAILED, now=self._clock(), error=error)
        await self._data.fail_job(failed)
        self._log.warning("compaction plan failed", job=rec.job_id, kind=rec.kind.value, error=error)
        return failed


def output_meta(rec: JobRecord, out: OutputSegment) -> SegmentMeta:
    """A job's output as segment metadata; positions carry its rows' smallest and largest ``_ts``."""
    return SegmentMeta(
        segment_id=out.segment_id,
        collection_id=rec.collection_id,
        partition_id=out.partition_id,
        vchannel=out.vchannel,
        state=SegmentState.FLUSHED,
        level=SegmentLevel.L1,
        rows=out.rows,
        manifest=out.manifest,
        start_position=Position(b"", out.min_ts),
        position=Position(b"", out.max_ts),
        job_id=rec.job_id,
    )


__all__ = ["CompactionManager", "JobRunner", "output_meta", "row_bytes", "target_rows"]
