"""Bulk import jobs: files in, hidden segments written on Spark, all of them visible in one etcd write.

``submit`` checks the request (collection, partition, files given) and records
the job PENDING; a loop runs jobs one at a time in the coordinator's job slot
(shared with compaction):

1. allocate the import timestamp (every row's ``_ts``: the import comes after
   every write acknowledged before it) and, from the files' footers and
   headers (``jobs/sources.py``, in a thread), the auto ids and
   segment ids; all three are saved in the RUNNING record, so a job run again
   after a coordinator restart writes the same rows to the same files;
2. run the Spark job (``jobs/bulk_import.py``): validate, route,
   write segments with stats and indexes;
3. record the segments hidden (``add_job_segments``), then ``commit_job``: one
   etcd write makes every one of them visible (failpoints
   ``import.after_job`` and ``import.after_outputs`` sit before each);
4. clear their job id (``reveal_job``).

A file that does not fit the schema fails the job with a message naming the
file and the field; none of its rows, nor any other file's, becomes visible.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import Callable, Sequence

import structlog

from common.config import JobsConfig
from common.errors import InvalidArgument, PartitionNotFound, StrataError
from common.failpoints import failpoint
from common.tasks import BackgroundTasks
from common.tsoutil import TIMESTAMP_RANGE_MAX_AGE_S
from coordinator.catalog import Catalog, CollectionMeta, CollectionState
from coordinator.data.compaction import JobRunner, index_refs, output_meta, row_bytes, target_rows
from coordinator.data.datacoord import DataCoordinator
from coordinator.data.jobs import JobKind, JobRecord, JobState
from coordinator.idalloc import IDAllocator
from coordinator.tso import TimestampOracle
from jobs.plans import ImportSpec
from jobs.sources import describe_files, file_format

MAX_FILES = 1024
FINISHED_RETENTION_SECONDS = 7 * 24 * 3600.0


def key_partitions(meta: CollectionMeta) -> tuple[int, ...]:
    """A partition-key collection's partitions in hash order (``_default_0``, ``_default_1``, ...)."""
    if not any(f.is_partition_key for f in meta.schema.fields):
        return ()
    parts = sorted(meta.all_partitions(), key=lambda p: int(p.name.rsplit("_", 1)[1]))
    return tuple(p.partition_id for p in parts)


class ImportManager:
    def __init__(
        self,
        data: DataCoordinator,
        catalog: Catalog,
        ids: IDAllocator,
        tso: TimestampOracle,
        runner: JobRunner,
        *,
        storage_uri: str,
        config: JobsConfig,
        slot: asyncio.Semaphore,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._data = data
        self._catalog = catalog
        self._ids = ids
        self._tso = tso
        self._runner = runner
        self._storage_uri = storage_uri
        self._config = config
        self._slot = slot
        self._clock = clock
        self._progress: dict[int, float] = {}
        self._wake = asyncio.Event()
        self._log = structlog.get_logger().bind(component="import")
        self._tasks = BackgroundTasks("import")

    async def start(self) -> None:
        for job in self._data.jobs():
            if job.kind == JobKind.IMPORT and job.state == JobState.COMMITTED and not job.revealed:
                await self._data.reveal_job(job.job_id)
        self._tasks.start(self._loop(), name="import-jobs")
        self._wake.set()  # jobs left PENDING or RUNNING by the last coordinator run again

    async def stop(self) -> None:
        await self._tasks.stop()

    def floor(self, collection_id: int) -> int | None:
        """The smallest timestamp of an unfinished import of the collection (None: none, or not chosen yet).

        An import not started yet will take a fresh timestamp, larger than any delete so far.
        """
        stamps = [
            j.import_ts
            for j in self._data.jobs(collection_id=collection_id)
            if j.kind == JobKind.IMPORT and not j.state.finished and j.import_ts
        ]
        return min(stamps) if stamps else None

    # -- requests -------------------------------------------------------------------------------------

    async def submit(
        self, meta: CollectionMeta, *, partition_name: str, files: Sequence[str], options: dict[str, str]
    ) -> JobRecord:
        """Record an import of ``files`` into ``meta`` (returns at once; ``job`` follows it).

        Raises:
            InvalidArgument: no files, too many, a format that is not supported, a partition name
                for a partition-key collection.
            PartitionNotFound: the partition does not exist.
        """
        if not files:
            raise InvalidArgument("import needs at least one file")
        if len(files) > MAX_FILES:
            raise InvalidArgument(f"an import takes at most {MAX_FILES} files, got {len(files)}")
        for f in files:
            if not f:
                raise InvalidArgument("import file names must not be empty")
            file_format(f)
        if partition_name:
            if key_partitions(meta):
                raise InvalidArgument("not support manually specifying the partition names if partition key mode is used")
            if meta.partition(partition_name) is None:
                raise PartitionNotFound(f"partition not found[partition={partition_name}]")
        job = JobRecord(
            job_id=await self._ids.allocate(1),
            kind=JobKind.IMPORT,
            collection_id=meta.collection_id,
            created_at=self._clock(),
            files=tuple(files),
            partition_name=partition_name,
            options=dict(options),
        )
        await self._data.save_job(job)
        self._log.info("import submitted", job=job.job_id, collection_id=meta.collection_id, files=len(files))
        self._wake.set()
        return job

    def job(self, job_id: int) -> JobRecord:
        job = self._data.job(job_id)
        if job is None or job.kind != JobKind.IMPORT:
            raise InvalidArgument(f"import job {job_id} not found")
        return job

    def progress(self, job: JobRecord) -> float:
        if job.state == JobState.COMMITTED:
            return 1.0
        return self._progress.get(job.job_id, 0.0)

    def jobs(self, collection_id: int | None = None) -> list[JobRecord]:
        return [j for j in self._data.jobs(collection_id=collection_id) if j.kind == JobKind.IMPORT]

    # -- running --------------------------------------------------------------------------------------

    async def _loop(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            for job in [j for j in self.jobs() if not j.state.finished]:
                try:
                    await self._run(job)
                except asyncio.CancelledError:
                    raise
                except Exception as err:  # task boundary: the job fails, the loop goes on
                    self._log.exception("import failed unexpectedly", job=job.job_id)
                    current = self._data.job(job.job_id)
                    if current is not None and not current.state.finished:
                        with contextlib.suppress(Exception):
                            await self._fail(current, f"internal error: {type(err).__name__}: {err}")
            await self._forget_old()

    async def _forget_old(self) -> None:
        now = self._clock()
        old = [
            j.job_id
            for j in self.jobs()
            if j.state.finished
            and (j.revealed or j.state == JobState.FAILED)
            and now - j.finished_at > FINISHED_RETENTION_SECONDS
            and not any(s.job_id == j.job_id for s in self._data.segments(collection_id=j.collection_id))
        ]
        if old:
            await self._data.forget_jobs(old)

    async def _run(self, job: JobRecord) -> None:
        meta = await self._catalog.get_collection(job.collection_id)
        if meta is None or meta.state != CollectionState.CREATED:
            await self._fail(job, f"collection {job.collection_id} was dropped")
            return
        try:
            described = await asyncio.to_thread(describe_files, job.files, meta.latest_schema, self._storage_uri)
        except StrataError as err:
            await self._fail(job, err.message)
            return
        partition_id = meta.default_partition_id
        if job.partition_name:
            part = meta.partition(job.partition_name)
            if part is None:
                await self._fail(job, f"partition not found[partition={job.partition_name}]")
                return
            partition_id = part.partition_id
        keys = key_partitions(meta)
        total = sum(f.rows for f in described)  # exact, or for JSON an upper bound: what auto ids need
        # JSON counts bound rows by bytes / 3; a row of this schema takes about twice its size as JSON text.
        estimate = sum(f.rows if f.format != "json" else max(1, f.rows * 3 // (2 * row_bytes(meta.schema)))
                       for f in described)
        shards = len(meta.vchannels)
        per_group = estimate / (shards * max(1, len(keys)))
        buckets = max(1, math.ceil(per_group / target_rows(meta.schema, self._config.compaction_target_bytes)))
        count = shards * max(1, len(keys)) * buckets
        if job.state == JobState.PENDING:
            pk = meta.schema.primary_field
            job = job.moved(
                JobState.RUNNING,
                now=self._clock(),
                import_ts=await self._tso.allocate(),
                auto_id_base=await self._ids.allocate(max(1, total)) if pk.auto_id else 0,
                segment_id_base=await self._ids.allocate(count),
                segment_id_count=count,
            )
            await self._data.save_job(job)
        elif job.segment_id_count < count:
            await self._fail(job, "the import files changed after the job started")
            return
        spec = ImportSpec(
            job_id=job.job_id,
            storage_uri=self._storage_uri,
            collection_id=meta.collection_id,
            schema_json=meta.latest_schema.to_json(),
            vchannels=meta.vchannels,
            partition_id=partition_id,
            key_partitions=keys,
            files=tuple(described),
            import_ts=job.import_ts,
            auto_id_base=job.auto_id_base,
            buckets=buckets,
            segment_id_base=job.segment_id_base,
            segment_id_count=job.segment_id_count,
            indexes=index_refs(await self._catalog.list_indexes(meta.collection_id)),
        )

        def progress(fraction: float) -> None:
            self._progress[job.job_id] = fraction

        self._log.info("import started", job=job.job_id, rows=total, segments=count, import_ts=job.import_ts)
        async with self._slot:
            result = await self._runner.run(spec.to_json(), name=f"import-{job.job_id}", on_progress=progress)
        failpoint("import.after_job")
        if result.error:
            await self._fail(job, result.error)
            return
        # The imported rows carry import_ts; a delete sent once they are visible must be stamped above it.
        # Streaming nodes stamp from TSO ranges at most this old, so from now on every range is younger.
        await asyncio.sleep(TIMESTAMP_RANGE_MAX_AGE_S)
        try:
            await self._data.add_job_segments(job.job_id, [output_meta(job, o) for o in result.outputs])
            failpoint("import.after_outputs")
            done = job.moved(
                JobState.COMMITTED,
                now=self._clock(),
                rows=result.rows,
                outputs=tuple(o.segment_id for o in result.outputs),
            )
            await self._data.commit_job(done, row_delta=result.rows)
        except StrataError as err:  # JobConflict, or the collection is gone
            await self._fail(job, err.message)
            return
        self._progress.pop(job.job_id, None)
        await self._data.reveal_job(job.job_id)
        self._log.info("import committed", job=job.job_id, rows=result.rows, segments=len(result.outputs),
                       seconds=result.stats.get("seconds"))

    async def _fail(self, job: JobRecord, reason: str) -> None:
        failed = job.moved(JobState.FAILED, now=self._clock(), error=reason)
        await self._data.fail_job(failed)
        self._progress.pop(job.job_id, None)
        self._log.warning("import failed", job=job.job_id, reason=reason)
