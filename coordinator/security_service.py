"""The coordinator's ``strata.security.Security`` service: protobuf in, ``Credentials`` calls out."""

from __future__ import annotations

from typing import TypeAlias

import grpc

from common.grpcutil import ok_status, rpc_method
from common.rbac.backup import BackedUpUser, RBACBackup
from coordinator.credentials import Credentials, grant_from
from protos import security_pb2 as spb
from protos import security_pb2_grpc

_Ctx: TypeAlias = grpc.aio.ServicerContext


def _ok() -> spb.SecurityResponse:
    return spb.SecurityResponse(status=ok_status())


class SecurityService(security_pb2_grpc.SecurityServicer):
    def __init__(self, credentials: Credentials) -> None:
        self._c = credentials

    @rpc_method(spb.SecurityResponse)
    async def CreateUser(self, request: spb.UserRequest, context: _Ctx) -> spb.SecurityResponse:
        await self._c.create_user(request.user, request.password_hash, request.description)
        return _ok()

    @rpc_method(spb.SecurityResponse)
    async def UpdateUser(self, request: spb.UserRequest, context: _Ctx) -> spb.SecurityResponse:
        await self._c.update_user(request.user, request.password_hash, request.description, request.expected_hash)
        return _ok()

    @rpc_method(spb.SecurityResponse)
    async def DropUser(self, request: spb.UserRef, context: _Ctx) -> spb.SecurityResponse:
        await self._c.drop_user(request.user)
        return _ok()

    @rpc_method(spb.SecurityResponse)
    async def CreateRole(self, request: spb.RoleRequest, context: _Ctx) -> spb.SecurityResponse:
        await self._c.create_role(request.role, request.description)
        return _ok()

    @rpc_method(spb.SecurityResponse)
    async def AlterRole(self, request: spb.RoleRequest, context: _Ctx) -> spb.SecurityResponse:
        await self._c.alter_role(request.role, request.description)
        return _ok()

    @rpc_method(spb.SecurityResponse)
    async def DropRole(self, request: spb.RoleRequest, context: _Ctx) -> spb.SecurityResponse:
        await self._c.drop_role(request.role, force=request.force_drop)
        return _ok()

    @rpc_method(spb.SecurityResponse)
    async def OperateUserRole(self, request: spb.UserRoleRequest, context: _Ctx) -> spb.SecurityResponse:
        await self._c.operate_user_role(request.user, request.role, remove=request.remove)
        return _ok()

    @rpc_method(spb.SecurityResponse)
    async def OperatePrivilege(self, request: spb.GrantRequest, context: _Ctx) -> spb.SecurityResponse:
        g = request.grant
        grant = grant_from(g.role, g.object_type, g.db_name, g.object_name, g.privilege, g.grantor)
        await self._c.operate_privilege(grant, revoke=request.revoke)
        return _ok()

    @rpc_method(spb.SecurityResponse)
    async def CreatePrivilegeGroup(self, request: spb.PrivilegeGroupRequest, context: _Ctx) -> spb.SecurityResponse:
        await self._c.create_group(request.group)
        return _ok()

    @rpc_method(spb.SecurityResponse)
    async def DropPrivilegeGroup(self, request: spb.PrivilegeGroupRequest, context: _Ctx) -> spb.SecurityResponse:
        await self._c.drop_group(request.group)
        return _ok()

    @rpc_method(spb.SecurityResponse)
    async def OperatePrivilegeGroup(self, request: spb.PrivilegeGroupRequest, context: _Ctx) -> spb.SecurityResponse:
        await self._c.operate_group(request.group, list(request.privileges), remove=request.remove)
        return _ok()

    @rpc_method(spb.SecurityResponse)
    async def RestoreRBAC(self, request: spb.RestoreRequest, context: _Ctx) -> spb.SecurityResponse:
        await self._c.restore(backup_from(request))
        return _ok()


def backup_from(request: spb.RestoreRequest) -> RBACBackup:
    """The domain form of a restore request; an unknown object type is ``InvalidArgument``."""
    return RBACBackup(
        roles=tuple((r.role, r.description) for r in request.roles),
        groups=tuple((g.group, frozenset(g.privileges)) for g in request.groups),
        grants=tuple(grant_from(g.role, g.object_type, g.db_name, g.object_name, g.privilege, g.grantor)
                     for g in request.grants),
        users=tuple(BackedUpUser(name=u.user, password_hash=u.password_hash, roles=tuple(u.roles))
                    for u in request.users),
    )
