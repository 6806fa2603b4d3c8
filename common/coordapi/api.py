"""``CoordinatorAPI``: what the proxy (and the other roles) ask the active coordinator.

Every method raises the typed error the coordinator answered with (``CollectionNotFound``,
``DatabaseNotFound`` ...), ``StrataError`` UNAVAILABLE when the coordinator cannot be reached,
and ``NotReady`` when no coordinator leads. None retries; each has a deadline chosen by the
implementation by the kind of call (``remote.py``). Answers are the contract's messages
(``protos/coordinator.proto``, ``databases.proto``, ``jobs.proto``) under the names below.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from typing import Protocol, TypeAlias

from protos import common_pb2, coordinator_pb2, databases_pb2, jobs_pb2

CollectionInfo: TypeAlias = coordinator_pb2.CollectionInfo
IndexInfo: TypeAlias = coordinator_pb2.IndexInfo
QueryView: TypeAlias = coordinator_pb2.QueryViewResponse
ChannelPlacement: TypeAlias = coordinator_pb2.ChannelPlacement
Replicas: TypeAlias = coordinator_pb2.GetReplicasResponse
ReplicaInfo: TypeAlias = coordinator_pb2.ReplicaInfo
QuerySegment: TypeAlias = coordinator_pb2.QuerySegment
ResourceGroup: TypeAlias = coordinator_pb2.ResourceGroupResponse
Health: TypeAlias = coordinator_pb2.CheckHealthResponse
FlushAll: TypeAlias = coordinator_pb2.FlushAllResponse
FlushAllState: TypeAlias = coordinator_pb2.GetFlushAllStateResponse
Alias: TypeAlias = coordinator_pb2.AliasResponse
DatabaseInfo: TypeAlias = databases_pb2.DatabaseInfo
CompactionState: TypeAlias = jobs_pb2.CompactionStateResponse
ImportJob: TypeAlias = jobs_pb2.ImportJob
SegmentInfo: TypeAlias = common_pb2.SegmentInfo


class LoadState(enum.IntEnum):
    """A collection's load state in a ``QueryView`` (``QueryView.state``), the contract's numbers."""

    NOT_LOAD = coordinator_pb2.LOAD_STATE_NOT_LOAD
    LOADING = coordinator_pb2.LOAD_STATE_LOADING
    LOADED = coordinator_pb2.LOAD_STATE_LOADED


class CoordinatorAPI(Protocol):
    """The active coordinator. A collection is named by ``collection_id``, or by ``name`` in ``db_name``."""

    # ---- timestamps and ids ----
    async def alloc_timestamp(self) -> int:
        """A fresh timestamp from the TSO (a Strong read's guarantee)."""
        ...

    async def alloc_ids(self, count: int) -> int:
        """The first of ``count`` consecutive fresh ids."""
        ...

    # ---- collections ----
    async def create_collection(
        self, *, name: str, schema_json: str, shards_num: int, consistency_level: int,
        properties: Mapping[str, str], num_partitions: int, db_name: str,
    ) -> None: ...

    async def drop_collection(self, name: str, db_name: str) -> None: ...

    async def describe_collection(self, *, collection_id: int = 0, name: str = "", db_name: str = "") -> CollectionInfo: ...

    async def list_collections(self, db_name: str = "") -> Sequence[CollectionInfo]:
        """The collections of ``db_name`` ("": of every database)."""
        ...

    async def rename_collection(self, name: str, db_name: str, *, new_name: str, new_db_name: str) -> None: ...

    async def truncate_collection(self, name: str, db_name: str) -> None: ...

    async def alter_collection(
        self, name: str, db_name: str, *, properties: Mapping[str, str], delete_keys: Sequence[str]
    ) -> None: ...

    async def alter_schema(
        self, collection_id: int, *, add_field_json: str = "", field_name: str = "",
        properties: Mapping[str, str] | None = None, delete_keys: Sequence[str] = (),
    ) -> None:
        """Add a field (``add_field_json``) or alter the field ``field_name``."""
        ...

    # ---- partitions ----
    async def create_partition(self, collection_id: int, name: str) -> None: ...

    async def drop_partition(self, collection_id: int, name: str) -> None: ...

    async def release_partitions(self, collection_id: int, names: Sequence[str]) -> None: ...

    # ---- aliases ----
    async def create_alias(self, alias: str, collection_name: str, db_name: str) -> None: ...

    async def alter_alias(self, alias: str, collection_name: str, db_name: str) -> None: ...

    async def drop_alias(self, alias: str, db_name: str) -> None: ...

    async def describe_alias(self, alias: str, db_name: str) -> Alias: ...

    async def list_aliases(self, collection_name: str, db_name: str) -> Sequence[str]: ...

    # ---- databases ----
    async def create_database(self, name: str, properties: Mapping[str, str]) -> None: ...

    async def drop_database(self, name: str) -> None: ...

    async def alter_database(self, name: str, *, properties: Mapping[str, str], delete_keys: Sequence[str]) -> None: ...

    async def describe_database(self, name: str) -> DatabaseInfo: ...

    async def list_databases(self) -> Sequence[DatabaseInfo]: ...

    # ---- indexes ----
    async def create_index(self, collection_id: int, *, field_name: str, index_name: str, params: Mapping[str, str]) -> None: ...

    async def describe_indexes(self, collection_id: int) -> Sequence[IndexInfo]: ...

    async def alter_index(
        self, collection_id: int, index_name: str, *, params: Mapping[str, str], delete_keys: Sequence[str]
    ) -> None: ...

    async def drop_index(self, collection_id: int, index_name: str) -> None: ...

    # ---- loading and serving ----
    async def load_collection(self, collection_id: int, *, replicas: int, partition_names: Sequence[str] = ()) -> None:
        """Load the collection (or, with ``partition_names``, those partitions) in ``replicas`` replicas."""
        ...

    async def release_collection(self, collection_id: int) -> None: ...

    async def query_view(self, collection_id: int) -> QueryView:
        """Its load state and, per replica and vchannel, the delegator serving it."""
        ...

    async def replicas(self, collection_id: int) -> Replicas: ...

    async def query_segments(self, collection_id: int) -> Sequence[QuerySegment]:
        """The sealed segments the query nodes serve, and on which nodes."""
        ...

    async def resource_group(self, name: str) -> ResourceGroup: ...

    async def check_health(self) -> Health: ...

    # ---- flush ----
    async def flush(self, collection_id: int) -> tuple[list[int], int]:
        """Seal the collection's growing segments: their ids and the flush timestamp."""
        ...

    async def flush_state(self, *, collection_id: int, segment_ids: Sequence[int], flush_ts: int) -> bool:
        """Whether those segments are flushed and the checkpoints passed ``flush_ts`` (``collection_id`` 0: any)."""
        ...

    async def flush_all(self) -> FlushAll: ...

    async def flush_all_state(self, flush_all_ts: int) -> FlushAllState: ...

    # ---- jobs: compaction, import, segments ----
    async def manual_compaction(self, collection_id: int, *, l0_only: bool, target_bytes: int) -> int:
        """Start a compaction of the collection: its id."""
        ...

    async def compaction_state(self, compaction_id: int) -> CompactionState: ...

    async def start_import(
        self, collection_id: int, *, partition_name: str, files: Sequence[str], options: Mapping[str, str]
    ) -> int:
        """Start an import job: its id."""
        ...

    async def import_job(self, job_id: int) -> ImportJob: ...

    async def list_imports(self, collection_id: int = 0, limit: int = 0) -> Sequence[ImportJob]: ...

    async def list_segments(self, collection_id: int) -> Sequence[SegmentInfo]:
        """The collection's segments in the coordinator's metadata (flushed and growing)."""
        ...

    async def row_delta(self, collection_id: int) -> int:
        """Rows imports added minus rows compactions removed."""
        ...
