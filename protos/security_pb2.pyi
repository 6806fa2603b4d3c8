from protos import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SecurityResponse(_message.Message):
    __slots__ = ("status",)
    STATUS_FIELD_NUMBER: _ClassVar[int]
    status: _common_pb2.Status
    def __init__(self, status: _Optional[_Union[_common_pb2.Status, _Mapping]] = ...) -> None: ...

class UserRequest(_message.Message):
    __slots__ = ("user", "password_hash", "description", "expected_hash")
    USER_FIELD_NUMBER: _ClassVar[int]
    PASSWORD_HASH_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_HASH_FIELD_NUMBER: _ClassVar[int]
    user: str
    password_hash: str
    description: str
    expected_hash: str
    def __init__(self, user: _Optional[str] = ..., password_hash: _Optional[str] = ..., description: _Optional[str] = ..., expected_hash: _Optional[str] = ...) -> None: ...

class UserRef(_message.Message):
    __slots__ = ("user",)
    USER_FIELD_NUMBER: _ClassVar[int]
    user: str
    def __init__(self, user: _Optional[str] = ...) -> None: ...

class RoleRequest(_message.Message):
    __slots__ = ("role", "description", "force_drop")
    ROLE_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    FORCE_DROP_FIELD_NUMBER: _ClassVar[int]
    role: str
    description: str
    force_drop: bool
    def __init__(self, role: _Optional[str] = ..., description: _Optional[str] = ..., force_drop: _Optional[bool] = ...) -> None: ...

class UserRoleRequest(_message.Message):
    __slots__ = ("user", "role", "remove")
    USER_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    REMOVE_FIELD_NUMBER: _ClassVar[int]
    user: str
    role: str
    remove: bool
    def __init__(self, user: _Optional[str] = ..., role: _Optional[str] = ..., remove: _Optional[bool] = ...) -> None: ...

class Grant(_message.Message):
    __slots__ = ("role", "object_type", "db_name", "object_name", "privilege", "grantor")
    ROLE_FIELD_NUMBER: _ClassVar[int]
    OBJECT_TYPE_FIELD_NUMBER: _ClassVar[int]
    DB_NAME_FIELD_NUMBER: _ClassVar[int]
    OBJECT_NAME_FIELD_NUMBER: _ClassVar[int]
    PRIVILEGE_FIELD_NUMBER: _ClassVar[int]
    GRANTOR_FIELD_NUMBER: _ClassVar[int]
    role: str
    object_type: str
    db_name: str
    object_name: str
    privilege: str
    grantor: str
    def __init__(self, role: _Optional[str] = ..., object_type: _Optional[str] = ..., db_name: _Optional[str] = ..., object_name: _Optional[str] = ..., privilege: _Optional[str] = ..., grantor: _Optional[str] = ...) -> None: ...

class GrantRequest(_message.Message):
    __slots__ = ("grant", "revoke")
    GRANT_FIELD_NUMBER: _ClassVar[int]
    REVOKE_FIELD_NUMBER: _ClassVar[int]
    grant: Grant
    revoke: bool
    def __init__(self, grant: _Optional[_Union[Grant, _Mapping]] = ..., revoke: _Optional[bool] = ...) -> None: ...

class PrivilegeGroupRequest(_message.Message):
    __slots__ = ("group", "privileges", "remove")
    GROUP_FIELD_NUMBER: _ClassVar[int]
    PRIVILEGES_FIELD_NUMBER: _ClassVar[int]
    REMOVE_FIELD_NUMBER: _ClassVar[int]
    group: str
    privileges: _containers.RepeatedScalarFieldContainer[str]
    remove: bool
    def __init__(self, group: _Optional[str] = ..., privileges: _Optional[_Iterable[str]] = ..., remove: _Optional[bool] = ...) -> None: ...

class RestoredUser(_message.Message):
    __slots__ = ("user", "password_hash", "roles")
    USER_FIELD_NUMBER: _ClassVar[int]
    PASSWORD_HASH_FIELD_NUMBER: _ClassVar[int]
    ROLES_FIELD_NUMBER: _ClassVar[int]
    user: str
    password_hash: str
    roles: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, user: _Optional[str] = ..., password_hash: _Optional[str] = ..., roles: _Optional[_Iterable[str]] = ...) -> None: ...

class RestoreRequest(_message.Message):
    __slots__ = ("roles", "groups", "grants", "users")
    ROLES_FIELD_NUMBER: _ClassVar[int]
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    GRANTS_FIELD_NUMBER: _ClassVar[int]
    USERS_FIELD_NUMBER: _ClassVar[int]
    roles: _containers.RepeatedCompositeFieldContainer[RoleRequest]
    groups: _containers.RepeatedCompositeFieldContainer[PrivilegeGroupRequest]
    grants: _containers.RepeatedCompositeFieldContainer[Grant]
    users: _containers.RepeatedCompositeFieldContainer[RestoredUser]
    def __init__(self, roles: _Optional[_Iterable[_Union[RoleRequest, _Mapping]]] = ..., groups: _Optional[_Iterable[_Union[PrivilegeGroupRequest, _Mapping]]] = ..., grants: _Optional[_Iterable[_Union[Grant, _Mapping]]] = ..., users: _Optional[_Iterable[_Union[RestoredUser, _Mapping]]] = ...) -> None: ...
