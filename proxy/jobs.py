"""Compaction and bulk import RPCs of the proxy (mixed into ``MilvusProxy``).

pymilvus' ``compact()`` / ``get_compaction_state()`` / ``get_compaction_plans()``
and ``utility.do_bulk_insert()`` / ``get_bulk_insert_state()`` /
``list_bulk_insert_tasks()`` land here and go to the coordinator, which runs
the jobs on Spark (``jobs``); ``list_persistent_segments()`` shows the
FLUSHED segments readers load (a compaction's effect). Import states map to Milvus' as
PENDING -> ImportPending, RUNNING -> ImportStarted, COMMITTED ->
ImportCompleted, FAILED -> ImportFailed; the reason a job failed (naming the
file and field for a file that does not fit the schema) is in the
``failed_reason`` info.
"""

from __future__ import annotations

import grpc
from pymilvus.grpc_gen import common_pb2, milvus_pb2

from common.coordapi.api import CompactionState, ImportJob
from common.errors import InvalidArgument, NotSupported, StrataError
from proxy.metacache import CollectionEntry
from proxy.parts import ProxyParts
from proxy.rpc import milvus_rpc
from proxy.status import success

MB = 1 << 20

_IMPORT_STATES = {
    "PENDING": common_pb2.ImportPending,
    "RUNNING": common_pb2.ImportStarted,
    "COMMITTED": common_pb2.ImportCompleted,
    "FAILED": common_pb2.ImportFailed,
}


def import_state(job: ImportJob, collection_name: str) -> milvus_pb2.GetImportStateResponse:
    infos = {
        "files": ",".join(job.files),
        "collection": collection_name,
        "partition": job.partition_name,
        "progress_percent": str(int(round(job.progress * 100))),
        "failed_reason": job.reason,
    }
    return milvus_pb2.GetImportStateResponse(
        status=success(),
        state=_IMPORT_STATES.get(job.state, common_pb2.ImportPending),
        row_count=job.rows,
        infos=[common_pb2.KeyValuePair(key=k, value=v) for k, v in infos.items()],
        id=job.job_id,
        collection_id=job.collection_id,
        segment_ids=list(job.segment_ids),
        create_ts=job.created,
    )


class JobRPCs(ProxyParts):
    """The compaction and import RPCs of ``MilvusProxy`` (what they use of it: ``ProxyParts``)."""

    async def _job_rows(self, coll: CollectionEntry) -> int:
        """Rows imports added and compactions removed (``get_collection_stats`` adds it to the WAL's count)."""
        return await self._coord.row_delta(coll.collection_id)

    async def _collection_for(self, name: str, collection_id: int) -> CollectionEntry:
        if name:
            return await self._coll(name)
        if not collection_id:
            raise InvalidArgument("collection name should not be empty")
        return CollectionEntry.from_info(await self._coord.describe_collection(collection_id=collection_id))

    @milvus_rpc(milvus_pb2.ManualCompactionResponse)
    async def ManualCompaction(
        self, request: milvus_pb2.ManualCompactionRequest, context: grpc.aio.ServicerContext
    ) -> milvus_pb2.ManualCompactionResponse:
        if request.majorCompaction:
            raise NotSupported("clustering compaction is not supported by Strata")
        if list(request.segment_ids):
            raise NotSupported("compacting chosen segments is not supported by Strata: compact the collection")
        if request.target_size < 0:
            raise InvalidArgument(f"target_size must be positive, got {request.target_size}")
        coll = await self._collection_for(request.collection_name, request.collectionID)
        compaction_id = await self._coord.manual_compaction(
            coll.collection_id, l0_only=request.l0Compaction, target_bytes=request.target_size * MB
        )
        return milvus_pb2.ManualCompactionResponse(status=success(), compactionID=compaction_id)

    async def _compaction_state(self, compaction_id: int) -> CompactionState:
        return await self._coord.compaction_state(compaction_id)

    @milvus_rpc(milvus_pb2.GetCompactionStateResponse)
    async def GetCompactionState(
        self, request: milvus_pb2.GetCompactionStateRequest, context: grpc.aio.ServicerContext
    ) -> milvus_pb2.GetCompactionStateResponse:
        s = await self._compaction_state(request.compactionID)
        return milvus_pb2.GetCompactionStateResponse(
            status=success(),
            state=common_pb2.Completed if s.completed else common_pb2.Executing,
            executingPlanNo=s.executing,
            completedPlanNo=s.completed_plans,
            failedPlanNo=s.failed,
        )

    @milvus_rpc(milvus_pb2.GetCompactionPlansResponse)
    async def GetCompactionStateWithPlans(
        self, request: milvus_pb2.GetCompactionPlansRequest, context: grpc.aio.ServicerContext
    ) -> milvus_pb2.GetCompactionPlansResponse:
        s = await self._compaction_state(request.compactionID)
        merges = []
        for m in s.merges:
            # Milvus reports one target per merge; a plan with several outputs is one merge per output.
            for target in list(m.targets) or [0]:
                merges.append(milvus_pb2.CompactionMergeInfo(sources=list(m.sources), target=target))
        return milvus_pb2.GetCompactionPlansResponse(
            status=success(), state=common_pb2.Completed if s.completed else common_pb2.Executing, mergeInfos=merges
        )

    @milvus_rpc(milvus_pb2.ImportResponse)
    async def Import(self, request: milvus_pb2.ImportRequest, context: grpc.aio.ServicerContext) -> milvus_pb2.ImportResponse:
        coll = await self._coll(request.collection_name)
        options = {kv.key: kv.value for kv in request.options}
        if options.get("backup", "").lower() in ("true", "1"):
            raise NotSupported("importing Milvus backups is not supported by Strata")
        job_id = await self._coord.start_import(
            coll.collection_id, partition_name=request.partition_name, files=list(request.files), options=options
        )
        return milvus_pb2.ImportResponse(status=success(), tasks=[job_id])

    @milvus_rpc(milvus_pb2.GetImportStateResponse)
    async def GetImportState(
        self, request: milvus_pb2.GetImportStateRequest, context: grpc.aio.ServicerContext
    ) -> milvus_pb2.GetImportStateResponse:
        job = await self._coord.import_job(request.task)
        return import_state(job, await self._name_of(job.collection_id))

    @milvus_rpc(milvus_pb2.ListImportTasksResponse)
    async def ListImportTasks(
        self, request: milvus_pb2.ListImportTasksRequest, context: grpc.aio.ServicerContext
    ) -> milvus_pb2.ListImportTasksResponse:
        collection_id = (await self._coll(request.collection_name)).collection_id if request.collection_name else 0
        names: dict[int, str] = {}
        tasks = []
        for job in await self._coord.list_imports(collection_id, max(0, request.limit)):
            if job.collection_id not in names:
                names[job.collection_id] = await self._name_of(job.collection_id)
            tasks.append(import_state(job, names[job.collection_id]))
        return milvus_pb2.ListImportTasksResponse(status=success(), tasks=tasks)

    async def _name_of(self, collection_id: int) -> str:
        try:
            info = await self._coord.describe_collection(collection_id=collection_id)
        except StrataError:  # gone (or not answered): a job of it is listed without a name
            return ""
        return str(info.name)

    @milvus_rpc(milvus_pb2.GetPersistentSegmentInfoResponse)
    async def GetPersistentSegmentInfo(
        self, request: milvus_pb2.GetPersistentSegmentInfoRequest, context: grpc.aio.ServicerContext
    ) -> milvus_pb2.GetPersistentSegmentInfoResponse:
        coll = await self._coll(request.collectionName)
        segments = await self._coord.list_segments(coll.collection_id)
        return milvus_pb2.GetPersistentSegmentInfoResponse(
            status=success(),
            infos=[
                milvus_pb2.PersistentSegmentInfo(
                    segmentID=s.segment_id,
                    collectionID=s.collection_id,
                    partitionID=s.partition_id,
                    num_rows=s.rows,
                    state=s.state,  # the same numbers as Milvus' SegmentState
                    level=s.level,  # and SegmentLevel (L0 = 1, L1 = 2)
                )
                for s in segments
            ],
        )
