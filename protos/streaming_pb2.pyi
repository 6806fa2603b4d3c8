from protos import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class DeliverPolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DELIVER_ALL: _ClassVar[DeliverPolicy]
    DELIVER_LATEST: _ClassVar[DeliverPolicy]
    DELIVER_START_FROM: _ClassVar[DeliverPolicy]
    DELIVER_START_AFTER: _ClassVar[DeliverPolicy]
DELIVER_ALL: DeliverPolicy
DELIVER_LATEST: DeliverPolicy
DELIVER_START_FROM: DeliverPolicy
DELIVER_START_AFTER: DeliverPolicy

class AssignRequest(_message.Message):
    __slots__ = ("pchannel", "term")
    PCHANNEL_FIELD_NUMBER: _ClassVar[int]
    TERM_FIELD_NUMBER: _ClassVar[int]
    pchannel: str
    term: int
    def __init__(self, pchannel: _Optional[str] = ..., term: _Optional[int] = ...) -> None: ...

class AssignResponse(_message.Message):
    __slots__ = ("status",)
    STATUS_FIELD_NUMBER: _ClassVar[int]
    status: _common_pb2.Status
    def __init__(self, status: _Optional[_Union[_common_pb2.Status, _Mapping]] = ...) -> None: ...

class RemoveRequest(_message.Message):
    __slots__ = ("pchannel", "term")
    PCHANNEL_FIELD_NUMBER: _ClassVar[int]
    TERM_FIELD_NUMBER: _ClassVar[int]
    pchannel: str
    term: int
    def __init__(self, pchannel: _Optional[str] = ..., term: _Optional[int] = ...) -> None: ...

class RemoveResponse(_message.Message):
    __slots__ = ("status",)
    STATUS_FIELD_NUMBER: _ClassVar[int]
    status: _common_pb2.Status
    def __init__(self, status: _Optional[_Union[_common_pb2.Status, _Mapping]] = ...) -> None: ...

class CollectStatusRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class WALStatus(_message.Message):
    __slots__ = ("pchannel", "term", "available", "error")
    PCHANNEL_FIELD_NUMBER: _ClassVar[int]
    TERM_FIELD_NUMBER: _ClassVar[int]
    AVAILABLE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    pchannel: str
    term: int
    available: bool
    error: str
    def __init__(self, pchannel: _Optional[str] = ..., term: _Optional[int] = ..., available: _Optional[bool] = ..., error: _Optional[str] = ...) -> None: ...

class CollectStatusResponse(_message.Message):
    __slots__ = ("wals",)
    WALS_FIELD_NUMBER: _ClassVar[int]
    wals: _containers.RepeatedCompositeFieldContainer[WALStatus]
    def __init__(self, wals: _Optional[_Iterable[_Union[WALStatus, _Mapping]]] = ...) -> None: ...

class ProduceRequest(_message.Message):
    __slots__ = ("request_id", "pchannel", "term", "messages", "txn")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    PCHANNEL_FIELD_NUMBER: _ClassVar[int]
    TERM_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    TXN_FIELD_NUMBER: _ClassVar[int]
    request_id: int
    pchannel: str
    term: int
    messages: _containers.RepeatedCompositeFieldContainer[_common_pb2.Message]
    txn: bool
    def __init__(self, request_id: _Optional[int] = ..., pchannel: _Optional[str] = ..., term: _Optional[int] = ..., messages: _Optional[_Iterable[_Union[_common_pb2.Message, _Mapping]]] = ..., txn: _Optional[bool] = ...) -> None: ...

class AppendResult(_message.Message):
    __slots__ = ("message_id", "timetick", "sealed_segment_ids")
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    TIMETICK_FIELD_NUMBER: _ClassVar[int]
    SEALED_SEGMENT_IDS_FIELD_NUMBER: _ClassVar[int]
    message_id: bytes
    timetick: int
    sealed_segment_ids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, message_id: _Optional[bytes] = ..., timetick: _Optional[int] = ..., sealed_segment_ids: _Optional[_Iterable[int]] = ...) -> None: ...

class ProduceResponse(_message.Message):
    __slots__ = ("request_id", "status", "results")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    request_id: int
    status: _common_pb2.Status
    results: _containers.RepeatedCompositeFieldContainer[AppendResult]
    def __init__(self, request_id: _Optional[int] = ..., status: _Optional[_Union[_common_pb2.Status, _Mapping]] = ..., results: _Optional[_Iterable[_Union[AppendResult, _Mapping]]] = ...) -> None: ...

class ConsumeRequest(_message.Message):
    __slots__ = ("pchannel", "term", "vchannel", "policy", "message_id")
    PCHANNEL_FIELD_NUMBER: _ClassVar[int]
    TERM_FIELD_NUMBER: _ClassVar[int]
    VCHANNEL_FIELD_NUMBER: _ClassVar[int]
    POLICY_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    pchannel: str
    term: int
    vchannel: str
    policy: DeliverPolicy
    message_id: bytes
    def __init__(self, pchannel: _Optional[str] = ..., term: _Optional[int] = ..., vchannel: _Optional[str] = ..., policy: _Optional[_Union[DeliverPolicy, str]] = ..., message_id: _Optional[bytes] = ...) -> None: ...

class ConsumedMessage(_message.Message):
    __slots__ = ("message_id", "message")
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    message_id: bytes
    message: _common_pb2.Message
    def __init__(self, message_id: _Optional[bytes] = ..., message: _Optional[_Union[_common_pb2.Message, _Mapping]] = ...) -> None: ...

class ConsumeResponse(_message.Message):
    __slots__ = ("status", "messages")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    status: _common_pb2.Status
    messages: _containers.RepeatedCompositeFieldContainer[ConsumedMessage]
    def __init__(self, status: _Optional[_Union[_common_pb2.Status, _Mapping]] = ..., messages: _Optional[_Iterable[_Union[ConsumedMessage, _Mapping]]] = ...) -> None: ...

class GetCollectionRowsRequest(_message.Message):
    __slots__ = ("pchannel", "term", "collection_id")
    PCHANNEL_FIELD_NUMBER: _ClassVar[int]
    TERM_FIELD_NUMBER: _ClassVar[int]
    COLLECTION_ID_FIELD_NUMBER: _ClassVar[int]
    pchannel: str
    term: int
    collection_id: int
    def __init__(self, pchannel: _Optional[str] = ..., term: _Optional[int] = ..., collection_id: _Optional[int] = ...) -> None: ...

class GetCollectionRowsResponse(_message.Message):
    __slots__ = ("status", "rows")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    status: _common_pb2.Status
    rows: int
    def __init__(self, status: _Optional[_Union[_common_pb2.Status, _Mapping]] = ..., rows: _Optional[int] = ...) -> None: ...

class RequestTimeTickRequest(_message.Message):
    __slots__ = ("pchannel", "term", "timestamp")
    PCHANNEL_FIELD_NUMBER: _ClassVar[int]
    TERM_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    pchannel: str
    term: int
    timestamp: int
    def __init__(self, pchannel: _Optional[str] = ..., term: _Optional[int] = ..., timestamp: _Optional[int] = ...) -> None: ...

class RequestTimeTickResponse(_message.Message):
    __slots__ = ("status", "timetick")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    TIMETICK_FIELD_NUMBER: _ClassVar[int]
    status: _common_pb2.Status
    timetick: int
    def __init__(self, status: _Optional[_Union[_common_pb2.Status, _Mapping]] = ..., timetick: _Optional[int] = ...) -> None: ...
