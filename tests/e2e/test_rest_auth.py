"""The RESTful API with authorization on: ``Authorization: Bearer user:password`` through the same
authenticator and privilege check as the gRPC port (401 / 1800 without a valid login, 403 with the
gRPC denial's code and message), users and roles by REST; with authorization off, no login."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest
from pymilvus import MilvusClient, MilvusException

from tests.e2e.authutil import ROOT_TOKEN, auth_standalone, denied
from tests.e2e.restutil import ok, post, post_raw
from tests.harness import Standalone, dump_logs_on_failure

pytestmark = pytest.mark.timeout(600)

ROOT = {"Authorization": f"Bearer {ROOT_TOKEN}"}
ALICE = {"Authorization": "Bearer alice:alice-password-1"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Standalone]:
    with auth_standalone(tmp_path_factory.mktemp("rest-auth") / "data") as s, dump_logs_on_failure(s):
        yield s


@pytest.mark.parametrize("header", [None, "Bearer root:wrong-password", "Bearer root", "Basic cm9vdDpNaWx2dXM=",
                                    "Bearer nobody:Milvus", "Bearer "])
def test_no_valid_login_is_401_and_runs_nothing(cluster: Standalone, header: str | None) -> None:
    headers = {} if header is None else {"Authorization": header}
    status, answer = post_raw(cluster, "collections/create", b'{"collectionName": "c_unauth", "dimension": 4}', headers)
    assert (status, answer) == (401, {"code": 1800, "message": "user hasn't authenticated"})
    assert "c_unauth" not in ok(cluster, "collections/list", {}, ROOT)


def test_users_roles_and_grants_by_rest(cluster: Standalone) -> None:
    ok(cluster, "collections/create", {"collectionName": "c_rest_auth", "dimension": 4}, ROOT)
    assert ok(cluster, "users/create", {"userName": "alice", "password": "alice-password-1"}, ROOT) == {}
    assert "alice" in ok(cluster, "users/list", {}, ROOT)
    assert ok(cluster, "users/describe", {"userName": "alice"}, ROOT) == []
    # Without a grant: 403 with the privilege error's code and the gRPC port's message.
    body = {"collectionName": "c_rest_auth", "filter": "id >= 0"}
    status, answer = post_raw(cluster, "entities/query", b'{"collectionName": "c_rest_auth", "filter": "id >= 0"}', ALICE)
    assert status == 403 and answer["code"] == 1401
    alice = MilvusClient(cluster.uri, token="alice:alice-password-1")
    try:
        with pytest.raises((MilvusException, grpc.RpcError)) as grpc_err:
            alice.query("c_rest_auth", filter="id >= 0")
        assert denied(grpc_err.value)
        assert answer["message"] == "PrivilegeQuery: permission deny to alice in the `default` database"
        assert answer["message"] in str(grpc_err.value)
    finally:
        alice.close()
    # A role with Query on the collection, granted to alice: allowed.
    assert ok(cluster, "roles/create", {"roleName": "rest_reader"}, ROOT) == {}
    assert "rest_reader" in ok(cluster, "roles/list", {}, ROOT)
    grant = {"roleName": "rest_reader", "objectType": "Collection", "objectName": "c_rest_auth",
             "privilege": "Query", "dbName": "default"}
    assert ok(cluster, "roles/grant_privilege", grant, ROOT) == {}
    privileges = ok(cluster, "roles/describe", {"roleName": "rest_reader"}, ROOT)
    assert privileges == [{"dbName": "default", "grantor": "root", "objectName": "c_rest_auth",
                           "objectType": "Collection", "privilege": "Query"}]
    assert ok(cluster, "users/grant_role", {"userName": "alice", "roleName": "rest_reader"}, ROOT) == {}
    assert ok(cluster, "users/describe", {"userName": "alice"}, ROOT) == ["rest_reader"]
    assert ok(cluster, "entities/query", body, ALICE) == []
    # Still nothing else: dropping the collection is denied, and the collection stays.
    status, answer = post_raw(cluster, "collections/drop", b'{"collectionName": "c_rest_auth"}', ALICE)
    assert status == 403 and "PrivilegeDropCollection: permission deny to alice" in answer["message"]
    assert ok(cluster, "collections/has", {"collectionName": "c_rest_auth"}, ROOT) == {"has": True}
    # Revoked: denied again.
    assert ok(cluster, "users/revoke_role", {"userName": "alice", "roleName": "rest_reader"}, ROOT) == {}
    assert post_raw(cluster, "entities/query", b'{"collectionName": "c_rest_auth", "filter": "id >= 0"}', ALICE)[0] == 403
    assert ok(cluster, "roles/revoke_privilege", grant, ROOT) == {}
    assert ok(cluster, "roles/drop", {"roleName": "rest_reader"}, ROOT) == {}
    # A new password: the old one no longer logs in.
    assert ok(cluster, "users/update_password", {"userName": "alice", "password": "alice-password-1",
                                                 "newPassword": "alice-password-2"}, ROOT) == {}
    assert post_raw(cluster, "collections/list", b"{}", ALICE)[0] == 401
    assert isinstance(ok(cluster, "collections/list", {}, {"Authorization": "Bearer alice:alice-password-2"}), list)
    assert ok(cluster, "users/drop", {"userName": "alice"}, ROOT) == {}
    assert "alice" not in ok(cluster, "users/list", {}, ROOT)
    ok(cluster, "collections/drop", {"collectionName": "c_rest_auth"}, ROOT)


def test_authorization_off_needs_no_login(standalone: Standalone) -> None:
    assert isinstance(ok(standalone, "collections/list", {}), list)
    assert post(standalone, "collections/list", {}, {"Authorization": "Bearer nobody:nothing"})["code"] == 0
