"""The coordinator's RPCs for offline jobs: compaction requests and bulk imports (mixed into ``CoordinatorService``)."""

from __future__ import annotations

import grpc

from common.errors import NotSupported
from common.grpcutil import ok_status, rpc_method
from common.segment_pb import segment_to_pb
from coordinator.catalog import CollectionMeta
from coordinator.data.compaction import CompactionManager
from coordinator.data.datacoord import DataCoordinator
from coordinator.data.importer import ImportManager
from coordinator.data.jobs import JobKind, JobRecord, JobState
from protos import coordinator_pb2 as pb
from protos import jobs_pb2

NO_STORAGE = "offline jobs need object storage: start the coordinator with --storage"


def import_job_pb(job: JobRecord, progress: float) -> jobs_pb2.ImportJob:
    return jobs_pb2.ImportJob(
        job_id=job.job_id,
        collection_id=job.collection_id,
        state=job.state.value,
        rows=job.rows,
        progress=progress,
        reason=job.error,
        files=list(job.files),
        segment_ids=list(job.outputs),
        created=int(job.created_at),
        partition_name=job.partition_name,
    )


class JobRPCs:
    """``ManualCompaction``, ``GetCompactionState``, ``Import``, ``GetImportState``, ``ListImports``, ``ListSegments``."""

    _compaction: CompactionManager | None
    _imports: ImportManager | None
    _data: DataCoordinator

    async def _meta(self, ref: pb.CollectionRef) -> CollectionMeta:
        raise NotImplementedError

    def _compactions(self) -> CompactionManager:
        if self._compaction is None:
            raise NotSupported(NO_STORAGE)
        return self._compaction

    def _importer(self) -> ImportManager:
        if self._imports is None:
            raise NotSupported(NO_STORAGE)
        return self._imports

    @rpc_method(jobs_pb2.ManualCompactionResponse)
    async def ManualCompaction(
        self, request: jobs_pb2.ManualCompactionRequest, context: grpc.aio.ServicerContext
    ) -> jobs_pb2.ManualCompactionResponse:
        meta = await self._meta(pb.CollectionRef(collection_id=request.collection_id))
        req = await self._compactions().request(meta, l0_only=request.l0_only, target_bytes=request.target_bytes)
        return jobs_pb2.ManualCompactionResponse(status=ok_status(), compaction_id=req.request_id)

    @rpc_method(jobs_pb2.CompactionStateResponse)
    async def GetCompactionState(
        self, request: jobs_pb2.CompactionStateRequest, context: grpc.aio.ServicerContext
    ) -> jobs_pb2.CompactionStateResponse:
        req, jobs = self._compactions().state(request.compaction_id)
        return jobs_pb2.CompactionStateResponse(
            status=ok_status(),
            completed=req.phase == "DONE",
            executing=sum(not j.state.finished for j in jobs),
            completed_plans=sum(j.state == JobState.COMMITTED for j in jobs),
            failed=sum(j.state == JobState.FAILED for j in jobs),
            merges=[
                jobs_pb2.CompactionMerge(sources=list(j.inputs), targets=list(j.outputs or j.targets))
                for j in jobs
                if j.kind in (JobKind.MIX, JobKind.L0)
            ],
        )

    @rpc_method(jobs_pb2.ImportResponse)
    async def Import(self, request: jobs_pb2.ImportRequest, context: grpc.aio.ServicerContext) -> jobs_pb2.ImportResponse:
        meta = await self._meta(pb.CollectionRef(collection_id=request.collection_id))
        job = await self._importer().submit(
            meta, partition_name=request.partition_name, files=list(request.files), options=dict(request.options)
        )
        return jobs_pb2.ImportResponse(status=ok_status(), job_id=job.job_id)

    @rpc_method(jobs_pb2.ImportStateResponse)
    async def GetImportState(
        self, request: jobs_pb2.ImportStateRequest, context: grpc.aio.ServicerContext
    ) -> jobs_pb2.ImportStateResponse:
        importer = self._importer()
        job = importer.job(request.job_id)
        return jobs_pb2.ImportStateResponse(status=ok_status(), job=import_job_pb(job, importer.progress(job)))

    @rpc_method(jobs_pb2.ListImportsResponse)
    async def ListImports(
        self, request: jobs_pb2.ListImportsRequest, context: grpc.aio.ServicerContext
    ) -> jobs_pb2.ListImportsResponse:
        importer = self._importer()
        jobs = importer.jobs(request.collection_id or None)
        jobs.sort(key=lambda j: j.job_id, reverse=True)
        if request.limit > 0:
            jobs = jobs[: request.limit]
        return jobs_pb2.ListImportsResponse(status=ok_status(), jobs=[import_job_pb(j, importer.progress(j)) for j in jobs])

    @rpc_method(jobs_pb2.ListSegmentsResponse)
    async def ListSegments(
        self, request: jobs_pb2.ListSegmentsRequest, context: grpc.aio.ServicerContext
    ) -> jobs_pb2.ListSegmentsResponse:
        meta = await self._meta(pb.CollectionRef(collection_id=request.collection_id))
        segments = self._data.flushed_segments(collection_id=meta.collection_id)
        return jobs_pb2.ListSegmentsResponse(status=ok_status(), segments=[segment_to_pb(s) for s in segments])

    @rpc_method(jobs_pb2.RowDeltaResponse)
    async def GetRowDelta(
        self, request: jobs_pb2.RowDeltaRequest, context: grpc.aio.ServicerContext
    ) -> jobs_pb2.RowDeltaResponse:
        meta = await self._meta(pb.CollectionRef(collection_id=request.collection_id))
        return jobs_pb2.RowDeltaResponse(status=ok_status(), rows=self._data.row_delta(meta.collection_id))
