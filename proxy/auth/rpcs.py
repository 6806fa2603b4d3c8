"""The Milvus RPCs of users, roles, grants and privilege groups (mixed into ``MilvusProxy``).

Changes go to the coordinator (``strata.security.Security``), which checks and stores them; the
proxy then reloads its copy (``state.py``) before answering, so the caller sees its change at
once (other proxies see it through their watch). Reads answer from that copy. Passwords arrive
base64-encoded as pymilvus sends them, are checked for length here, and leave this process only
as bcrypt hashes; they are never logged.
"""

from __future__ import annotations

from typing import Any, TypeAlias

import grpc
import structlog
from pymilvus.grpc_gen import common_pb2, milvus_pb2

from common.coordclient import CoordinatorClient
from common.errors import ErrorCode, InvalidArgument, PrivilegeNotPermitted, StrataError
from common.rbac.catalog import Grant
from common.rbac.names import check_password, check_role_name, check_user_name
from common.rbac.privileges import (
    ANY,
    BUILTIN_GROUPS,
    ROLE_ADMIN,
    ROOT_USER,
    ObjectType,
    level_of,
    normalize_privilege,
)
from common.rpcstatus import type_and_message
from protos import security_pb2 as spb
from protos import security_pb2_grpc
from proxy.auth.authenticator import Authenticator, decode_password
from proxy.auth.interceptor import CURRENT_USER, DEFAULT_DB
from proxy.auth.state import SecurityStateCache
from proxy.auth.visibility import Visible, visible_collections, visible_databases
from proxy.parts import ProxyParts
from proxy.rpc import milvus_rpc
from proxy.status import success

_Ctx: TypeAlias = grpc.aio.ServicerContext
_log = structlog.get_logger().bind(component="proxy-security")
COORDINATOR_TIMEOUT = 30.0


class Security:
    """What the RBAC RPCs work with: the coordinator, the state copy and the authenticator.

    ``super_users``: ``common.security.superUsers``, users who may set another user's password
    without giving the old one (as in Milvus, the only check they skip).
    """

    def __init__(
        self,
        coord: CoordinatorClient,
        states: SecurityStateCache,
        authenticator: Authenticator,
        *,
        super_users: frozenset[str] = frozenset(),
    ) -> None:
        self.coord = coord
        self.states = states
        self.authenticator = authenticator
        self.super_users = super_users

    def visible_collections(self, db_name: str) -> Visible:
        """The collections of ``db_name`` the caller sees listed (None: all; always all with authorization off)."""
        user = CURRENT_USER.get()
        return None if user is None else visible_collections(self.states.state, user, db_name)

    def require_visible(self, collection: str, db_name: str) -> None:
        """Refuse a collection of ``db_name`` the caller would not see listed, as Milvus 2.6's root
        coordinator refuses ``DescribeCollection`` of it (code 1401, its text); a no-op with
        authorization off, for ``root`` and for ``admin``."""
        visible = self.visible_collections(db_name)
        if visible is not None and collection not in visible:
            raise PrivilegeNotPermitted(
                f"not allowed to access collection, collection name: {collection}: privilege not permitted"
            )

    def visible_databases(self) -> Visible:
        """The databases the caller sees listed (None: all; always all with authorization off)."""
        user = CURRENT_USER.get()
        return None if user is None else visible_databases(self.states.state, user)

    async def collections_changed(self) -> None:
        """Reload the state copy after a DDL the coordinator follows by moving or revoking grants
        (a collection renamed or dropped; it does so before it answers), so the caller's next call
        meets the grants as they are now rather than when this proxy's watch brings the change. A
        reload that fails is logged, not raised: the DDL is done, and the watch catches up."""
        try:
            await self.states.reload()
        except Exception as err:  # the DDL succeeded; its answer must not say otherwise
            _log.warning("security state reload after a collection change failed", error=type_and_message(err))

    async def change(self, method: str, request: Any) -> None:
        """Call the coordinator's ``method`` (a checked stub: a refusal raises its error), then reload the state copy."""
        stub: Any = await self.coord.stub_of(security_pb2_grpc.SecurityStub)
        await getattr(stub, method)(request, timeout=COORDINATOR_TIMEOUT)
        await self.states.reload()


def _password(raw: str, what: str) -> str:
    try:
        return decode_password(raw)
    except ValueError:
        raise InvalidArgument(f"decode {what} fail") from None


def _caller() -> str:
    return CURRENT_USER.get() or ROOT_USER  # authorization off: nobody to tell apart


class SecurityRPCs(ProxyParts):
    def attach_security(self, security: Security) -> None:
        self._security = security

    # ---- users ---------------------------------------------------------------------------------
    @milvus_rpc(common_pb2.Status)
    async def CreateCredential(self, request: milvus_pb2.CreateCredentialRequest, context: _Ctx) -> common_pb2.Status:
        check_user_name(request.username)
        password = _password(request.password, "password")
        check_password(password)
        hashed = await self._security.authenticator.hash(password)
        await self._security.change(
            "CreateUser", spb.UserRequest(user=request.username, password_hash=hashed, description=request.description)
        )
        return success()

    @milvus_rpc(common_pb2.Status)
    async def UpdateCredential(self, request: milvus_pb2.UpdateCredentialRequest, context: _Ctx) -> common_pb2.Status:
        sec = self._security
        check_user_name(request.username)
        record = sec.states.state.users.get(request.username)
        if record is None:
            raise StrataError(f"user not found:{request.username}", ErrorCode.REFUSED)
        hashed = ""
        if request.newPassword or request.oldPassword:
            old = _password(request.oldPassword, "old password")
            new = _password(request.newPassword, "new password")
            check_password(new)
            caller = _caller()
            privileged = (caller == ROOT_USER or ROLE_ADMIN in sec.states.state.roles_of(caller)
                          or caller in sec.super_users)
            if not privileged and not await sec.authenticator.verify(request.username, old):
                raise StrataError("old password not correct for " + request.username, ErrorCode.REFUSED)
            hashed = await sec.authenticator.hash(new)
        await sec.change(
            "UpdateUser",
            spb.UserRequest(user=request.username, password_hash=hashed, description=request.description,
                            expected_hash=record.password_hash),
        )
        return success()

    @milvus_rpc(common_pb2.Status)
    async def DeleteCredential(self, request: milvus_pb2.DeleteCredentialRequest, context: _Ctx) -> common_pb2.Status:
        if request.username == ROOT_USER:
            raise InvalidArgument("root user cannot be deleted")
        if CURRENT_USER.get() == request.username:
            raise InvalidArgument("user can't delete oneself")
        await self._security.change("DropUser", spb.UserRef(user=request.username))
        return success()

    @milvus_rpc(milvus_pb2.ListCredUsersResponse)
    async def ListCredUsers(self, request: milvus_pb2.ListCredUsersRequest, context: _Ctx) -> milvus_pb2.ListCredUsersResponse:
        return milvus_pb2.ListCredUsersResponse(status=success(), usernames=sorted(self._security.states.state.users))

    @milvus_rpc(milvus_pb2.SelectUserResponse)
    async def SelectUser(self, request: milvus_pb2.SelectUserRequest, context: _Ctx) -> milvus_pb2.SelectUserResponse:
        state = self._security.states.state
        names = [request.user.name] if request.HasField("user") and request.user.name else sorted(state.users)
        results = []
        for name in names:
            record = state.users.get(name)
            if record is None:
                continue  # Milvus: an unknown user is an empty answer
            roles = [milvus_pb2.RoleEntity(name=r) for r in sorted(state.roles_of(name))] if request.include_role_info else []
            results.append(milvus_pb2.UserResult(user=milvus_pb2.UserEntity(name=name), roles=roles,
                                                 description=record.description))
        return milvus_pb2.SelectUserResponse(status=success(), results=results)

    # ---- roles ---------------------------------------------------------------------------------
    @milvus_rpc(common_pb2.Status)
    async def CreateRole(self, request: milvus_pb2.CreateRoleRequest, context: _Ctx) -> common_pb2.Status:
        check_role_name(request.entity.name)
        await self._security.change(
            "CreateRole", spb.RoleRequest(role=request.entity.name, description=request.entity.description)
        )
        return success()

    @milvus_rpc(common_pb2.Status)
    async def AlterRole(self, request: milvus_pb2.AlterRoleRequest, context: _Ctx) -> common_pb2.Status:
        await self._security.change("AlterRole", spb.RoleRequest(role=request.role_name, description=request.description))
        return success()

    @milvus_rpc(common_pb2.Status)
    async def DropRole(self, request: milvus_pb2.DropRoleRequest, context: _Ctx) -> common_pb2.Status:
        await self._security.change("DropRole", spb.RoleRequest(role=request.role_name, force_drop=request.force_drop))
        return success()

    @milvus_rpc(common_pb2.Status)
    async def OperateUserRole(self, request: milvus_pb2.OperateUserRoleRequest, context: _Ctx) -> common_pb2.Status:
        remove = request.type == milvus_pb2.RemoveUserFromRole
        await self._security.change(
            "OperateUserRole", spb.UserRoleRequest(user=request.username, role=request.role_name, remove=remove)
        )
        return success()

    @milvus_rpc(milvus_pb2.SelectRoleResponse)
    async def SelectRole(self, request: milvus_pb2.SelectRoleRequest, context: _Ctx) -> milvus_pb2.SelectRoleResponse:
        state = self._security.states.state
        names = [request.role.name] if request.HasField("role") and request.role.name else sorted(state.roles)
        results = []
        for name in names:
            if name not in state.roles:
                continue  # Milvus: an unknown role is an empty answer
            users = [milvus_pb2.UserEntity(name=u) for u in state.users_of(name)] if request.include_user_info else []
            role = milvus_pb2.RoleEntity(name=name, description=state.roles[name])
            results.append(milvus_pb2.RoleResult(role=role, users=users))
        return milvus_pb2.SelectRoleResponse(status=success(), results=results)

    # ---- grants --------------------------------------------------------------------------------
    async def _operate(self, grant: Grant, *, revoke: bool) -> None:
        await self._security.change(
            "OperatePrivilege",
            spb.GrantRequest(
                grant=spb.Grant(role=grant.role, object_type=grant.object_type.value, db_name=grant.db_name,
                                object_name=grant.object_name, privilege=grant.privilege, grantor=grant.grantor),
                revoke=revoke,
            ),
        )

    @milvus_rpc(common_pb2.Status)
    async def OperatePrivilege(self, request: milvus_pb2.OperatePrivilegeRequest, context: _Ctx) -> common_pb2.Status:
        e = request.entity
        if not e.object_name:
            raise InvalidArgument("the object name in the grant entity is empty")
        try:
            otype = ObjectType(e.object.name)
        except ValueError:
            raise InvalidArgument(f"not found the object type[name: {e.object.name}]") from None
        grant = Grant(role=e.role.name, object_type=otype, db_name=e.db_name or DEFAULT_DB, object_name=e.object_name,
                      privilege=normalize_privilege(e.grantor.privilege.name), grantor=_caller())
        await self._operate(grant, revoke=request.type == milvus_pb2.Revoke)
        return success()

    @milvus_rpc(common_pb2.Status)
    async def OperatePrivilegeV2(self, request: milvus_pb2.OperatePrivilegeV2Request, context: _Ctx) -> common_pb2.Status:
        privilege = normalize_privilege(request.grantor.privilege.name)
        collection = request.collection_name or ANY
        if collection != ANY:
            otype = ObjectType.COLLECTION
        else:
            otype = level_of(privilege) or ObjectType.GLOBAL
        grant = Grant(role=request.role.name, object_type=otype, db_name=request.db_name or DEFAULT_DB,
                      object_name=collection, privilege=privilege, grantor=_caller())
        await self._operate(grant, revoke=request.type == milvus_pb2.Revoke)
        return success()

    @milvus_rpc(milvus_pb2.SelectGrantResponse)
    async def SelectGrant(self, request: milvus_pb2.SelectGrantRequest, context: _Ctx) -> milvus_pb2.SelectGrantResponse:
        state = self._security.states.state
        e = request.entity
        if e.role.name not in state.roles:
            raise StrataError(f"not found the role, maybe the role isn't existed or internal system error: {e.role.name}",
                              ErrorCode.REFUSED)
        entities = [
            milvus_pb2.GrantEntity(
                role=milvus_pb2.RoleEntity(name=g.role),
                object=milvus_pb2.ObjectEntity(name=g.object_type.value),
                object_name=g.object_name,
                db_name=g.db_name,
                grantor=milvus_pb2.GrantorEntity(
                    user=milvus_pb2.UserEntity(name=g.grantor), privilege=milvus_pb2.PrivilegeEntity(name=g.privilege)
                ),
            )
            for g in sorted(state.grants_of(e.role.name), key=lambda g: g.key)
            if (not e.object.name or g.object_type.value == e.object.name)
            and (not e.object_name or g.object_name == e.object_name)
            and (not e.db_name or g.db_name in (e.db_name, ANY))
        ]
        return milvus_pb2.SelectGrantResponse(status=success(), entities=entities)

    # ---- privilege groups ----------------------------------------------------------------------
    @milvus_rpc(common_pb2.Status)
    async def CreatePrivilegeGroup(self, request: milvus_pb2.CreatePrivilegeGroupRequest, context: _Ctx) -> common_pb2.Status:
        await self._security.change("CreatePrivilegeGroup", spb.PrivilegeGroupRequest(group=request.group_name))
        return success()

    @milvus_rpc(common_pb2.Status)
    async def DropPrivilegeGroup(self, request: milvus_pb2.DropPrivilegeGroupRequest, context: _Ctx) -> common_pb2.Status:
        await self._security.change("DropPrivilegeGroup", spb.PrivilegeGroupRequest(group=request.group_name))
        return success()

    @milvus_rpc(milvus_pb2.ListPrivilegeGroupsResponse)
    async def ListPrivilegeGroups(
        self, request: milvus_pb2.ListPrivilegeGroupsRequest, context: _Ctx
    ) -> milvus_pb2.ListPrivilegeGroupsResponse:
        groups = {**self._security.states.state.groups, **BUILTIN_GROUPS}
        infos = [
            milvus_pb2.PrivilegeGroupInfo(
                group_name=name, privileges=[milvus_pb2.PrivilegeEntity(name=p) for p in sorted(privileges)]
            )
            for name, privileges in sorted(groups.items())
        ]
        return milvus_pb2.ListPrivilegeGroupsResponse(status=success(), privilege_groups=infos)

    @milvus_rpc(common_pb2.Status)
    async def OperatePrivilegeGroup(self, request: milvus_pb2.OperatePrivilegeGroupRequest, context: _Ctx) -> common_pb2.Status:
        privileges = [normalize_privilege(p.name) for p in request.privileges]
        if not privileges:
            raise InvalidArgument("no privileges to add to or remove from the group")
        remove = request.type == milvus_pb2.RemovePrivilegesFromGroup
        await self._security.change(
            "OperatePrivilegeGroup", spb.PrivilegeGroupRequest(group=request.group_name, privileges=privileges, remove=remove)
        )
        return success()


