"""``/v2/vectordb/users/*`` and ``/v2/vectordb/roles/*``: users, roles and grants.

Passwords travel base64-encoded in the gRPC requests, as pymilvus sends them.
"""

from __future__ import annotations

import base64
from typing import Any

from pymilvus.grpc_gen import milvus_pb2

from proxy.http.body import Body
from proxy.http.invoke import Call
from proxy.http.reply import Route


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


async def list_users(call: Call, body: Body) -> Any:
    return list((await call("ListCredUsers", milvus_pb2.ListCredUsersRequest())).usernames)


async def describe_user(call: Call, body: Body) -> Any:
    request = milvus_pb2.SelectUserRequest(user=milvus_pb2.UserEntity(name=body.name("userName")), include_role_info=True)
    resp = await call("SelectUser", request)
    return [role.name for result in resp.results for role in result.roles]


async def create_user(call: Call, body: Body) -> Any:
    await call("CreateCredential", milvus_pb2.CreateCredentialRequest(
        username=body.name("userName"), password=_b64(body.name("password"))))
    return {}


async def update_password(call: Call, body: Body) -> Any:
    await call("UpdateCredential", milvus_pb2.UpdateCredentialRequest(
        username=body.name("userName"), oldPassword=_b64(body.name("password")),
        newPassword=_b64(body.name("newPassword"))))
    return {}


async def drop_user(call: Call, body: Body) -> Any:
    await call("DeleteCredential", milvus_pb2.DeleteCredentialRequest(username=body.name("userName")))
    return {}


async def _user_role(call: Call, body: Body, op: int) -> Any:
    await call("OperateUserRole", milvus_pb2.OperateUserRoleRequest(
        username=body.name("userName"), role_name=body.name("roleName"), type=op))
    return {}


async def grant_role(call: Call, body: Body) -> Any:
    return await _user_role(call, body, milvus_pb2.AddUserToRole)


async def revoke_role(call: Call, body: Body) -> Any:
    return await _user_role(call, body, milvus_pb2.RemoveUserFromRole)


async def list_roles(call: Call, body: Body) -> Any:
    resp = await call("SelectRole", milvus_pb2.SelectRoleRequest())
    return [r.role.name for r in resp.results]


async def describe_role(call: Call, body: Body) -> Any:
    request = milvus_pb2.SelectGrantRequest(entity=milvus_pb2.GrantEntity(role=milvus_pb2.RoleEntity(name=body.name("roleName"))))
    resp = await call("SelectGrant", request)
    return [
        {"dbName": g.db_name, "grantor": g.grantor.user.name, "objectName": g.object_name,
         "objectType": g.object.name, "privilege": g.grantor.privilege.name}
        for g in resp.entities
    ]


async def create_role(call: Call, body: Body) -> Any:
    await call("CreateRole", milvus_pb2.CreateRoleRequest(entity=milvus_pb2.RoleEntity(name=body.name("roleName"))))
    return {}


async def drop_role(call: Call, body: Body) -> Any:
    await call("DropRole", milvus_pb2.DropRoleRequest(role_name=body.name("roleName")))
    return {}


async def _privilege(call: Call, body: Body, op: int) -> Any:
    """``{"roleName", "objectType", "objectName", "privilege", "dbName"}``, as OperatePrivilege."""
    entity = milvus_pb2.GrantEntity(
        role=milvus_pb2.RoleEntity(name=body.name("roleName")),
        object=milvus_pb2.ObjectEntity(name=body.name("objectType")),
        object_name=body.name("objectName"),
        db_name=body.text("dbName", "default") or "default",
        grantor=milvus_pb2.GrantorEntity(privilege=milvus_pb2.PrivilegeEntity(name=body.name("privilege"))),
    )
    await call("OperatePrivilege", milvus_pb2.OperatePrivilegeRequest(entity=entity, type=op))
    return {}


async def grant_privilege(call: Call, body: Body) -> Any:
    return await _privilege(call, body, milvus_pb2.Grant)


async def revoke_privilege(call: Call, body: Body) -> Any:
    return await _privilege(call, body, milvus_pb2.Revoke)


async def _privilege_v2(call: Call, body: Body, op: int) -> Any:
    """``{"roleName", "privilege", "dbName", "collectionName"}``, as OperatePrivilegeV2 (Milvus 2.5's grants)."""
    request = milvus_pb2.OperatePrivilegeV2Request(
        role=milvus_pb2.RoleEntity(name=body.name("roleName")),
        grantor=milvus_pb2.GrantorEntity(privilege=milvus_pb2.PrivilegeEntity(name=body.name("privilege"))),
        type=op,  # the enum's int value
        db_name=body.text("dbName", "default") or "default",
        collection_name=body.text("collectionName"),
    )
    await call("OperatePrivilegeV2", request)
    return {}


async def grant_privilege_v2(call: Call, body: Body) -> Any:
    return await _privilege_v2(call, body, milvus_pb2.Grant)


async def revoke_privilege_v2(call: Call, body: Body) -> Any:
    return await _privilege_v2(call, body, milvus_pb2.Revoke)


USER_ROUTES: dict[str, Route] = {
    "list": list_users, "describe": describe_user, "create": create_user, "update_password": update_password,
    "drop": drop_user, "grant_role": grant_role, "revoke_role": revoke_role,
}
ROLE_ROUTES: dict[str, Route] = {
    "list": list_roles, "describe": describe_role, "create": create_role, "drop": drop_role,
    "grant_privilege": grant_privilege, "revoke_privilege": revoke_privilege,
    "grant_privilege_v2": grant_privilege_v2, "revoke_privilege_v2": revoke_privilege_v2,
}
