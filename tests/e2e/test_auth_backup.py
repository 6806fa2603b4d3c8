"""BackupRBAC and RestoreRBAC through pymilvus's MilvusService stub, with authorization on.

Root backs up users, roles, grants and a custom privilege group, drops them all, and restores the
backup: the users log in again with their old passwords and may do what they could before. The
backup holds bcrypt hashes only; restoring over existing names is refused and changes nothing; a
user without the privilege may neither back up nor restore.
"""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest
from pymilvus import MilvusClient
from pymilvus.grpc_gen import common_pb2, milvus_pb2

from tests.e2e.authutil import ROOT_TOKEN, auth_standalone, stub
from tests.harness import Standalone, dump_logs_on_failure

pytestmark = pytest.mark.timeout(600)

PASSWORD = "alice-password-1"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Standalone, MilvusClient]]:
    with auth_standalone(tmp_path_factory.mktemp("auth-backup") / "data") as s, dump_logs_on_failure(s):
        root = MilvusClient(s.uri, token=ROOT_TOKEN)
        yield s, root
        root.close()


def _backup(client: MilvusClient) -> milvus_pb2.RBACMeta:
    resp = stub(client).BackupRBAC(milvus_pb2.BackupRBACMetaRequest())
    assert resp.status.code == 0, resp.status.reason
    return resp.RBAC_meta


def _restore(client: MilvusClient, meta: milvus_pb2.RBACMeta) -> common_pb2.Status:
    return stub(client).RestoreRBAC(milvus_pb2.RestoreRBACMetaRequest(RBAC_meta=meta))


def _privileges(root: MilvusClient, role: str) -> list[tuple[str, str, str]]:
    return sorted((p["object_type"], p["object_name"], p["privilege"]) for p in root.describe_role(role)["privileges"])


def test_backup_drop_restore_brings_everything_back(cluster: tuple[Standalone, MilvusClient]) -> None:
    s, root = cluster
    root.create_collection("docs", dimension=4)
    root.insert("docs", [{"id": 1, "vector": [0.1] * 4}])
    root.create_user("alice", PASSWORD)
    root.create_role("reader", description="reads docs")
    root.create_privilege_group("readers")
    root.add_privileges_to_group("readers", ["Query", "Search"])
    root.grant_privilege_v2("reader", "readers", "docs", db_name="default")
    root.grant_privilege("reader", "Global", "DescribeCollection", "*", db_name="default")
    root.grant_role("alice", "reader")
    before = _privileges(root, "reader")

    meta = _backup(root)
    assert [u.user for u in meta.users] == ["alice"]  # not root
    assert meta.users[0].password.startswith("$2") and PASSWORD not in str(meta)
    assert [r.name for r in meta.roles] == ["reader"]  # not admin or public
    assert [g.group_name for g in meta.privilege_groups] == ["readers"]
    assert {g.role.name for g in meta.grants} == {"reader"}

    root.revoke_role("alice", "reader")
    root.drop_role("reader", force_drop=True)
    root.drop_privilege_group("readers")
    root.drop_user("alice")
    assert "alice" not in root.list_users()

    status = _restore(root, meta)
    assert status.code == 0, status.reason
    assert root.describe_user("alice")["roles"] == ("reader",)
    assert root.describe_role("reader")["privileges"] and _privileges(root, "reader") == before
    alice = MilvusClient(s.uri, user="alice", password=PASSWORD, dedicated=True)  # the old password works
    assert alice.query("docs", filter="id >= 0", consistency_level="Strong")[0]["id"] == 1
    assert alice.list_collections() == ["docs"]
    alice.close()


def test_restoring_over_existing_names_is_refused_and_changes_nothing(cluster: tuple[Standalone, MilvusClient]) -> None:
    _, root = cluster
    root.create_user("carol", "carol-password")
    root.create_role("writer")
    meta = milvus_pb2.RBACMeta(
        roles=[milvus_pb2.RoleEntity(name="fresh_role")],
        users=[milvus_pb2.UserInfo(user="carol", password=_backup(root).users[0].password)],
    )
    status = _restore(root, meta)
    assert status.code != 0 and "user [carol] already exists" in status.reason
    assert "fresh_role" not in root.list_roles()  # nothing of it was written
    meta = milvus_pb2.RBACMeta(roles=[milvus_pb2.RoleEntity(name="writer")])
    assert "role [writer] already exists" in _restore(root, meta).reason


def test_backup_and_restore_need_their_privileges(cluster: tuple[Standalone, MilvusClient]) -> None:
    s, root = cluster
    root.create_user("dave", "dave-password")
    dave = MilvusClient(s.uri, user="dave", password="dave-password", dedicated=True)
    for call in (lambda: stub(dave).BackupRBAC(milvus_pb2.BackupRBACMetaRequest()),
                 lambda: _restore(dave, milvus_pb2.RBACMeta(roles=[milvus_pb2.RoleEntity(name="sneaky")]))):
        with pytest.raises(grpc.RpcError) as info:
            call()
        assert info.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert "sneaky" not in root.list_roles()
    dave.close()
