from protos import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class StatusResponse(_message.Message):
    __slots__ = ("status",)
    STATUS_FIELD_NUMBER: _ClassVar[int]
    status: _common_pb2.Status
    def __init__(self, status: _Optional[_Union[_common_pb2.Status, _Mapping]] = ...) -> None: ...

class WatchChannelRequest(_message.Message):
    __slots__ = ("collection_id", "vchannel", "pchannel", "schema_json", "checkpoint", "segments", "placements", "indexes", "replica_id", "excluded_segments")
    COLLECTION_ID_FIELD_NUMBER: _ClassVar[int]
    VCHANNEL_FIELD_NUMBER: _ClassVar[int]
    PCHANNEL_FIELD_NUMBER: _ClassVar[int]
    SCHEMA_JSON_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_FIELD_NUMBER: _ClassVar[int]
    SEGMENTS_FIELD_NUMBER: _ClassVar[int]
    PLACEMENTS_FIELD_NUMBER: _ClassVar[int]
    INDEXES_FIELD_NUMBER: _ClassVar[int]
    REPLICA_ID_FIELD_NUMBER: _ClassVar[int]
    EXCLUDED_SEGMENTS_FIELD_NUMBER: _ClassVar[int]
    collection_id: int
    vchannel: str
    pchannel: str
    schema_json: str
    checkpoint: _common_pb2.Position
    segments: _containers.RepeatedCompositeFieldContainer[_common_pb2.SegmentInfo]
    placements: _containers.RepeatedCompositeFieldContainer[SegmentPlacement]
    indexes: _containers.RepeatedCompositeFieldContainer[IndexSpec]
    replica_id: int
    excluded_segments: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, collection_id: _Optional[int] = ..., vchannel: _Optional[str] = ..., pchannel: _Optional[str] = ..., schema_json: _Optional[str] = ..., checkpoint: _Optional[_Union[_common_pb2.Position, _Mapping]] = ..., segments: _Optional[_Iterable[_Union[_common_pb2.SegmentInfo, _Mapping]]] = ..., placements: _Optional[_Iterable[_Union[SegmentPlacement, _Mapping]]] = ..., indexes: _Optional[_Iterable[_Union[IndexSpec, _Mapping]]] = ..., replica_id: _Optional[int] = ..., excluded_segments: _Optional[_Iterable[int]] = ...) -> None: ...

class SyncDistributionRequest(_message.Message):
    __slots__ = ("collection_id", "vchannel", "load", "release", "placements", "indexes")
    COLLECTION_ID_FIELD_NUMBER: _ClassVar[int]
    VCHANNEL_FIELD_NUMBER: _ClassVar[int]
    LOAD_FIELD_NUMBER: _ClassVar[int]
    RELEASE_FIELD_NUMBER: _ClassVar[int]
    PLACEMENTS_FIELD_NUMBER: _ClassVar[int]
    INDEXES_FIELD_NUMBER: _ClassVar[int]
    collection_id: int
    vchannel: str
    load: _containers.RepeatedCompositeFieldContainer[_common_pb2.SegmentInfo]
    release: _containers.RepeatedScalarFieldContainer[int]
    placements: _containers.RepeatedCompositeFieldContainer[SegmentPlacement]
    indexes: _containers.RepeatedCompositeFieldContainer[IndexSpec]
    def __init__(self, collection_id: _Optional[int] = ..., vchannel: _Optional[str] = ..., load: _Optional[_Iterable[_Union[_common_pb2.SegmentInfo, _Mapping]]] = ..., release: _Optional[_Iterable[int]] = ..., placements: _Optional[_Iterable[_Union[SegmentPlacement, _Mapping]]] = ..., indexes: _Optional[_Iterable[_Union[IndexSpec, _Mapping]]] = ...) -> None: ...

class IndexSpec(_message.Message):
    __slots__ = ("field_name", "index_id", "params")
    class ParamsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    FIELD_NAME_FIELD_NUMBER: _ClassVar[int]
    INDEX_ID_FIELD_NUMBER: _ClassVar[int]
    PARAMS_FIELD_NUMBER: _ClassVar[int]
    field_name: str
    index_id: int
    params: _containers.ScalarMap[str, str]
    def __init__(self, field_name: _Optional[str] = ..., index_id: _Optional[int] = ..., params: _Optional[_Mapping[str, str]] = ...) -> None: ...

class SegmentPlacement(_message.Message):
    __slots__ = ("segment", "node_id", "address")
    SEGMENT_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    segment: _common_pb2.SegmentInfo
    node_id: int
    address: str
    def __init__(self, segment: _Optional[_Union[_common_pb2.SegmentInfo, _Mapping]] = ..., node_id: _Optional[int] = ..., address: _Optional[str] = ...) -> None: ...

class SegmentCuts(_message.Message):
    __slots__ = ("segment_id", "cuts")
    SEGMENT_ID_FIELD_NUMBER: _ClassVar[int]
    CUTS_FIELD_NUMBER: _ClassVar[int]
    segment_id: int
    cuts: bytes
    def __init__(self, segment_id: _Optional[int] = ..., cuts: _Optional[bytes] = ...) -> None: ...

class LoadSegmentsRequest(_message.Message):
    __slots__ = ("collection_id", "schema_json", "segments", "indexes", "cuts")
    COLLECTION_ID_FIELD_NUMBER: _ClassVar[int]
    SCHEMA_JSON_FIELD_NUMBER: _ClassVar[int]
    SEGMENTS_FIELD_NUMBER: _ClassVar[int]
    INDEXES_FIELD_NUMBER: _ClassVar[int]
    CUTS_FIELD_NUMBER: _ClassVar[int]
    collection_id: int
    schema_json: str
    segments: _containers.RepeatedCompositeFieldContainer[_common_pb2.SegmentInfo]
    indexes: _containers.RepeatedCompositeFieldContainer[IndexSpec]
    cuts: _containers.RepeatedCompositeFieldContainer[SegmentCuts]
    def __init__(self, collection_id: _Optional[int] = ..., schema_json: _Optional[str] = ..., segments: _Optional[_Iterable[_Union[_common_pb2.SegmentInfo, _Mapping]]] = ..., indexes: _Optional[_Iterable[_Union[IndexSpec, _Mapping]]] = ..., cuts: _Optional[_Iterable[_Union[SegmentCuts, _Mapping]]] = ...) -> None: ...

class BuildSegmentIndexRequest(_message.Message):
    __slots__ = ("collection_id", "schema_json", "segment", "index")
    COLLECTION_ID_FIELD_NUMBER: _ClassVar[int]
    SCHEMA_JSON_FIELD_NUMBER: _ClassVar[int]
    SEGMENT_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    collection_id: int
    schema_json: str
    segment: _common_pb2.SegmentInfo
    index: IndexSpec
    def __init__(self, collection_id: _Optional[int] = ..., schema_json: _Optional[str] = ..., segment: _Optional[_Union[_common_pb2.SegmentInfo, _Mapping]] = ..., index: _Optional[_Union[IndexSpec, _Mapping]] = ...) -> None: ...

class BuildSegmentIndexResponse(_message.Message):
    __slots__ = ("status", "built")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    BUILT_FIELD_NUMBER: _ClassVar[int]
    status: _common_pb2.Status
    built: bool
    def __init__(self, status: _Optional[_Union[_common_pb2.Status, _Mapping]] = ..., built: _Optional[bool] = ...) -> None: ...

class ReleaseSegmentsRequest(_message.Message):
    __slots__ = ("collection_id", "segment_ids")
    COLLECTION_ID_FIELD_NUMBER: _ClassVar[int]
    SEGMENT_IDS_FIELD_NUMBER: _ClassVar[int]
    collection_id: int
    segment_ids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, collection_id: _Optional[int] = ..., segment_ids: _Optional[_Iterable[int]] = ...) -> None: ...

class DeleteRequest(_message.Message):
    __slots__ = ("collection_id", "cuts")
    COLLECTION_ID_FIELD_NUMBER: _ClassVar[int]
    CUTS_FIELD_NUMBER: _ClassVar[int]
    collection_id: int
    cuts: _containers.RepeatedCompositeFieldContainer[SegmentCuts]
    def __init__(self, collection_id: _Optional[int] = ..., cuts: _Optional[_Iterable[_Union[SegmentCuts, _Mapping]]] = ...) -> None: ...

class SearchSegmentsRequest(_message.Message):
    __slots__ = ("collection_id", "segment_ids", "read_ts", "read", "anns_field", "metric_type", "vectors", "topk", "params")
    COLLECTION_ID_FIELD_NUMBER: _ClassVar[int]
    SEGMENT_IDS_FIELD_NUMBER: _ClassVar[int]
    READ_TS_FIELD_NUMBER: _ClassVar[int]
    READ_FIELD_NUMBER: _ClassVar[int]
    ANNS_FIELD_FIELD_NUMBER: _ClassVar[int]
    METRIC_TYPE_FIELD_NUMBER: _ClassVar[int]
    VECTORS_FIELD_NUMBER: _ClassVar[int]
    TOPK_FIELD_NUMBER: _ClassVar[int]
    PARAMS_FIELD_NUMBER: _ClassVar[int]
    collection_id: int
    segment_ids: _containers.RepeatedScalarFieldContainer[int]
    read_ts: int
    read: ReadOptions
    anns_field: str
    metric_type: str
    vectors: bytes
    topk: int
    params: str
    def __init__(self, collection_id: _Optional[int] = ..., segment_ids: _Optional[_Iterable[int]] = ..., read_ts: _Optional[int] = ..., read: _Optional[_Union[ReadOptions, _Mapping]] = ..., anns_field: _Optional[str] = ..., metric_type: _Optional[str] = ..., vectors: _Optional[bytes] = ..., topk: _Optional[int] = ..., params: _Optional[str] = ...) -> None: ...

class QuerySegmentsRequest(_message.Message):
    __slots__ = ("collection_id", "segment_ids", "read_ts", "read", "limit", "count_only")
    COLLECTION_ID_FIELD_NUMBER: _ClassVar[int]
    SEGMENT_IDS_FIELD_NUMBER: _ClassVar[int]
    READ_TS_FIELD_NUMBER: _ClassVar[int]
    READ_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    COUNT_ONLY_FIELD_NUMBER: _ClassVar[int]
    collection_id: int
    segment_ids: _containers.RepeatedScalarFieldContainer[int]
    read_ts: int
    read: ReadOptions
    limit: int
    count_only: bool
    def __init__(self, collection_id: _Optional[int] = ..., segment_ids: _Optional[_Iterable[int]] = ..., read_ts: _Optional[int] = ..., read: _Optional[_Union[ReadOptions, _Mapping]] = ..., limit: _Optional[int] = ..., count_only: _Optional[bool] = ...) -> None: ...

class UnwatchChannelRequest(_message.Message):
    __slots__ = ("collection_id", "vchannel")
    COLLECTION_ID_FIELD_NUMBER: _ClassVar[int]
    VCHANNEL_FIELD_NUMBER: _ClassVar[int]
    collection_id: int
    vchannel: str
    def __init__(self, collection_id: _Optional[int] = ..., vchannel: _Optional[str] = ...) -> None: ...

class ReadOptions(_message.Message):
    __slots__ = ("guarantee_timestamp", "filter", "output_fields", "timeout_ms", "partition_ids", "expire_before", "ignore_growing", "filter_expr", "filter_cost")
    GUARANTEE_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELDS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    PARTITION_IDS_FIELD_NUMBER: _ClassVar[int]
    EXPIRE_BEFORE_FIELD_NUMBER: _ClassVar[int]
    IGNORE_GROWING_FIELD_NUMBER: _ClassVar[int]
    FILTER_EXPR_FIELD_NUMBER: _ClassVar[int]
    FILTER_COST_FIELD_NUMBER: _ClassVar[int]
    guarantee_timestamp: int
    filter: str
    output_fields: _containers.RepeatedScalarFieldContainer[str]
    timeout_ms: int
    partition_ids: _containers.RepeatedScalarFieldContainer[int]
    expire_before: int
    ignore_growing: bool
    filter_expr: bytes
    filter_cost: int
    def __init__(self, guarantee_timestamp: _Optional[int] = ..., filter: _Optional[str] = ..., output_fields: _Optional[_Iterable[str]] = ..., timeout_ms: _Optional[int] = ..., partition_ids: _Optional[_Iterable[int]] = ..., expire_before: _Optional[int] = ..., ignore_growing: _Optional[bool] = ..., filter_expr: _Optional[bytes] = ..., filter_cost: _Optional[int] = ...) -> None: ...

class SearchRequest(_message.Message):
    __slots__ = ("collection_id", "vchannel", "read", "anns_field", "metric_type", "vectors", "topk", "params", "vchannels")
    COLLECTION_ID_FIELD_NUMBER: _ClassVar[int]
    VCHANNEL_FIELD_NUMBER: _ClassVar[int]
    READ_FIELD_NUMBER: _ClassVar[int]
    ANNS_FIELD_FIELD_NUMBER: _ClassVar[int]
    METRIC_TYPE_FIELD_NUMBER: _ClassVar[int]
    VECTORS_FIELD_NUMBER: _ClassVar[int]
    TOPK_FIELD_NUMBER: _ClassVar[int]
    PARAMS_FIELD_NUMBER: _ClassVar[int]
    VCHANNELS_FIELD_NUMBER: _ClassVar[int]
    collection_id: int
    vchannel: str
    read: ReadOptions
    anns_field: str
    metric_type: str
    vectors: bytes
    topk: int
    params: str
    vchannels: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, collection_id: _Optional[int] = ..., vchannel: _Optional[str] = ..., read: _Optional[_Union[ReadOptions, _Mapping]] = ..., anns_field: _Optional[str] = ..., metric_type: _Optional[str] = ..., vectors: _Optional[bytes] = ..., topk: _Optional[int] = ..., params: _Optional[str] = ..., vchannels: _Optional[_Iterable[str]] = ...) -> None: ...

class SearchResponse(_message.Message):
    __slots__ = ("status", "results")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    status: _common_pb2.Status
    results: bytes
    def __init__(self, status: _Optional[_Union[_common_pb2.Status, _Mapping]] = ..., results: _Optional[bytes] = ...) -> None: ...

class QueryRequest(_message.Message):
    __slots__ = ("collection_id", "vchannel", "read", "limit", "count_only")
    COLLECTION_ID_FIELD_NUMBER: _ClassVar[int]
    VCHANNEL_FIELD_NUMBER: _ClassVar[int]
    READ_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    COUNT_ONLY_FIELD_NUMBER: _ClassVar[int]
    collection_id: int
    vchannel: str
    read: ReadOptions
    limit: int
    count_only: bool
    def __init__(self, collection_id: _Optional[int] = ..., vchannel: _Optional[str] = ..., read: _Optional[_Union[ReadOptions, _Mapping]] = ..., limit: _Optional[int] = ..., count_only: _Optional[bool] = ...) -> None: ...

class QueryResponse(_message.Message):
    __slots__ = ("status", "results", "count")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    status: _common_pb2.Status
    results: bytes
    count: int
    def __init__(self, status: _Optional[_Union[_common_pb2.Status, _Mapping]] = ..., results: _Optional[bytes] = ..., count: _Optional[int] = ...) -> None: ...

class GetDataDistributionRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ChannelDistribution(_message.Message):
    __slots__ = ("collection_id", "vchannel", "tsafe", "growing_rows", "sealed_segments", "serviceable", "sealed_rows", "replica_id", "offline_segments", "load_failures")
    COLLECTION_ID_FIELD_NUMBER: _ClassVar[int]
    VCHANNEL_FIELD_NUMBER: _ClassVar[int]
    TSAFE_FIELD_NUMBER: _ClassVar[int]
    GROWING_ROWS_FIELD_NUMBER: _ClassVar[int]
    SEALED_SEGMENTS_FIELD_NUMBER: _ClassVar[int]
    SERVICEABLE_FIELD_NUMBER: _ClassVar[int]
    SEALED_ROWS_FIELD_NUMBER: _ClassVar[int]
    REPLICA_ID_FIELD_NUMBER: _ClassVar[int]
    OFFLINE_SEGMENTS_FIELD_NUMBER: _ClassVar[int]
    LOAD_FAILURES_FIELD_NUMBER: _ClassVar[int]
    collection_id: int
    vchannel: str
    tsafe: int
    growing_rows: int
    sealed_segments: _containers.RepeatedScalarFieldContainer[int]
    serviceable: bool
    sealed_rows: int
    replica_id: int
    offline_segments: _containers.RepeatedScalarFieldContainer[int]
    load_failures: _containers.RepeatedCompositeFieldContainer[SegmentLoadFailure]
    def __init__(self, collection_id: _Optional[int] = ..., vchannel: _Optional[str] = ..., tsafe: _Optional[int] = ..., growing_rows: _Optional[int] = ..., sealed_segments: _Optional[_Iterable[int]] = ..., serviceable: _Optional[bool] = ..., sealed_rows: _Optional[int] = ..., replica_id: _Optional[int] = ..., offline_segments: _Optional[_Iterable[int]] = ..., load_failures: _Optional[_Iterable[_Union[SegmentLoadFailure, _Mapping]]] = ...) -> None: ...

class SegmentLoadFailure(_message.Message):
    __slots__ = ("segment_id", "node_id", "code", "reason", "attempts")
    SEGMENT_ID_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    segment_id: int
    node_id: int
    code: int
    reason: str
    attempts: int
    def __init__(self, segment_id: _Optional[int] = ..., node_id: _Optional[int] = ..., code: _Optional[int] = ..., reason: _Optional[str] = ..., attempts: _Optional[int] = ...) -> None: ...

class BrokenChannel(_message.Message):
    __slots__ = ("collection_id", "vchannel", "reason")
    COLLECTION_ID_FIELD_NUMBER: _ClassVar[int]
    VCHANNEL_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    collection_id: int
    vchannel: str
    reason: str
    def __init__(self, collection_id: _Optional[int] = ..., vchannel: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class LoadedSegment(_message.Message):
    __slots__ = ("collection_id", "segment_id", "rows", "index_ids")
    COLLECTION_ID_FIELD_NUMBER: _ClassVar[int]
    SEGMENT_ID_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    INDEX_IDS_FIELD_NUMBER: _ClassVar[int]
    collection_id: int
    segment_id: int
    rows: int
    index_ids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, collection_id: _Optional[int] = ..., segment_id: _Optional[int] = ..., rows: _Optional[int] = ..., index_ids: _Optional[_Iterable[int]] = ...) -> None: ...

class GetDataDistributionResponse(_message.Message):
    __slots__ = ("node_id", "channels", "segments", "broken")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    CHANNELS_FIELD_NUMBER: _ClassVar[int]
    SEGMENTS_FIELD_NUMBER: _ClassVar[int]
    BROKEN_FIELD_NUMBER: _ClassVar[int]
    node_id: int
    channels: _containers.RepeatedCompositeFieldContainer[ChannelDistribution]
    segments: _containers.RepeatedCompositeFieldContainer[LoadedSegment]
    broken: _containers.RepeatedCompositeFieldContainer[BrokenChannel]
    def __init__(self, node_id: _Optional[int] = ..., channels: _Optional[_Iterable[_Union[ChannelDistribution, _Mapping]]] = ..., segments: _Optional[_Iterable[_Union[LoadedSegment, _Mapping]]] = ..., broken: _Optional[_Iterable[_Union[BrokenChannel, _Mapping]]] = ...) -> None: ...
