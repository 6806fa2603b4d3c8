from protos import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ManualCompactionRequest(_message.Message):
    __slots__ = ("collection_id", "l0_only", "target_bytes")
    COLLECTION_ID_FIELD_NUMBER: _ClassVar[int]
    L0_ONLY_FIELD_NUMBER: _ClassVar[int]
    TARGET_BYTES_FIELD_NUMBER: _ClassVar[int]
    collection_id: int
    l0_only: bool
    target_bytes: int
    def __init__(self, collection_id: _Optional[int] = ..., l0_only: _Optional[bool] = ..., target_bytes: _Optional[int] = ...) -> None: ...

class ManualCompactionResponse(_message.Message):
    __slots__ = ("status", "compaction_id", "plans")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    COMPACTION_ID_FIELD_NUMBER: _ClassVar[int]
    PLANS_FIELD_NUMBER: _ClassVar[int]
    status: _common_pb2.Status
    compaction_id: int
    plans: int
    def __init__(self, status: _Optional[_Union[_common_pb2.Status, _Mapping]] = ..., compaction_id: _Optional[int] = ..., plans: _Optional[int] = ...) -> None: ...

class CompactionStateRequest(_message.Message):
    __slots__ = ("compaction_id",)
    COMPACTION_ID_FIELD_NUMBER: _ClassVar[int]
    compaction_id: int
    def __init__(self, compaction_id: _Optional[int] = ...) -> None: ...

class CompactionMerge(_message.Message):
    __slots__ = ("sources", "targets")
    SOURCES_FIELD_NUMBER: _ClassVar[int]
    TARGETS_FIELD_NUMBER: _ClassVar[int]
    sources: _containers.RepeatedScalarFieldContainer[int]
    targets: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, sources: _Optional[_Iterable[int]] = ..., targets: _Optional[_Iterable[int]] = ...) -> None: ...

class CompactionStateResponse(_message.Message):
    __slots__ = ("status", "completed", "executing", "completed_plans", "failed", "merges")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    COMPLETED_FIELD_NUMBER: _ClassVar[int]
    EXECUTING_FIELD_NUMBER: _ClassVar[int]
    COMPLETED_PLANS_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    MERGES_FIELD_NUMBER: _ClassVar[int]
    status: _common_pb2.Status
    completed: bool
    executing: int
    completed_plans: int
    failed: int
    merges: _containers.RepeatedCompositeFieldContainer[CompactionMerge]
    def __init__(self, status: _Optional[_Union[_common_pb2.Status, _Mapping]] = ..., completed: _Optional[bool] = ..., executing: _Optional[int] = ..., completed_plans: _Optional[int] = ..., failed: _Optional[int] = ..., merges: _Optional[_Iterable[_Union[CompactionMerge, _Mapping]]] = ...) -> None: ...

class ImportRequest(_message.Message):
    __slots__ = ("collection_id", "partition_name", "files", "options")
    class OptionsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    COLLECTION_ID_FIELD_NUMBER: _ClassVar[int]
    PARTITION_NAME_FIELD_NUMBER: _ClassVar[int]
    FILES_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    collection_id: int
    partition_name: str
    files: _containers.RepeatedScalarFieldContainer[str]
    options: _containers.ScalarMap[str, str]
    def __init__(self, collection_id: _Optional[int] = ..., partition_name: _Optional[str] = ..., files: _Optional[_Iterable[str]] = ..., options: _Optional[_Mapping[str, str]] = ...) -> None: ...

class ImportResponse(_message.Message):
    __slots__ = ("status", "job_id")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    status: _common_pb2.Status
    job_id: int
    def __init__(self, status: _Optional[_Union[_common_pb2.Status, _Mapping]] = ..., job_id: _Optional[int] = ...) -> None: ...

class ImportStateRequest(_message.Message):
    __slots__ = ("job_id",)
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    job_id: int
    def __init__(self, job_id: _Optional[int] = ...) -> None: ...

class ImportJob(_message.Message):
    __slots__ = ("job_id", "collection_id", "state", "rows", "progress", "reason", "files", "segment_ids", "created", "partition_name")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    COLLECTION_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    FILES_FIELD_NUMBER: _ClassVar[int]
    SEGMENT_IDS_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    PARTITION_NAME_FIELD_NUMBER: _ClassVar[int]
    job_id: int
    collection_id: int
    state: str
    rows: int
    progress: float
    reason: str
    files: _containers.RepeatedScalarFieldContainer[str]
    segment_ids: _containers.RepeatedScalarFieldContainer[int]
    created: int
    partition_name: str
    def __init__(self, job_id: _Optional[int] = ..., collection_id: _Optional[int] = ..., state: _Optional[str] = ..., rows: _Optional[int] = ..., progress: _Optional[float] = ..., reason: _Optional[str] = ..., files: _Optional[_Iterable[str]] = ..., segment_ids: _Optional[_Iterable[int]] = ..., created: _Optional[int] = ..., partition_name: _Optional[str] = ...) -> None: ...

class ImportStateResponse(_message.Message):
    __slots__ = ("status", "job")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    JOB_FIELD_NUMBER: _ClassVar[int]
    status: _common_pb2.Status
    job: ImportJob
    def __init__(self, status: _Optional[_Union[_common_pb2.Status, _Mapping]] = ..., job: _Optional[_Union[ImportJob, _Mapping]] = ...) -> None: ...

class ListImportsRequest(_message.Message):
    __slots__ = ("collection_id", "limit")
    COLLECTION_ID_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    collection_id: int
    limit: int
    def __init__(self, collection_id: _Optional[int] = ..., limit: _Optional[int] = ...) -> None: ...

class ListImportsResponse(_message.Message):
    __slots__ = ("status", "jobs")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    JOBS_FIELD_NUMBER: _ClassVar[int]
    status: _common_pb2.Status
    jobs: _containers.RepeatedCompositeFieldContainer[ImportJob]
    def __init__(self, status: _Optional[_Union[_common_pb2.Status, _Mapping]] = ..., jobs: _Optional[_Iterable[_Union[ImportJob, _Mapping]]] = ...) -> None: ...

class ListSegmentsRequest(_message.Message):
    __slots__ = ("collection_id",)
    COLLECTION_ID_FIELD_NUMBER: _ClassVar[int]
    collection_id: int
    def __init__(self, collection_id: _Optional[int] = ...) -> None: ...

class ListSegmentsResponse(_message.Message):
    __slots__ = ("status", "segments")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    SEGMENTS_FIELD_NUMBER: _ClassVar[int]
    status: _common_pb2.Status
    segments: _containers.RepeatedCompositeFieldContainer[_common_pb2.SegmentInfo]
    def __init__(self, status: _Optional[_Union[_common_pb2.Status, _Mapping]] = ..., segments: _Optional[_Iterable[_Union[_common_pb2.SegmentInfo, _Mapping]]] = ...) -> None: ...

class RowDeltaRequest(_message.Message):
    __slots__ = ("collection_id",)
    COLLECTION_ID_FIELD_NUMBER: _ClassVar[int]
    collection_id: int
    def __init__(self, collection_id: _Optional[int] = ...) -> None: ...

class RowDeltaResponse(_message.Message):
    __slots__ = ("status", "rows")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    status: _common_pb2.Status
    rows: int
    def __init__(self, status: _Optional[_Union[_common_pb2.Status, _Mapping]] = ..., rows: _Optional[int] = ...) -> None: ...
