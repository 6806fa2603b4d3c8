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
    __slots__ = ("collection_id", "vchannel", "pchannel", "schema_json", "checkpoint", "segments")
    COLLECTION_ID_FIELD_NUMBER: _ClassVar[int]
    VCHANNEL_FIELD_NUMBER: _ClassVar[int]
    PCHANNEL_FIELD_NUMBER: _ClassVar[int]
    SCHEMA_JSON_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_FIELD_NUMBER: _ClassVar[int]
    SEGMENTS_FIELD_NUMBER: _ClassVar[int]
    collection_id: int
    vchannel: str
    pchannel: str
    schema_json: str
    checkpoint: _common_pb2.Position
    segments: _containers.RepeatedCompositeFieldContainer[_common_pb2.SegmentInfo]
    def __init__(self, collection_id: _Optional[int] = ..., vchannel: _Optional[str] = ..., pchannel: _Optional[str] = ..., schema_json: _Optional[str] = ..., checkpoint: _Optional[_Union[_common_pb2.Position, _Mapping]] = ..., segments: _Optional[_Iterable[_Union[_common_pb2.SegmentInfo, _Mapping]]] = ...) -> None: ...

class SyncDistributionRequest(_message.Message):
    __slots__ = ("collection_id", "vchannel", "load", "release")
    COLLECTION_ID_FIELD_NUMBER: _ClassVar[int]
    VCHANNEL_FIELD_NUMBER: _ClassVar[int]
    LOAD_FIELD_NUMBER: _ClassVar[int]
    RELEASE_FIELD_NUMBER: _ClassVar[int]
    collection_id: int
    vchannel: str
    load: _containers.RepeatedCompositeFieldContainer[_common_pb2.SegmentInfo]
    release: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, collection_id: _Optional[int] = ..., vchannel: _Optional[str] = ..., load: _Optional[_Iterable[_Union[_common_pb2.SegmentInfo, _Mapping]]] = ..., release: _Optional[_Iterable[int]] = ...) -> None: ...

class UnwatchChannelRequest(_message.Message):
    __slots__ = ("collection_id", "vchannel")
    COLLECTION_ID_FIELD_NUMBER: _ClassVar[int]
    VCHANNEL_FIELD_NUMBER: _ClassVar[int]
    collection_id: int
    vchannel: str
    def __init__(self, collection_id: _Optional[int] = ..., vchannel: _Optional[str] = ...) -> None: ...

class ReadOptions(_message.Message):
    __slots__ = ("guarantee_timestamp", "filter", "filter_params", "output_fields", "timeout_ms")
    GUARANTEE_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    FILTER_PARAMS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELDS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    guarantee_timestamp: int
    filter: str
    filter_params: str
    output_fields: _containers.RepeatedScalarFieldContainer[str]
    timeout_ms: int
    def __init__(self, guarantee_timestamp: _Optional[int] = ..., filter: _Optional[str] = ..., filter_params: _Optional[str] = ..., output_fields: _Optional[_Iterable[str]] = ..., timeout_ms: _Optional[int] = ...) -> None: ...

class SearchRequest(_message.Message):
    __slots__ = ("collection_id", "vchannel", "read", "anns_field", "metric_type", "vectors", "topk", "params")
    COLLECTION_ID_FIELD_NUMBER: _ClassVar[int]
    VCHANNEL_FIELD_NUMBER: _ClassVar[int]
    READ_FIELD_NUMBER: _ClassVar[int]
    ANNS_FIELD_FIELD_NUMBER: _ClassVar[int]
    METRIC_TYPE_FIELD_NUMBER: _ClassVar[int]
    VECTORS_FIELD_NUMBER: _ClassVar[int]
    TOPK_FIELD_NUMBER: _ClassVar[int]
    PARAMS_FIELD_NUMBER: _ClassVar[int]
    collection_id: int
    vchannel: str
    read: ReadOptions
    anns_field: str
    metric_type: str
    vectors: bytes
    topk: int
    params: str
    def __init__(self, collection_id: _Optional[int] = ..., vchannel: _Optional[str] = ..., read: _Optional[_Union[ReadOptions, _Mapping]] = ..., anns_field: _Optional[str] = ..., metric_type: _Optional[str] = ..., vectors: _Optional[bytes] = ..., topk: _Optional[int] = ..., params: _Optional[str] = ...) -> None: ...

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
    __slots__ = ("collection_id", "vchannel", "tsafe", "growing_rows", "sealed_segments", "serviceable", "sealed_rows")
    COLLECTION_ID_FIELD_NUMBER: _ClassVar[int]
    VCHANNEL_FIELD_NUMBER: _ClassVar[int]
    TSAFE_FIELD_NUMBER: _ClassVar[int]
    GROWING_ROWS_FIELD_NUMBER: _ClassVar[int]
    SEALED_SEGMENTS_FIELD_NUMBER: _ClassVar[int]
    SERVICEABLE_FIELD_NUMBER: _ClassVar[int]
    SEALED_ROWS_FIELD_NUMBER: _ClassVar[int]
    collection_id: int
    vchannel: str
    tsafe: int
    growing_rows: int
    sealed_segments: _containers.RepeatedScalarFieldContainer[int]
    serviceable: bool
    sealed_rows: int
    def __init__(self, collection_id: _Optional[int] = ..., vchannel: _Optional[str] = ..., tsafe: _Optional[int] = ..., growing_rows: _Optional[int] = ..., sealed_segments: _Optional[_Iterable[int]] = ..., serviceable: _Optional[bool] = ..., sealed_rows: _Optional[int] = ...) -> None: ...

class GetDataDistributionResponse(_message.Message):
    __slots__ = ("node_id", "channels")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    CHANNELS_FIELD_NUMBER: _ClassVar[int]
    node_id: int
    channels: _containers.RepeatedCompositeFieldContainer[ChannelDistribution]
    def __init__(self, node_id: _Optional[int] = ..., channels: _Optional[_Iterable[_Union[ChannelDistribution, _Mapping]]] = ...) -> None: ...
