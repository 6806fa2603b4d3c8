"""``/v2/vectordb/privilege_groups/*``: create, drop, list, add_privileges_to_group,
remove_privileges_from_group (Milvus 2.6's ``PrivilegeGroupCategory``).

The body is ``{"privilegeGroupName", "privileges": [...]}``; ``list`` answers
``{"privilegeGroups": [{"privilegeGroupName", "privileges": "A,B"}]}``, the
privileges joined by commas as Milvus answers them, built-in groups included.
"""

from __future__ import annotations

from typing import Any

from pymilvus.grpc_gen import milvus_pb2

from proxy.http.body import Body
from proxy.http.invoke import Call
from proxy.http.reply import Route

GROUP = "privilegeGroupName"


async def create(call: Call, body: Body) -> Any:
    await call("CreatePrivilegeGroup", milvus_pb2.CreatePrivilegeGroupRequest(group_name=body.name(GROUP)))
    return {}


async def drop(call: Call, body: Body) -> Any:
    await call("DropPrivilegeGroup", milvus_pb2.DropPrivilegeGroupRequest(group_name=body.name(GROUP)))
    return {}


async def list_(call: Call, body: Body) -> Any:
    resp = await call("ListPrivilegeGroups", milvus_pb2.ListPrivilegeGroupsRequest())
    return {"privilegeGroups": [
        {GROUP: g.group_name, "privileges": ",".join(p.name for p in g.privileges)} for g in resp.privilege_groups
    ]}


async def _operate(call: Call, body: Body, op: int) -> Any:
    request = milvus_pb2.OperatePrivilegeGroupRequest(
        group_name=body.name(GROUP), privileges=[milvus_pb2.PrivilegeEntity(name=p) for p in body.strings("privileges")],
        type=op,  # the enum's int value
    )
    await call("OperatePrivilegeGroup", request)
    return {}


async def add_privileges(call: Call, body: Body) -> Any:
    return await _operate(call, body, milvus_pb2.AddPrivilegesToGroup)


async def remove_privileges(call: Call, body: Body) -> Any:
    return await _operate(call, body, milvus_pb2.RemovePrivilegesFromGroup)


ROUTES: dict[str, Route] = {
    "create": create, "drop": drop, "list": list_,
    "add_privileges_to_group": add_privileges, "remove_privileges_from_group": remove_privileges,
}
