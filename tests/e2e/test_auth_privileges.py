"""Every MilvusService RPC, as a user without its privilege (refused, nothing changes) and with it.

Table-driven over ``proxy/auth/rpc_privileges.py``: for each RPC that needs a privilege,
``alice`` (role ``tester``, no grants; ``public``'s default grants revoked) sends the request
through pymilvus's stub and gets gRPC PERMISSION_DENIED with Milvus's message; after all of them
the cluster (collections, data, indexes, aliases, users, roles, grants, groups) is as before.
Requests in the refused round name the real objects (dropping ``c_auth``, deleting every row,
granting ``alice`` the admin role, ...), so a hole in the gate would show as a change. Then, for
each RPC, root grants exactly the table's privilege on exactly the object the request names,
and the same call passes the gate (the handler answers: success, or its own error about the
throwaway names those requests use). A second table does the main calls through MilvusClient
with valid arguments: refused and unchanged without the grant, successful with it.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from typing import Any

import grpc
import pytest
from pymilvus import DataType, MilvusClient
from pymilvus.grpc_gen import milvus_pb2

from common.rbac.privileges import PRIVILEGES_BY_TYPE, ObjectType
from proxy.auth.interceptor import database_of
from proxy.auth.rpc_privileges import RPC_PRIVILEGES, Rule
from tests.e2e.authutil import ROOT_TOKEN, auth_standalone, denied, grpc_code, stub
from tests.harness import Standalone, dump_logs_on_failure

pytestmark = pytest.mark.timeout(600)

_SERVICE = milvus_pb2.DESCRIPTOR.services_by_name["MilvusService"]
REAL = {"coll": "c_auth", "coll2": "c_auth2", "alias": "a_auth", "user": "bob", "role": "other",
        "group": "g_auth", "rg": "rg_auth", "db": "default", "partition": "p_auth", "self_role": "tester"}
THROWAWAY = {"coll": "c_none", "coll2": "c_none2", "alias": "a_none", "user": "ghost", "role": "r_none",
             "group": "g_none", "rg": "rg_none", "db": "db_none", "partition": "p_none", "self_role": "r_none"}
_B64 = lambda s: base64.b64encode(s.encode()).decode()  # noqa: E731


def _request(method: Any, n: dict[str, str]) -> Any:
    """A request for ``method`` naming the objects in ``n``."""
    req = method.input_type._concrete_class()
    fields = method.input_type.fields_by_name
    simple = {"collection_name": n["coll"], "collectionName": n["coll"], "oldName": n["coll"], "alias": n["alias"],
              "partition_name": n["partition"], "field_name": "v", "username": n["user"], "user_name": n["user"],
              "role_name": n["role"], "group_name": n["group"], "resource_group": n["rg"], "expr": "id >= 0"}
    for name, value in simple.items():
        if name in fields:
            if not isinstance(getattr(req, name), str):
                getattr(req, name).append(value)
            else:
                setattr(req, name, value)
    match method.name:
        case "RenameCollection":
            req.newName = n["coll"] + "_renamed"
        case "AlterAlias":
            req.collection_name = n["coll2"]
        case "CreateAlias":
            req.alias = n["alias"] + "_new"
        case "CreateCollection":
            req.collection_name = n["coll"] + "_new"
        case "Flush":
            req.collection_names.append(n["coll"])
        case "LoadPartitions" | "ReleasePartitions":
            req.partition_names.append(n["partition"])
        case "AlterCollection":
            req.properties.add(key="collection.ttl.seconds", value="1")
        case "CreateDatabase" | "DropDatabase" | "AlterDatabase" | "DescribeDatabase":
            req.db_name = n["db"] + ("_new" if method.name == "CreateDatabase" else "")
        case "CreateCredential":
            req.username, req.password = n["user"] + "_new", _B64("password-9")
        case "UpdateCredential":
            req.oldPassword, req.newPassword = _B64("bob-password"), _B64("changed-9")
        case "CreateRole":
            req.entity.name = n["role"] + "_new"
        case "DropRole":
            req.force_drop = True
        case "OperateUserRole":  # escalation: alice into admin
            req.username, req.role_name = ("alice" if n is REAL else n["user"]), "admin"
        case "SelectRole":
            req.role.name = n["role"]
        case "SelectUser":
            req.user.name = n["user"]
        case "SelectGrant":
            req.entity.role.name = n["role"]
        case "OperatePrivilege":  # escalation: everything to alice's own role
            e = req.entity
            e.role.name, e.object.name, e.object_name, e.db_name = n["self_role"], "Global", "*", "*"
            e.grantor.privilege.name = "*"
        case "OperatePrivilegeV2":
            req.role.name, req.grantor.privilege.name, req.db_name, req.collection_name = n["self_role"], "*", "*", "*"
        case "CreatePrivilegeGroup":
            req.group_name = n["group"] + "_new"
        case "OperatePrivilegeGroup":
            req.privileges.add(name="Insert")
        case "CreateResourceGroup":
            req.resource_group = n["rg"] + "_new"
    return req


def _snapshot(root: MilvusClient) -> dict[str, Any]:
    desc = root.describe_collection("c_auth")
    users = root.list_users()
    return {
        "collections": sorted(root.list_collections()),
        "schema": (desc["fields"], desc.get("aliases"), desc.get("properties"), desc.get("num_partitions")),
        "partitions": sorted(root.list_partitions("c_auth")),
        "indexes": root.list_indexes("c_auth"),
        "aliases": root.list_aliases("c_auth")["aliases"],
        "alias_target": root.describe_alias("a_auth")["collection_name"],
        "load": str(root.get_load_state("c_auth")["state"]),
        "rows": root.query("c_auth", filter="", output_fields=["count(*)"], consistency_level="Strong")[0],
        "users": sorted(users),
        "user_roles": {u: root.describe_user(u) for u in users},
        "roles": {r: root.describe_role(r) for r in root.list_roles()},
        "groups": root.list_privilege_groups(),
        "resource_groups": sorted(root.list_resource_groups()),
    }


def _schema() -> Any:
    schema = MilvusClient.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("v", DataType.FLOAT_VECTOR, dim=4)
    return schema


def _setup(root: MilvusClient) -> None:
    schema = _schema()
    index = root.prepare_index_params()
    index.add_index("v", metric_type="L2", index_type="FLAT")
    root.create_collection("c_auth", schema=schema, index_params=index)
    root.create_partition("c_auth", "p_auth")
    root.insert("c_auth", [{"id": i, "v": [float(i)] * 4} for i in range(10)])
    root.load_collection("c_auth")
    root.create_collection("c_auth2", dimension=4)
    root.create_alias("c_auth", "a_auth")
    root.create_user("alice", "alice-password")
    root.create_user("bob", "bob-password")
    root.create_role("tester")
    root.create_role("other")
    root.grant_role("alice", "tester")
    root.grant_privilege("other", "Collection", "Query", "c_auth")
    root.create_privilege_group("g_auth")
    for object_type, privilege in (("Global", "DescribeCollection"), ("Global", "ShowCollections"),
                                   ("Collection", "IndexDetail")):
        root.revoke_privilege("public", object_type, privilege, "*", db_name="*")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Standalone, MilvusClient]]:
    with auth_standalone(tmp_path_factory.mktemp("auth-privileges") / "data") as s, dump_logs_on_failure(s):
        root = MilvusClient(s.uri, token=ROOT_TOKEN)
        _setup(root)
        yield s, root
        root.close()


def _guarded() -> list[tuple[Any, Rule]]:
    return [(m, rule) for m in _SERVICE.methods if (rule := RPC_PRIVILEGES[m.name]) is not None
            and not m.client_streaming and not m.server_streaming]


def _grant_target(rule: Rule, n: dict[str, str]) -> str:
    """Exactly the object the request names (``*`` when it names none)."""
    if not rule.name_field:
        return "*"
    return {ObjectType.COLLECTION: n["coll"], ObjectType.USER: n["user"], ObjectType.GLOBAL: "*"}[rule.object_type]


def test_every_guarded_rpc_is_refused_without_its_privilege_and_changes_nothing(
    cluster: tuple[Standalone, MilvusClient],
) -> None:
    s, root = cluster
    before = _snapshot(root)
    alice = MilvusClient(s.uri, user="alice", password="alice-password")
    refused: list[str] = []
    for method, rule in _guarded():
        call = getattr(stub(alice), method.name)
        request = _request(method, REAL)
        db = database_of(method.name, request, {})  # the database the request names, else default
        try:
            call(request, timeout=30)
        except grpc.RpcError as err:
            if err.code() == grpc.StatusCode.PERMISSION_DENIED:
                assert err.details() == f"Privilege{rule.privilege}: permission deny to alice in the `{db}` database"
                refused.append(method.name)
                continue
            raise
    assert refused == [m.name for m, _ in _guarded()]
    assert _snapshot(root) == before
    MilvusClient(s.uri, user="bob", password="bob-password").close()  # bob's password is unchanged
    alice.close()


def test_every_guarded_rpc_passes_the_gate_with_exactly_its_privilege(cluster: tuple[Standalone, MilvusClient]) -> None:
    s, root = cluster
    alice = MilvusClient(s.uri, user="alice", password="alice-password")
    for method, rule in _guarded():
        call = getattr(stub(alice), method.name)
        request = _request(method, THROWAWAY)
        target, otype = _grant_target(rule, THROWAWAY), rule.object_type.value
        if rule.privilege not in PRIVILEGES_BY_TYPE[rule.object_type]:  # row policies: Global *Ownership
            target, otype = "*", "Global"
        db = database_of(method.name, request, {})
        root.grant_privilege("tester", otype, rule.privilege, target, db_name=db)
        try:
            code = grpc_code(lambda: call(request, timeout=60))  # noqa: B023 - called at once
        finally:
            root.revoke_privilege("tester", otype, rule.privilege, target, db_name=db)
        # Passed the gate: answered by the handler (a Milvus status, or UNIMPLEMENTED for the few
        # unsupported RPCs whose response has no status field).
        assert code in (grpc.StatusCode.OK, grpc.StatusCode.UNIMPLEMENTED), (method.name, code)
        assert grpc_code(lambda: call(request, timeout=30)) == grpc.StatusCode.PERMISSION_DENIED, method.name  # noqa: B023
    alice.close()


ROWS = [{"id": 100 + i, "v": [0.5] * 4} for i in range(3)]
# (privilege, object type, object, the call as alice, what shows that it worked), run in this order
# by one test (later rows use what earlier ones made: the collection renamed, then dropped; c_auth2
# released, then its index dropped).
CLIENT_CALLS: list[tuple[str, str, str, Callable[[MilvusClient], Any], Callable[[MilvusClient], bool]]] = [
    ("Insert", "Collection", "c_auth", lambda c: c.insert("c_auth", ROWS),
     lambda r: len(r.query("c_auth", filter="id >= 100", consistency_level="Strong")) == 3),
    ("Upsert", "Collection", "c_auth", lambda c: c.upsert("c_auth", [{"id": 1, "v": [9.0] * 4}]),
     lambda r: r.query("c_auth", filter="id == 1", output_fields=["v"], consistency_level="Strong")[0]["v"][0] == 9.0),
    ("Delete", "Collection", "c_auth", lambda c: c.delete("c_auth", filter="id in [2, 3]"),
     lambda r: r.query("c_auth", filter="id in [2, 3]", consistency_level="Strong") == []),
    ("Search", "Collection", "c_auth", lambda c: c.search("c_auth", data=[[0.0] * 4], limit=1), lambda r: True),
    ("Query", "Collection", "c_auth", lambda c: c.query("c_auth", filter="id >= 0", limit=1), lambda r: True),
    ("CreateCollection", "Global", "*", lambda c: c.create_collection("c_made", schema=_schema()),
     lambda r: r.has_collection("c_made")),
    ("RenameCollection", "Global", "*", lambda c: c.rename_collection("c_made", "c_made2"),
     lambda r: r.has_collection("c_made2")),
    ("DropCollection", "Global", "*", lambda c: c.drop_collection("c_made2"), lambda r: not r.has_collection("c_made2")),
    ("CreatePartition", "Collection", "c_auth", lambda c: c.create_partition("c_auth", "p_made"),
     lambda r: "p_made" in r.list_partitions("c_auth")),
    ("CreateAlias", "Global", "*", lambda c: c.create_alias("c_auth2", "a_made"),
     lambda r: r.describe_alias("a_made")["collection_name"] == "c_auth2"),
    ("DropAlias", "Global", "*", lambda c: c.drop_alias("a_made"), lambda r: "a_made" not in r.list_aliases("c_auth2")["aliases"]),
    ("Release", "Collection", "c_auth2", lambda c: c.release_collection("c_auth2"),
     lambda r: "NotLoad" in str(r.get_load_state("c_auth2")["state"])),
    ("DropIndex", "Collection", "c_auth2", lambda c: c.drop_index("c_auth2", "vector"),
     lambda r: r.list_indexes("c_auth2") == []),
    ("CreateOwnership", "Global", "*", lambda c: c.create_user("carol", "carol-password"),
     lambda r: "carol" in r.list_users()),
    ("ManageOwnership", "Global", "*", lambda c: c.grant_role("carol", "other"),
     lambda r: "other" in r.describe_user("carol")["roles"]),
    ("DropOwnership", "Global", "*", lambda c: c.drop_user("carol"), lambda r: "carol" not in r.list_users()),
    ("CreatePrivilegeGroup", "Global", "*", lambda c: c.create_privilege_group("g_made"),
     lambda r: any(g["privilege_group"] == "g_made" for g in r.list_privilege_groups())),
    ("OperatePrivilegeGroup", "Global", "*", lambda c: c.add_privileges_to_group("g_made", ["Search"]),
     lambda r: any(g["privilege_group"] == "g_made" and "Search" in g["privileges"] for g in r.list_privilege_groups())),
    ("DropPrivilegeGroup", "Global", "*", lambda c: c.drop_privilege_group("g_made"),
     lambda r: not any(g["privilege_group"] == "g_made" for g in r.list_privilege_groups())),
]


def test_client_calls_refused_then_working(cluster: tuple[Standalone, MilvusClient]) -> None:
    """One test, the rows in order (each may use what the one before made)."""
    s, root = cluster
    alice = MilvusClient(s.uri, user="alice", password="alice-password")
    try:
        for privilege, object_type, obj, call, worked in CLIENT_CALLS:
            before = _snapshot(root)
            with pytest.raises(Exception) as info:
                call(alice)
            assert denied(info.value), (privilege, info.value)
            assert _snapshot(root) == before, privilege
            root.grant_privilege("tester", object_type, privilege, obj, db_name="default")
            try:
                call(alice)
            finally:
                root.revoke_privilege("tester", object_type, privilege, obj, db_name="default")
            assert worked(root), privilege
    finally:
        alice.close()
