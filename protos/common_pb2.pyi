from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class MessageType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MESSAGE_TYPE_UNKNOWN: _ClassVar[MessageType]
    TIME_TICK: _ClassVar[MessageType]
    INSERT: _ClassVar[MessageType]
    DELETE: _ClassVar[MessageType]
    FLUSH: _ClassVar[MessageType]
    CREATE_COLLECTION: _ClassVar[MessageType]
    DROP_COLLECTION: _ClassVar[MessageType]
    CREATE_PARTITION: _ClassVar[MessageType]
    DROP_PARTITION: _ClassVar[MessageType]
    MANUAL_FLUSH: _ClassVar[MessageType]
    CREATE_SEGMENT: _ClassVar[MessageType]
    IMPORT: _ClassVar[MessageType]
    SCHEMA_CHANGE: _ClassVar[MessageType]

class SegmentState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SEGMENT_STATE_NONE: _ClassVar[SegmentState]
    GROWING: _ClassVar[SegmentState]
    SEALED: _ClassVar[SegmentState]
    FLUSHED: _ClassVar[SegmentState]
    FLUSHING: _ClassVar[SegmentState]
    DROPPED: _ClassVar[SegmentState]

class SegmentLevel(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SEGMENT_LEVEL_UNKNOWN: _ClassVar[SegmentLevel]
    L0: _ClassVar[SegmentLevel]
    L1: _ClassVar[SegmentLevel]
MESSAGE_TYPE_UNKNOWN: MessageType
TIME_TICK: MessageType
INSERT: MessageType
DELETE: MessageType
FLUSH: MessageType
CREATE_COLLECTION: MessageType
DROP_COLLECTION: MessageType
CREATE_PARTITION: MessageType
DROP_PARTITION: MessageType
MANUAL_FLUSH: MessageType
CREATE_SEGMENT: MessageType
IMPORT: MessageType
SCHEMA_CHANGE: MessageType
SEGMENT_STATE_NONE: SegmentState
GROWING: SegmentState
SEALED: SegmentState
FLUSHED: SegmentState
FLUSHING: SegmentState
DROPPED: SegmentState
SEGMENT_LEVEL_UNKNOWN: SegmentLevel
L0: SegmentLevel
L1: SegmentLevel

class Status(_message.Message):
    __slots__ = ("code", "reason")
    CODE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    code: int
    reason: str
    def __init__(self, code: _Optional[int] = ..., reason: _Optional[str] = ...) -> None: ...

class Message(_message.Message):
    __slots__ = ("type", "vchannel", "timetick", "last_confirmed", "wal_term", "header", "body", "properties")
    class PropertiesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    TYPE_FIELD_NUMBER: _ClassVar[int]
    VCHANNEL_FIELD_NUMBER: _ClassVar[int]
    TIMETICK_FIELD_NUMBER: _ClassVar[int]
    LAST_CONFIRMED_FIELD_NUMBER: _ClassVar[int]
    WAL_TERM_FIELD_NUMBER: _ClassVar[int]
    HEADER_FIELD_NUMBER: _ClassVar[int]
    BODY_FIELD_NUMBER: _ClassVar[int]
    PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    type: MessageType
    vchannel: str
    timetick: int
    last_confirmed: bytes
    wal_term: int
    header: bytes
    body: bytes
    properties: _containers.ScalarMap[str, str]
    def __init__(self, type: _Optional[_Union[MessageType, str]] = ..., vchannel: _Optional[str] = ..., timetick: _Optional[int] = ..., last_confirmed: _Optional[bytes] = ..., wal_term: _Optional[int] = ..., header: _Optional[bytes] = ..., body: _Optional[bytes] = ..., properties: _Optional[_Mapping[str, str]] = ...) -> None: ...

class Position(_message.Message):
    __slots__ = ("message_id", "timetick")
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    TIMETICK_FIELD_NUMBER: _ClassVar[int]
    message_id: bytes
    timetick: int
    def __init__(self, message_id: _Optional[bytes] = ..., timetick: _Optional[int] = ...) -> None: ...

class SegmentInfo(_message.Message):
    __slots__ = ("segment_id", "collection_id", "partition_id", "vchannel", "state", "level", "rows", "manifest", "start_position", "position")
    SEGMENT_ID_FIELD_NUMBER: _ClassVar[int]
    COLLECTION_ID_FIELD_NUMBER: _ClassVar[int]
    PARTITION_ID_FIELD_NUMBER: _ClassVar[int]
    VCHANNEL_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    MANIFEST_FIELD_NUMBER: _ClassVar[int]
    START_POSITION_FIELD_NUMBER: _ClassVar[int]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    segment_id: int
    collection_id: int
    partition_id: int
    vchannel: str
    state: SegmentState
    level: SegmentLevel
    rows: int
    manifest: str
    start_position: Position
    position: Position
    def __init__(self, segment_id: _Optional[int] = ..., collection_id: _Optional[int] = ..., partition_id: _Optional[int] = ..., vchannel: _Optional[str] = ..., state: _Optional[_Union[SegmentState, str]] = ..., level: _Optional[_Union[SegmentLevel, str]] = ..., rows: _Optional[int] = ..., manifest: _Optional[str] = ..., start_position: _Optional[_Union[Position, _Mapping]] = ..., position: _Optional[_Union[Position, _Mapping]] = ...) -> None: ...
