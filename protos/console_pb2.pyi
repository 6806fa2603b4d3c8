from protos import common_pb2 as _common_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ViewRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class ViewResponse(_message.Message):
    __slots__ = ("status", "json")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    JSON_FIELD_NUMBER: _ClassVar[int]
    status: _common_pb2.Status
    json: str
    def __init__(self, status: _Optional[_Union[_common_pb2.Status, _Mapping]] = ..., json: _Optional[str] = ...) -> None: ...
