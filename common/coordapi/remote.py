"""``RemoteCoordinator``: ``CoordinatorAPI`` over gRPC to the active coordinator (``common.coordclient``).

The deadlines are chosen here, by the kind of call, and nowhere else: a quick call (a timestamp,
health, a flush state) gets ``QUICK``, a read or a load ``CALL``, a change of the catalog (DDL,
which waits for the coordinator's DDL lock and the WAL) ``CHANGE``. The stubs are checked, so a
refusal arrives as its typed error and an unreachable coordinator as UNAVAILABLE.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from common.coordapi.api import (
    Alias,
    CollectionInfo,
    CompactionState,
    DatabaseInfo,
    FlushAll,
    FlushAllState,
    Health,
    ImportJob,
    IndexInfo,
    QuerySegment,
    QueryView,
    Replicas,
    ResourceGroup,
    SegmentInfo,
)
from common.coordclient import CoordinatorClient
from protos import coordinator_pb2 as cpb
from protos import databases_pb2 as dpb
from protos import jobs_pb2 as jpb

QUICK = 10.0
CALL = 30.0
CHANGE = 60.0


def _ref(collection_id: int = 0, name: str = "", db_name: str = "") -> cpb.CollectionRef:
    return cpb.CollectionRef(collection_id=collection_id, name=name, db_name=db_name)


class RemoteCoordinator:
    """The active coordinator, found and followed through etcd by ``client``."""

    def __init__(self, client: CoordinatorClient) -> None:
        self._client = client

    async def _call(self, method: str, request: Any, timeout: float) -> Any:
        return await getattr(await self._client.stub(), method)(request, timeout=timeout)

    # ---- timestamps and ids ----
    async def alloc_timestamp(self) -> int:
        return int((await self._call("AllocTimestamp", cpb.AllocTimestampRequest(count=1), QUICK)).timestamp)

    async def alloc_ids(self, count: int) -> int:
        return int((await self._call("AllocID", cpb.AllocIDRequest(count=count), CALL)).begin)

    # ---- collections ----
    async def create_collection(
        self, *, name: str, schema_json: str, shards_num: int, consistency_level: int,
        properties: Mapping[str, str], num_partitions: int, db_name: str,
    ) -> None:
        request = cpb.CreateCollectionRequest(
            name=name, schema_json=schema_json, shards_num=shards_num, consistency_level=consistency_level,
            properties=properties, num_partitions=num_partitions, db_name=db_name,
        )
        await self._call("CreateCollection", request, CHANGE)

    async def drop_collection(self, name: str, db_name: str) -> None:
        await self._call("DropCollection", _ref(name=name, db_name=db_name), CHANGE)

    async def describe_collection(self, *, collection_id: int = 0, name: str = "", db_name: str = "") -> CollectionInfo:
        resp = await self._call("DescribeCollection", _ref(collection_id, name, db_name), CALL)
        return resp.collection

    async def list_collections(self, db_name: str = "") -> Sequence[CollectionInfo]:
        return list((await self._call("ListCollections", cpb.ListCollectionsRequest(db_name=db_name), CALL)).collections)

    async def rename_collection(self, name: str, db_name: str, *, new_name: str, new_db_name: str) -> None:
        request = cpb.RenameCollectionRequest(collection=_ref(name=name, db_name=db_name), new_name=new_name,
                                              new_db_name=new_db_name)
        await self._call("RenameCollection", request, CHANGE)

    async def truncate_collection(self, name: str, db_name: str) -> None:
        await self._call("TruncateCollection", _ref(name=name, db_name=db_name), CHANGE)

    async def alter_collection(
        self, name: str, db_name: str, *, properties: Mapping[str, str], delete_keys: Sequence[str]
    ) -> None:
        request = cpb.AlterCollectionRequest(collection=_ref(name=name, db_name=db_name), properties=properties,
                                             delete_keys=list(delete_keys))
        await self._call("AlterCollection", request, CHANGE)

    async def alter_schema(
        self, collection_id: int, *, add_field_json: str = "", field_name: str = "",
        properties: Mapping[str, str] | None = None, delete_keys: Sequence[str] = (),
    ) -> None:
        request = cpb.AlterSchemaRequest(collection=_ref(collection_id), add_field_json=add_field_json,
                                         field_name=field_name, properties=properties or {},
                                         delete_keys=list(delete_keys))
        await self._call("AlterSchema", request, CHANGE)

    # ---- partitions ----
    async def _partitions(self, method: str, collection_id: int, names: Sequence[str]) -> None:
        await self._call(method, cpb.PartitionRequest(collection=_ref(collection_id), partition_names=list(names)), CHANGE)

    async def create_partition(self, collection_id: int, name: str) -> None:
        await self._partitions("CreatePartition", collection_id, [name])

    async def drop_partition(self, collection_id: int, name: str) -> None:
        await self._partitions("DropPartition", collection_id, [name])

    async def release_partitions(self, collection_id: int, names: Sequence[str]) -> None:
        await self._partitions("ReleasePartitions", collection_id, names)

    # ---- aliases ----
    async def create_alias(self, alias: str, collection_name: str, db_name: str) -> None:
        await self._call("CreateAlias", cpb.AliasRequest(alias=alias, collection=_ref(name=collection_name),
                                                         db_name=db_name), CHANGE)

    async def alter_alias(self, alias: str, collection_name: str, db_name: str) -> None:
        await self._call("AlterAlias", cpb.AliasRequest(alias=alias, collection=_ref(name=collection_name),
                                                        db_name=db_name), CHANGE)

    async def drop_alias(self, alias: str, db_name: str) -> None:
        await self._call("DropAlias", cpb.AliasRequest(alias=alias, db_name=db_name), CHANGE)

    async def describe_alias(self, alias: str, db_name: str) -> Alias:
        return await self._call("DescribeAlias", cpb.AliasRequest(alias=alias, db_name=db_name), CALL)

    async def list_aliases(self, collection_name: str, db_name: str) -> Sequence[str]:
        return list((await self._call("ListAliases", _ref(name=collection_name, db_name=db_name), CALL)).aliases)

    # ---- databases ----
    async def create_database(self, name: str, properties: Mapping[str, str]) -> None:
        await self._call("CreateDatabase", dpb.CreateDatabaseRequest(name=name, properties=properties), CHANGE)

    async def drop_database(self, name: str) -> None:
        await self._call("DropDatabase", dpb.DropDatabaseRequest(name=name), CHANGE)

    async def alter_database(self, name: str, *, properties: Mapping[str, str], delete_keys: Sequence[str]) -> None:
        request = dpb.AlterDatabaseRequest(name=name, properties=properties, delete_keys=list(delete_keys))
        await self._call("AlterDatabase", request, CHANGE)

    async def describe_database(self, name: str) -> DatabaseInfo:
        return (await self._call("DescribeDatabase", dpb.DatabaseRef(name=name), CALL)).database

    async def list_databases(self) -> Sequence[DatabaseInfo]:
        return list((await self._call("ListDatabases", dpb.ListDatabasesRequest(), CALL)).databases)

    # ---- indexes ----
    async def create_index(self, collection_id: int, *, field_name: str, index_name: str, params: Mapping[str, str]) -> None:
        index = cpb.IndexInfo(field_name=field_name, index_name=index_name, params=params)
        await self._call("CreateIndex", cpb.CreateIndexRequest(collection=_ref(collection_id), index=index), CALL)

    async def describe_indexes(self, collection_id: int) -> Sequence[IndexInfo]:
        return list((await self._call("DescribeIndex", _ref(collection_id), CALL)).indexes)

    async def alter_index(
        self, collection_id: int, index_name: str, *, params: Mapping[str, str], delete_keys: Sequence[str]
    ) -> None:
        request = cpb.AlterIndexRequest(collection=_ref(collection_id), index_name=index_name, params=params,
                                        delete_keys=list(delete_keys))
        await self._call("AlterIndex", request, CALL)

    async def drop_index(self, collection_id: int, index_name: str) -> None:
        await self._call("DropIndex", cpb.DropIndexRequest(collection=_ref(collection_id), index_name=index_name), CALL)

    # ---- loading and serving ----
    async def load_collection(self, collection_id: int, *, replicas: int, partition_names: Sequence[str] = ()) -> None:
        request = cpb.LoadCollectionRequest(collection=_ref(collection_id), replica_number=replicas,
                                            partition_names=list(partition_names))
        await self._call("LoadCollection", request, CALL)

    async def release_collection(self, collection_id: int) -> None:
        await self._call("ReleaseCollection", _ref(collection_id), CALL)

    async def query_view(self, collection_id: int) -> QueryView:
        return await self._call("GetQueryView", _ref(collection_id), CALL)

    async def replicas(self, collection_id: int) -> Replicas:
        return await self._call("GetReplicas", _ref(collection_id), CALL)

    async def query_segments(self, collection_id: int) -> Sequence[QuerySegment]:
        return list((await self._call("GetQuerySegments", _ref(collection_id), CALL)).segments)

    async def resource_group(self, name: str) -> ResourceGroup:
        return await self._call("DescribeResourceGroup", cpb.ResourceGroupRequest(name=name), CALL)

    async def check_health(self) -> Health:
        return await self._call("CheckHealth", cpb.CheckHealthRequest(), QUICK)

    # ---- flush ----
    async def flush(self, collection_id: int) -> tuple[list[int], int]:
        resp = await self._call("Flush", cpb.FlushRequest(collection=_ref(collection_id)), CALL)
        return list(resp.segment_ids), int(resp.flush_ts)

    async def flush_state(self, *, collection_id: int, segment_ids: Sequence[int], flush_ts: int) -> bool:
        request = cpb.GetFlushStateRequest(collection=_ref(collection_id), segment_ids=list(segment_ids), flush_ts=flush_ts)
        return bool((await self._call("GetFlushState", request, QUICK)).flushed)

    async def flush_all(self) -> FlushAll:
        return await self._call("FlushAll", cpb.FlushAllRequest(), CHANGE)

    async def flush_all_state(self, flush_all_ts: int) -> FlushAllState:
        request = cpb.GetFlushAllStateRequest(flush_all_ts=flush_all_ts)
        return await self._call("GetFlushAllState", request, CHANGE)

    # ---- jobs: compaction, import, segments ----
    async def manual_compaction(self, collection_id: int, *, l0_only: bool, target_bytes: int) -> int:
        request = jpb.ManualCompactionRequest(collection_id=collection_id, l0_only=l0_only, target_bytes=target_bytes)
        return int((await self._call("ManualCompaction", request, CALL)).compaction_id)

    async def compaction_state(self, compaction_id: int) -> CompactionState:
        request = jpb.CompactionStateRequest(compaction_id=compaction_id)
        return await self._call("GetCompactionState", request, CALL)

    async def start_import(
        self, collection_id: int, *, partition_name: str, files: Sequence[str], options: Mapping[str, str]
    ) -> int:
        request = jpb.ImportRequest(collection_id=collection_id, partition_name=partition_name, files=list(files),
                                    options=options)
        return int((await self._call("Import", request, CALL)).job_id)

    async def import_job(self, job_id: int) -> ImportJob:
        return (await self._call("GetImportState", jpb.ImportStateRequest(job_id=job_id), CALL)).job

    async def list_imports(self, collection_id: int = 0, limit: int = 0) -> Sequence[ImportJob]:
        request = jpb.ListImportsRequest(collection_id=collection_id, limit=limit)
        return list((await self._call("ListImports", request, CALL)).jobs)

    async def list_segments(self, collection_id: int) -> Sequence[SegmentInfo]:
        request = jpb.ListSegmentsRequest(collection_id=collection_id)
        return list((await self._call("ListSegments", request, CALL)).segments)

    async def row_delta(self, collection_id: int) -> int:
        return int((await self._call("GetRowDelta", jpb.RowDeltaRequest(collection_id=collection_id), CALL)).rows)
