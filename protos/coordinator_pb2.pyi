from protos import common_pb2 as _common_pb2
from protos import databases_pb2 as _databases_pb2
from protos import jobs_pb2 as _jobs_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class LoadState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    LOAD_STATE_NOT_EXIST: _ClassVar[LoadState]
    LOAD_STATE_NOT_LOAD: _ClassVar[LoadState]
    LOAD_STATE_LOADING: _ClassVar[LoadState]
    LOAD_STATE_LOADED: _ClassVar[LoadState]
LOAD_STATE_NOT_EXIST: LoadState
LOAD_STATE_NOT_LOAD: LoadState
LOAD_STATE_LOADING: LoadState
LOAD_STATE_LOADED: LoadState

class StatusResponse(_message.Message):
    __slots__ = ("status",)
    STATUS_FIELD_NUMBER: _ClassVar[int]
    status: _common_pb2.Status
    def __init__(self, status: _Optional[_Union[_common_pb2.Status, _Mapping]] = ...) -> None: ...

class AllocTimestampRequest(_message.Message):
    __slots__ = ("count",)
    COUNT_FIELD_NUMBER: _ClassVar[int]
    count: int
    def __init__(self, count: _Optional[int] = ...) -> None: ...

class AllocTimestampResponse(_message.Message):
    __slots__ = ("status", "timestamp", "count")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    status: _common_pb2.Status
    timestamp: int
    count: int
    def __init__(self, status: _Optional[_Union[_common_pb2.Status, _Mapping]] = ..., timestamp: _Optional[int] = ..., count: _Optional[int] = ...) -> None: ...

class AllocIDRequest(_message.Message):
    __slots__ = ("count",)
    COUNT_FIELD_NUMBER: _ClassVar[int]
    count: int
    def __init__(self, count: _Optional[int] = ...) -> None: ...

class AllocIDResponse(_message.Message):
    __slots__ = ("status", "begin", "count")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    BEGIN_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    status: _common_pb2.Status
    begin: int
    count: int
    def __init__(self, status: _Optional[_Union[_common_pb2.Status, _Mapping]] = ..., begin: _Optional[int] = ..., count: _Optional[int] = ...) -> None: ...

class CollectionRef(_message.Message):
    __slots__ = ("name", "collection_id", "db_name")
    NAME_FIELD_NUMBER: _ClassVar[int]
    COLLECTION_ID_FIELD_NUMBER: _ClassVar[int]
    DB_NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    collection_id: int
    db_name: str
    def __init__(self, name: _Optional[str] = ..., collection_id: _Optional[int] = ..., db_name: _Optional[str] = ...) -> None: ...

class CreateCollectionRequest(_message.Message):
    __slots__ = ("name", "schema_json", "shards_num", "consistency_level", "properties", "num_partitions", "db_name")
    class PropertiesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    SCHEMA_JSON_FIELD_NUMBER: _ClassVar[int]
    SHARDS_NUM_FIELD_NUMBER: _ClassVar[int]
    CONSISTENCY_LEVEL_FIELD_NUMBER: _ClassVar[int]
    PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    NUM_PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    DB_NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    schema_json: str
    shards_num: int
    consistency_level: int
    properties: _containers.ScalarMap[str, str]
    num_partitions: int
    db_name: str
    def __init__(self, name: _Optional[str] = ..., schema_json: _Optional[str] = ..., shards_num: _Optional[int] = ..., consistency_level: _Optional[int] = ..., properties: _Optional[_Mapping[str, str]] = ..., num_partitions: _Optional[int] = ..., db_name: _Optional[str] = ...) -> None: ...

class PartitionInfo(_message.Message):
    __slots__ = ("partition_id", "name", "created_timestamp")
    PARTITION_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    CREATED_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    partition_id: int
    name: str
    created_timestamp: int
    def __init__(self, partition_id: _Optional[int] = ..., name: _Optional[str] = ..., created_timestamp: _Optional[int] = ...) -> None: ...

class PartitionRequest(_message.Message):
    __slots__ = ("collection", "partition_names")
    COLLECTION_FIELD_NUMBER: _ClassVar[int]
    PARTITION_NAMES_FIELD_NUMBER: _ClassVar[int]
    collection: CollectionRef
    partition_names: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, collection: _Optional[_Union[CollectionRef, _Mapping]] = ..., partition_names: _Optional[_Iterable[str]] = ...) -> None: ...

class AliasRequest(_message.Message):
    __slots__ = ("alias", "collection", "db_name")
    ALIAS_FIELD_NUMBER: _ClassVar[int]
    COLLECTION_FIELD_NUMBER: _ClassVar[int]
    DB_NAME_FIELD_NUMBER: _ClassVar[int]
    alias: str
    collection: CollectionRef
    db_name: str
    def __init__(self, alias: _Optional[str] = ..., collection: _Optional[_Union[CollectionRef, _Mapping]] = ..., db_name: _Optional[str] = ...) -> None: ...

class AliasResponse(_message.Message):
    __slots__ = ("status", "alias", "collection_name")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    ALIAS_FIELD_NUMBER: _ClassVar[int]
    COLLECTION_NAME_FIELD_NUMBER: _ClassVar[int]
    status: _common_pb2.Status
    alias: str
    collection_name: str
    def __init__(self, status: _Optional[_Union[_common_pb2.Status, _Mapping]] = ..., alias: _Optional[str] = ..., collection_name: _Optional[str] = ...) -> None: ...

class ListAliasesResponse(_message.Message):
    __slots__ = ("status", "aliases")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    ALIASES_FIELD_NUMBER: _ClassVar[int]
    status: _common_pb2.Status
    aliases: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, status: _Optional[_Union[_common_pb2.Status, _Mapping]] = ..., aliases: _Optional[_Iterable[str]] = ...) -> None: ...

class RenameCollectionRequest(_message.Message):
    __slots__ = ("collection", "new_name", "new_db_name")
    COLLECTION_FIELD_NUMBER: _ClassVar[int]
    NEW_NAME_FIELD_NUMBER: _ClassVar[int]
    NEW_DB_NAME_FIELD_NUMBER: _ClassVar[int]
    collection: CollectionRef
    new_name: str
    new_db_name: str
    def __init__(self, collection: _Optional[_Union[CollectionRef, _Mapping]] = ..., new_name: _Optional[str] = ..., new_db_name: _Optional[str] = ...) -> None: ...

class AlterCollectionRequest(_message.Message):
    __slots__ = ("collection", "properties", "delete_keys")
    class PropertiesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    COLLECTION_FIELD_NUMBER: _ClassVar[int]
    PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    DELETE_KEYS_FIELD_NUMBER: _ClassVar[int]
    collection: CollectionRef
    properties: _containers.ScalarMap[str, str]
    delete_keys: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, collection: _Optional[_Union[CollectionRef, _Mapping]] = ..., properties: _Optional[_Mapping[str, str]] = ..., delete_keys: _Optional[_Iterable[str]] = ...) -> None: ...

class AlterSchemaRequest(_message.Message):
    __slots__ = ("collection", "add_field_json", "field_name", "properties", "delete_keys")
    class PropertiesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    COLLECTION_FIELD_NUMBER: _ClassVar[int]
    ADD_FIELD_JSON_FIELD_NUMBER: _ClassVar[int]
    FIELD_NAME_FIELD_NUMBER: _ClassVar[int]
    PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    DELETE_KEYS_FIELD_NUMBER: _ClassVar[int]
    collection: CollectionRef
    add_field_json: str
    field_name: str
    properties: _containers.ScalarMap[str, str]
    delete_keys: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, collection: _Optional[_Union[CollectionRef, _Mapping]] = ..., add_field_json: _Optional[str] = ..., field_name: _Optional[str] = ..., properties: _Optional[_Mapping[str, str]] = ..., delete_keys: _Optional[_Iterable[str]] = ...) -> None: ...

class CollectionInfo(_message.Message):
    __slots__ = ("collection_id", "name", "schema_json", "vchannels", "pchannels", "consistency_level", "properties", "created_timestamp", "default_partition_id", "partitions", "aliases", "indexes", "update_timestamp", "db_name", "db_id")
    class PropertiesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    COLLECTION_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    SCHEMA_JSON_FIELD_NUMBER: _ClassVar[int]
    VCHANNELS_FIELD_NUMBER: _ClassVar[int]
    PCHANNELS_FIELD_NUMBER: _ClassVar[int]
    CONSISTENCY_LEVEL_FIELD_NUMBER: _ClassVar[int]
    PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    CREATED_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_PARTITION_ID_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    ALIASES_FIELD_NUMBER: _ClassVar[int]
    INDEXES_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    DB_NAME_FIELD_NUMBER: _ClassVar[int]
    DB_ID_FIELD_NUMBER: _ClassVar[int]
    collection_id: int
    name: str
    schema_json: str
    vchannels: _containers.RepeatedScalarFieldContainer[str]
    pchannels: _containers.RepeatedScalarFieldContainer[str]
    consistency_level: int
    properties: _containers.ScalarMap[str, str]
    created_timestamp: int
    default_partition_id: int
    partitions: _containers.RepeatedCompositeFieldContainer[PartitionInfo]
    aliases: _containers.RepeatedScalarFieldContainer[str]
    indexes: _containers.RepeatedCompositeFieldContainer[IndexInfo]
    update_timestamp: int
    db_name: str
    db_id: int
    def __init__(self, collection_id: _Optional[int] = ..., name: _Optional[str] = ..., schema_json: _Optional[str] = ..., vchannels: _Optional[_Iterable[str]] = ..., pchannels: _Optional[_Iterable[str]] = ..., consistency_level: _Optional[int] = ..., properties: _Optional[_Mapping[str, str]] = ..., created_timestamp: _Optional[int] = ..., default_partition_id: _Optional[int] = ..., partitions: _Optional[_Iterable[_Union[PartitionInfo, _Mapping]]] = ..., aliases: _Optional[_Iterable[str]] = ..., indexes: _Optional[_Iterable[_Union[IndexInfo, _Mapping]]] = ..., update_timestamp: _Optional[int] = ..., db_name: _Optional[str] = ..., db_id: _Optional[int] = ...) -> None: ...

class CollectionResponse(_message.Message):
    __slots__ = ("status", "collection")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    COLLECTION_FIELD_NUMBER: _ClassVar[int]
    status: _common_pb2.Status
    collection: CollectionInfo
    def __init__(self, status: _Optional[_Union[_common_pb2.Status, _Mapping]] = ..., collection: _Optional[_Union[CollectionInfo, _Mapping]] = ...) -> None: ...

class ListCollectionsRequest(_message.Message):
    __slots__ = ("db_name",)
    DB_NAME_FIELD_NUMBER: _ClassVar[int]
    db_name: str
    def __init__(self, db_name: _Optional[str] = ...) -> None: ...

class ListCollectionsResponse(_message.Message):
    __slots__ = ("status", "collections")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    COLLECTIONS_FIELD_NUMBER: _ClassVar[int]
    status: _common_pb2.Status
    collections: _containers.RepeatedCompositeFieldContainer[CollectionInfo]
    def __init__(self, status: _Optional[_Union[_common_pb2.Status, _Mapping]] = ..., collections: _Optional[_Iterable[_Union[CollectionInfo, _Mapping]]] = ...) -> None: ...

class IndexInfo(_message.Message):
    __slots__ = ("field_name", "index_name", "index_id", "params", "progress_known", "indexed_rows", "total_rows", "fail_reason")
    class ParamsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    FIELD_NAME_FIELD_NUMBER: _ClassVar[int]
    INDEX_NAME_FIELD_NUMBER: _ClassVar[int]
    INDEX_ID_FIELD_NUMBER: _ClassVar[int]
    PARAMS_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_KNOWN_FIELD_NUMBER: _ClassVar[int]
    INDEXED_ROWS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_ROWS_FIELD_NUMBER: _ClassVar[int]
    FAIL_REASON_FIELD_NUMBER: _ClassVar[int]
    field_name: str
    index_name: str
    index_id: int
    params: _containers.ScalarMap[str, str]
    progress_known: bool
    indexed_rows: int
    total_rows: int
    fail_reason: str
    def __init__(self, field_name: _Optional[str] = ..., index_name: _Optional[str] = ..., index_id: _Optional[int] = ..., params: _Optional[_Mapping[str, str]] = ..., progress_known: _Optional[bool] = ..., indexed_rows: _Optional[int] = ..., total_rows: _Optional[int] = ..., fail_reason: _Optional[str] = ...) -> None: ...

class CreateIndexRequest(_message.Message):
    __slots__ = ("collection", "index")
    COLLECTION_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    collection: CollectionRef
    index: IndexInfo
    def __init__(self, collection: _Optional[_Union[CollectionRef, _Mapping]] = ..., index: _Optional[_Union[IndexInfo, _Mapping]] = ...) -> None: ...

class DropIndexRequest(_message.Message):
    __slots__ = ("collection", "index_name")
    COLLECTION_FIELD_NUMBER: _ClassVar[int]
    INDEX_NAME_FIELD_NUMBER: _ClassVar[int]
    collection: CollectionRef
    index_name: str
    def __init__(self, collection: _Optional[_Union[CollectionRef, _Mapping]] = ..., index_name: _Optional[str] = ...) -> None: ...

class AlterIndexRequest(_message.Message):
    __slots__ = ("collection", "index_name", "params", "delete_keys")
    class ParamsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    COLLECTION_FIELD_NUMBER: _ClassVar[int]
    INDEX_NAME_FIELD_NUMBER: _ClassVar[int]
    PARAMS_FIELD_NUMBER: _ClassVar[int]
    DELETE_KEYS_FIELD_NUMBER: _ClassVar[int]
    collection: CollectionRef
    index_name: str
    params: _containers.ScalarMap[str, str]
    delete_keys: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, collection: _Optional[_Union[CollectionRef, _Mapping]] = ..., index_name: _Optional[str] = ..., params: _Optional[_Mapping[str, str]] = ..., delete_keys: _Optional[_Iterable[str]] = ...) -> None: ...

class DescribeIndexResponse(_message.Message):
    __slots__ = ("status", "indexes")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    INDEXES_FIELD_NUMBER: _ClassVar[int]
    status: _common_pb2.Status
    indexes: _containers.RepeatedCompositeFieldContainer[IndexInfo]
    def __init__(self, status: _Optional[_Union[_common_pb2.Status, _Mapping]] = ..., indexes: _Optional[_Iterable[_Union[IndexInfo, _Mapping]]] = ...) -> None: ...

class LoadCollectionRequest(_message.Message):
    __slots__ = ("collection", "replica_number", "partition_names")
    COLLECTION_FIELD_NUMBER: _ClassVar[int]
    REPLICA_NUMBER_FIELD_NUMBER: _ClassVar[int]
    PARTITION_NAMES_FIELD_NUMBER: _ClassVar[int]
    collection: CollectionRef
    replica_number: int
    partition_names: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, collection: _Optional[_Union[CollectionRef, _Mapping]] = ..., replica_number: _Optional[int] = ..., partition_names: _Optional[_Iterable[str]] = ...) -> None: ...

class ChannelPlacement(_message.Message):
    __slots__ = ("vchannel", "pchannel", "node_id", "address", "ready", "replica_id", "load_error")
    VCHANNEL_FIELD_NUMBER: _ClassVar[int]
    PCHANNEL_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    READY_FIELD_NUMBER: _ClassVar[int]
    REPLICA_ID_FIELD_NUMBER: _ClassVar[int]
    LOAD_ERROR_FIELD_NUMBER: _ClassVar[int]
    vchannel: str
    pchannel: str
    node_id: int
    address: str
    ready: bool
    replica_id: int
    load_error: str
    def __init__(self, vchannel: _Optional[str] = ..., pchannel: _Optional[str] = ..., node_id: _Optional[int] = ..., address: _Optional[str] = ..., ready: _Optional[bool] = ..., replica_id: _Optional[int] = ..., load_error: _Optional[str] = ...) -> None: ...

class QueryViewResponse(_message.Message):
    __slots__ = ("status", "state", "channels", "progress", "loaded_partitions", "load_error")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    CHANNELS_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    LOADED_PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    LOAD_ERROR_FIELD_NUMBER: _ClassVar[int]
    status: _common_pb2.Status
    state: LoadState
    channels: _containers.RepeatedCompositeFieldContainer[ChannelPlacement]
    progress: int
    loaded_partitions: _containers.RepeatedScalarFieldContainer[int]
    load_error: str
    def __init__(self, status: _Optional[_Union[_common_pb2.Status, _Mapping]] = ..., state: _Optional[_Union[LoadState, str]] = ..., channels: _Optional[_Iterable[_Union[ChannelPlacement, _Mapping]]] = ..., progress: _Optional[int] = ..., loaded_partitions: _Optional[_Iterable[int]] = ..., load_error: _Optional[str] = ...) -> None: ...

class AssignmentDiscoverRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class PChannelAssignment(_message.Message):
    __slots__ = ("pchannel", "term")
    PCHANNEL_FIELD_NUMBER: _ClassVar[int]
    TERM_FIELD_NUMBER: _ClassVar[int]
    pchannel: str
    term: int
    def __init__(self, pchannel: _Optional[str] = ..., term: _Optional[int] = ...) -> None: ...

class NodeAssignment(_message.Message):
    __slots__ = ("node_id", "address", "channels")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    CHANNELS_FIELD_NUMBER: _ClassVar[int]
    node_id: int
    address: str
    channels: _containers.RepeatedCompositeFieldContainer[PChannelAssignment]
    def __init__(self, node_id: _Optional[int] = ..., address: _Optional[str] = ..., channels: _Optional[_Iterable[_Union[PChannelAssignment, _Mapping]]] = ...) -> None: ...

class AssignmentSnapshot(_message.Message):
    __slots__ = ("version", "nodes")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    version: int
    nodes: _containers.RepeatedCompositeFieldContainer[NodeAssignment]
    def __init__(self, version: _Optional[int] = ..., nodes: _Optional[_Iterable[_Union[NodeAssignment, _Mapping]]] = ...) -> None: ...

class ReportAssignmentErrorRequest(_message.Message):
    __slots__ = ("pchannel", "term", "error")
    PCHANNEL_FIELD_NUMBER: _ClassVar[int]
    TERM_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    pchannel: str
    term: int
    error: str
    def __init__(self, pchannel: _Optional[str] = ..., term: _Optional[int] = ..., error: _Optional[str] = ...) -> None: ...

class AllocSegmentRequest(_message.Message):
    __slots__ = ("segment",)
    SEGMENT_FIELD_NUMBER: _ClassVar[int]
    segment: _common_pb2.SegmentInfo
    def __init__(self, segment: _Optional[_Union[_common_pb2.SegmentInfo, _Mapping]] = ...) -> None: ...

class UpdateSegmentStateRequest(_message.Message):
    __slots__ = ("segment_id", "state")
    SEGMENT_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    segment_id: int
    state: _common_pb2.SegmentState
    def __init__(self, segment_id: _Optional[int] = ..., state: _Optional[_Union[_common_pb2.SegmentState, str]] = ...) -> None: ...

class SaveBinlogPathsRequest(_message.Message):
    __slots__ = ("segment", "flushed")
    SEGMENT_FIELD_NUMBER: _ClassVar[int]
    FLUSHED_FIELD_NUMBER: _ClassVar[int]
    segment: _common_pb2.SegmentInfo
    flushed: bool
    def __init__(self, segment: _Optional[_Union[_common_pb2.SegmentInfo, _Mapping]] = ..., flushed: _Optional[bool] = ...) -> None: ...

class ChannelCheckpoint(_message.Message):
    __slots__ = ("vchannel", "checkpoint")
    VCHANNEL_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_FIELD_NUMBER: _ClassVar[int]
    vchannel: str
    checkpoint: _common_pb2.Position
    def __init__(self, vchannel: _Optional[str] = ..., checkpoint: _Optional[_Union[_common_pb2.Position, _Mapping]] = ...) -> None: ...

class UpdateChannelCheckpointRequest(_message.Message):
    __slots__ = ("checkpoints",)
    CHECKPOINTS_FIELD_NUMBER: _ClassVar[int]
    checkpoints: _containers.RepeatedCompositeFieldContainer[ChannelCheckpoint]
    def __init__(self, checkpoints: _Optional[_Iterable[_Union[ChannelCheckpoint, _Mapping]]] = ...) -> None: ...

class GetChannelRecoveryInfoRequest(_message.Message):
    __slots__ = ("pchannel",)
    PCHANNEL_FIELD_NUMBER: _ClassVar[int]
    pchannel: str
    def __init__(self, pchannel: _Optional[str] = ...) -> None: ...

class VChannelRecovery(_message.Message):
    __slots__ = ("vchannel", "collection_id", "schema_json", "checkpoint", "segments")
    VCHANNEL_FIELD_NUMBER: _ClassVar[int]
    COLLECTION_ID_FIELD_NUMBER: _ClassVar[int]
    SCHEMA_JSON_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_FIELD_NUMBER: _ClassVar[int]
    SEGMENTS_FIELD_NUMBER: _ClassVar[int]
    vchannel: str
    collection_id: int
    schema_json: str
    checkpoint: _common_pb2.Position
    segments: _containers.RepeatedCompositeFieldContainer[_common_pb2.SegmentInfo]
    def __init__(self, vchannel: _Optional[str] = ..., collection_id: _Optional[int] = ..., schema_json: _Optional[str] = ..., checkpoint: _Optional[_Union[_common_pb2.Position, _Mapping]] = ..., segments: _Optional[_Iterable[_Union[_common_pb2.SegmentInfo, _Mapping]]] = ...) -> None: ...

class GetChannelRecoveryInfoResponse(_message.Message):
    __slots__ = ("status", "vchannels")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    VCHANNELS_FIELD_NUMBER: _ClassVar[int]
    status: _common_pb2.Status
    vchannels: _containers.RepeatedCompositeFieldContainer[VChannelRecovery]
    def __init__(self, status: _Optional[_Union[_common_pb2.Status, _Mapping]] = ..., vchannels: _Optional[_Iterable[_Union[VChannelRecovery, _Mapping]]] = ...) -> None: ...

class FlushRequest(_message.Message):
    __slots__ = ("collection",)
    COLLECTION_FIELD_NUMBER: _ClassVar[int]
    collection: CollectionRef
    def __init__(self, collection: _Optional[_Union[CollectionRef, _Mapping]] = ...) -> None: ...

class FlushResponse(_message.Message):
    __slots__ = ("status", "segment_ids", "flush_ts", "db_name")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    SEGMENT_IDS_FIELD_NUMBER: _ClassVar[int]
    FLUSH_TS_FIELD_NUMBER: _ClassVar[int]
    DB_NAME_FIELD_NUMBER: _ClassVar[int]
    status: _common_pb2.Status
    segment_ids: _containers.RepeatedScalarFieldContainer[int]
    flush_ts: int
    db_name: str
    def __init__(self, status: _Optional[_Union[_common_pb2.Status, _Mapping]] = ..., segment_ids: _Optional[_Iterable[int]] = ..., flush_ts: _Optional[int] = ..., db_name: _Optional[str] = ...) -> None: ...

class GetFlushStateRequest(_message.Message):
    __slots__ = ("collection", "segment_ids", "flush_ts", "db_name")
    COLLECTION_FIELD_NUMBER: _ClassVar[int]
    SEGMENT_IDS_FIELD_NUMBER: _ClassVar[int]
    FLUSH_TS_FIELD_NUMBER: _ClassVar[int]
    DB_NAME_FIELD_NUMBER: _ClassVar[int]
    collection: CollectionRef
    segment_ids: _containers.RepeatedScalarFieldContainer[int]
    flush_ts: int
    db_name: str
    def __init__(self, collection: _Optional[_Union[CollectionRef, _Mapping]] = ..., segment_ids: _Optional[_Iterable[int]] = ..., flush_ts: _Optional[int] = ..., db_name: _Optional[str] = ...) -> None: ...

class GetFlushStateResponse(_message.Message):
    __slots__ = ("status", "flushed")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    FLUSHED_FIELD_NUMBER: _ClassVar[int]
    status: _common_pb2.Status
    flushed: bool
    def __init__(self, status: _Optional[_Union[_common_pb2.Status, _Mapping]] = ..., flushed: _Optional[bool] = ...) -> None: ...

class ShardReplica(_message.Message):
    __slots__ = ("vchannel", "leader_id", "leader_address", "node_ids")
    VCHANNEL_FIELD_NUMBER: _ClassVar[int]
    LEADER_ID_FIELD_NUMBER: _ClassVar[int]
    LEADER_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    NODE_IDS_FIELD_NUMBER: _ClassVar[int]
    vchannel: str
    leader_id: int
    leader_address: str
    node_ids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, vchannel: _Optional[str] = ..., leader_id: _Optional[int] = ..., leader_address: _Optional[str] = ..., node_ids: _Optional[_Iterable[int]] = ...) -> None: ...

class ReplicaInfo(_message.Message):
    __slots__ = ("replica_id", "node_ids", "shards")
    REPLICA_ID_FIELD_NUMBER: _ClassVar[int]
    NODE_IDS_FIELD_NUMBER: _ClassVar[int]
    SHARDS_FIELD_NUMBER: _ClassVar[int]
    replica_id: int
    node_ids: _containers.RepeatedScalarFieldContainer[int]
    shards: _containers.RepeatedCompositeFieldContainer[ShardReplica]
    def __init__(self, replica_id: _Optional[int] = ..., node_ids: _Optional[_Iterable[int]] = ..., shards: _Optional[_Iterable[_Union[ShardReplica, _Mapping]]] = ...) -> None: ...

class GetReplicasResponse(_message.Message):
    __slots__ = ("status", "collection_id", "partition_ids", "replicas")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    COLLECTION_ID_FIELD_NUMBER: _ClassVar[int]
    PARTITION_IDS_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    status: _common_pb2.Status
    collection_id: int
    partition_ids: _containers.RepeatedScalarFieldContainer[int]
    replicas: _containers.RepeatedCompositeFieldContainer[ReplicaInfo]
    def __init__(self, status: _Optional[_Union[_common_pb2.Status, _Mapping]] = ..., collection_id: _Optional[int] = ..., partition_ids: _Optional[_Iterable[int]] = ..., replicas: _Optional[_Iterable[_Union[ReplicaInfo, _Mapping]]] = ...) -> None: ...

class CheckHealthRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class CheckHealthResponse(_message.Message):
    __slots__ = ("status", "is_healthy", "reasons")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    IS_HEALTHY_FIELD_NUMBER: _ClassVar[int]
    REASONS_FIELD_NUMBER: _ClassVar[int]
    status: _common_pb2.Status
    is_healthy: bool
    reasons: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, status: _Optional[_Union[_common_pb2.Status, _Mapping]] = ..., is_healthy: _Optional[bool] = ..., reasons: _Optional[_Iterable[str]] = ...) -> None: ...

class QuerySegment(_message.Message):
    __slots__ = ("segment_id", "partition_id", "level", "rows", "node_ids", "index_id", "index_name")
    SEGMENT_ID_FIELD_NUMBER: _ClassVar[int]
    PARTITION_ID_FIELD_NUMBER: _ClassVar[int]
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    NODE_IDS_FIELD_NUMBER: _ClassVar[int]
    INDEX_ID_FIELD_NUMBER: _ClassVar[int]
    INDEX_NAME_FIELD_NUMBER: _ClassVar[int]
    segment_id: int
    partition_id: int
    level: _common_pb2.SegmentLevel
    rows: int
    node_ids: _containers.RepeatedScalarFieldContainer[int]
    index_id: int
    index_name: str
    def __init__(self, segment_id: _Optional[int] = ..., partition_id: _Optional[int] = ..., level: _Optional[_Union[_common_pb2.SegmentLevel, str]] = ..., rows: _Optional[int] = ..., node_ids: _Optional[_Iterable[int]] = ..., index_id: _Optional[int] = ..., index_name: _Optional[str] = ...) -> None: ...

class QuerySegmentsResponse(_message.Message):
    __slots__ = ("status", "collection_id", "segments")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    COLLECTION_ID_FIELD_NUMBER: _ClassVar[int]
    SEGMENTS_FIELD_NUMBER: _ClassVar[int]
    status: _common_pb2.Status
    collection_id: int
    segments: _containers.RepeatedCompositeFieldContainer[QuerySegment]
    def __init__(self, status: _Optional[_Union[_common_pb2.Status, _Mapping]] = ..., collection_id: _Optional[int] = ..., segments: _Optional[_Iterable[_Union[QuerySegment, _Mapping]]] = ...) -> None: ...

class ResourceGroupRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class QueryNodeInfo(_message.Message):
    __slots__ = ("node_id", "address")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    node_id: int
    address: str
    def __init__(self, node_id: _Optional[int] = ..., address: _Optional[str] = ...) -> None: ...

class ResourceGroupResponse(_message.Message):
    __slots__ = ("status", "name", "nodes", "loaded_replicas")
    class LoadedReplicasEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: int
        value: int
        def __init__(self, key: _Optional[int] = ..., value: _Optional[int] = ...) -> None: ...
    STATUS_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    LOADED_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    status: _common_pb2.Status
    name: str
    nodes: _containers.RepeatedCompositeFieldContainer[QueryNodeInfo]
    loaded_replicas: _containers.ScalarMap[int, int]
    def __init__(self, status: _Optional[_Union[_common_pb2.Status, _Mapping]] = ..., name: _Optional[str] = ..., nodes: _Optional[_Iterable[_Union[QueryNodeInfo, _Mapping]]] = ..., loaded_replicas: _Optional[_Mapping[int, int]] = ...) -> None: ...

class FlushAllRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class CollectionFlush(_message.Message):
    __slots__ = ("name", "segment_ids", "flush_ts", "db_name")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SEGMENT_IDS_FIELD_NUMBER: _ClassVar[int]
    FLUSH_TS_FIELD_NUMBER: _ClassVar[int]
    DB_NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    segment_ids: _containers.RepeatedScalarFieldContainer[int]
    flush_ts: int
    db_name: str
    def __init__(self, name: _Optional[str] = ..., segment_ids: _Optional[_Iterable[int]] = ..., flush_ts: _Optional[int] = ..., db_name: _Optional[str] = ...) -> None: ...

class FlushAllResponse(_message.Message):
    __slots__ = ("status", "flush_all_ts", "collections")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    FLUSH_ALL_TS_FIELD_NUMBER: _ClassVar[int]
    COLLECTIONS_FIELD_NUMBER: _ClassVar[int]
    status: _common_pb2.Status
    flush_all_ts: int
    collections: _containers.RepeatedCompositeFieldContainer[CollectionFlush]
    def __init__(self, status: _Optional[_Union[_common_pb2.Status, _Mapping]] = ..., flush_all_ts: _Optional[int] = ..., collections: _Optional[_Iterable[_Union[CollectionFlush, _Mapping]]] = ...) -> None: ...

class GetFlushAllStateRequest(_message.Message):
    __slots__ = ("flush_all_ts",)
    FLUSH_ALL_TS_FIELD_NUMBER: _ClassVar[int]
    flush_all_ts: int
    def __init__(self, flush_all_ts: _Optional[int] = ...) -> None: ...

class GetFlushAllStateResponse(_message.Message):
    __slots__ = ("status", "flushed", "collections")
    class CollectionsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: bool
        def __init__(self, key: _Optional[str] = ..., value: _Optional[bool] = ...) -> None: ...
    STATUS_FIELD_NUMBER: _ClassVar[int]
    FLUSHED_FIELD_NUMBER: _ClassVar[int]
    COLLECTIONS_FIELD_NUMBER: _ClassVar[int]
    status: _common_pb2.Status
    flushed: bool
    collections: _containers.ScalarMap[str, bool]
    def __init__(self, status: _Optional[_Union[_common_pb2.Status, _Mapping]] = ..., flushed: _Optional[bool] = ..., collections: _Optional[_Mapping[str, bool]] = ...) -> None: ...
