"""Authentication, users, roles and privilege groups through pymilvus, with authorization on.

One standalone (debug logging) for the whole module: refusals of bad credentials before any work,
the user and role lifecycle, privilege groups, a restart that keeps users and grants, no password
in clear in etcd or in any log, and a flood of bad passwords that does not slow a logged-in client.
"""

from __future__ import annotations

import base64
import statistics
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from pymilvus import MilvusClient
from pymilvus.exceptions import MilvusException
from pymilvus.grpc_gen import milvus_pb2, milvus_pb2_grpc

from tests.cluster.harness import read_prefix
from tests.e2e.authutil import ROOT_TOKEN, auth_standalone, denied
from tests.harness import Standalone, dump_logs_on_failure

pytestmark = pytest.mark.timeout(600)

PASSWORDS = ["alice-password-1", "alice-password-2", "bob-password-1", "Milvus"]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Standalone]:
    data = tmp_path_factory.mktemp("auth-users") / "data"
    with auth_standalone(data, env={"STRATA_LOG_LEVEL": "DEBUG"}) as s, dump_logs_on_failure(s):
        yield s


@pytest.fixture()
def root(cluster: Standalone) -> Iterator[MilvusClient]:
    client = MilvusClient(cluster.uri, token=ROOT_TOKEN)
    yield client
    client.close()


def _raw(s: Standalone, authorization: str | None) -> tuple[grpc.Channel, milvus_pb2_grpc.MilvusServiceStub]:
    channel = grpc.insecure_channel(f"127.0.0.1:{s.port}")
    return channel, milvus_pb2_grpc.MilvusServiceStub(channel)


def _metadata(raw: str | None) -> list[tuple[str, str]]:
    return [] if raw is None else [("authorization", base64.b64encode(raw.encode()).decode())]


def _etcd_endpoint(s: Standalone) -> str:
    argv = Path(f"/proc/{s.children()['coordinator']}/cmdline").read_bytes().decode().split("\0")
    return argv[argv.index("--etcd") + 1]


@pytest.mark.parametrize(
    ("metadata", "message"),
    [
        ([], "missing authorization in header"),
        ([("authorization", "%%%not-base64")], "invalid token format"),
        (_metadata("an-api-key"), "auth check failure, please check api key is correct"),
        (_metadata("root:wrong"), "auth check failure, please check username and password are correct"),
        (_metadata("nobody:Milvus"), "auth check failure, please check username and password are correct"),
    ],
)
def test_bad_credentials_are_refused_before_any_work(
    cluster: Standalone, root: MilvusClient, metadata: list[tuple[str, str]], message: str
) -> None:
    if not root.has_collection("c_unauth"):
        root.create_collection("c_unauth", dimension=4)
    channel, stub = _raw(cluster, None)
    with channel, pytest.raises(grpc.RpcError) as info:
        stub.DropCollection(milvus_pb2.DropCollectionRequest(collection_name="c_unauth"), metadata=metadata, timeout=10)
    assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert info.value.details() == message
    assert root.has_collection("c_unauth")


def test_pymilvus_connects_with_a_token_or_user_and_password_only(cluster: Standalone) -> None:
    for kwargs in ({"token": ROOT_TOKEN}, {"user": "root", "password": "Milvus"}):
        client = MilvusClient(cluster.uri, **kwargs)
        assert "root" in client.list_users()
        client.close()
    for kwargs in ({}, {"token": "root:nope"}, {"user": "root", "password": "nope"}):
        with pytest.raises(MilvusException):
            MilvusClient(cluster.uri, **kwargs)


def test_user_lifecycle(cluster: Standalone, root: MilvusClient) -> None:
    root.create_user("alice", PASSWORDS[0])
    assert "alice" in root.list_users()
    with pytest.raises(MilvusException, match="already exists"):
        root.create_user("alice", PASSWORDS[0])
    with pytest.raises(MilvusException, match="length of password"):
        root.create_user("shorty", "abc")
    with pytest.raises(MilvusException, match="username"):
        root.create_user("1bad", "long-enough")
    alice = MilvusClient(cluster.uri, user="alice", password=PASSWORDS[0])
    assert alice.describe_user("alice") == {"user_name": "alice", "roles": (), "description": ""}  # oneself: allowed
    with pytest.raises(Exception) as info:
        alice.list_users()  # needs SelectOwnership
    assert denied(info.value)
    # A user changes its own password; the old one stops working at once (the cache is invalidated).
    with pytest.raises(MilvusException, match="old password not correct"):
        alice.update_password("alice", "not-the-old-one", PASSWORDS[1])
    alice.update_password("alice", PASSWORDS[0], PASSWORDS[1])
    with pytest.raises(Exception) as info:
        alice.has_collection("anything")
    assert isinstance(info.value, grpc.RpcError) and info.value.code() == grpc.StatusCode.UNAUTHENTICATED
    alice.close()
    alice = MilvusClient(cluster.uri, user="alice", password=PASSWORDS[1])
    assert not alice.has_collection("anything")
    # A dropped user is refused at once, even on a connection that worked a moment ago.
    root.create_user("bob", PASSWORDS[2])
    bob = MilvusClient(cluster.uri, user="bob", password=PASSWORDS[2])
    assert not bob.has_collection("anything")
    root.drop_user("bob")
    with pytest.raises(grpc.RpcError) as rpc:
        bob.has_collection("anything")
    assert rpc.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert "bob" not in root.list_users()
    with pytest.raises(MilvusException, match="root user cannot be deleted"):
        root.drop_user("root")
    alice.close()


def test_roles_grants_and_groups(cluster: Standalone, root: MilvusClient) -> None:
    if "alice" not in root.list_users():
        root.create_user("alice", PASSWORDS[1])
    root.create_collection("c_roles", dimension=4)
    root.insert("c_roles", [{"id": 1, "vector": [0.1] * 4}])
    assert {"admin", "public"} <= set(root.list_roles())
    root.create_role("reader")
    root.grant_role("alice", "reader")
    assert root.describe_user("alice")["roles"] == ("reader",)
    alice = MilvusClient(cluster.uri, user="alice", password=PASSWORDS[1])
    with pytest.raises(Exception) as info:
        alice.query("c_roles", filter="id >= 0")
    assert denied(info.value)
    # A custom privilege group granted with the v2 call, on one collection.
    root.create_privilege_group("readers")
    root.add_privileges_to_group("readers", ["Query", "Search"])
    root.grant_privilege_v2("reader", "readers", "c_roles", db_name="default")
    assert [p["privilege"] for p in root.describe_role("reader")["privileges"]] == ["readers"]
    assert alice.query("c_roles", filter="id >= 0", consistency_level="Strong")[0]["id"] == 1
    root.remove_privileges_from_group("readers", ["Query"])
    with pytest.raises(Exception) as info:
        alice.query("c_roles", filter="id >= 0")
    assert denied(info.value)
    with pytest.raises(MilvusException, match="used by role"):
        root.drop_privilege_group("readers")
    with pytest.raises(MilvusException, match="has privileges"):
        root.drop_role("reader")
    # A built-in group through the v1 call; the role's users get it, revoking takes it away.
    root.grant_privilege("reader", "Collection", "CollectionReadOnly", "c_roles", db_name="default")
    assert alice.query("c_roles", filter="id >= 0", consistency_level="Strong")[0]["id"] == 1
    root.revoke_role("alice", "reader")
    with pytest.raises(Exception) as info:
        alice.query("c_roles", filter="id >= 0")
    assert denied(info.value)
    # The admin role may do anything.
    root.grant_role("alice", "admin")
    assert "c_roles" in alice.list_collections()
    root.revoke_role("alice", "admin")
    with pytest.raises(MilvusException, match="default role"):
        root.drop_role("admin")
    alice.close()


def test_grants_go_with_their_collection_when_dropped_or_renamed(cluster: Standalone, root: MilvusClient) -> None:
    root.create_user("frank", "frank-password")
    root.create_role("frank_role")
    root.grant_role("frank", "frank_role")
    root.create_collection("c_moving", dimension=4)
    root.grant_privilege("frank_role", "Collection", "Query", "c_moving", db_name="default")
    frank = MilvusClient(cluster.uri, user="frank", password="frank-password")
    assert frank.query("c_moving", filter="id >= 0", consistency_level="Strong") == []
    # Renamed: the grant moves with it (as Milvus 2.6 does).
    root.rename_collection("c_moving", "c_moved")
    objects = [p["object_name"] for p in root.describe_role("frank_role")["privileges"]]
    assert objects == ["c_moved"]
    assert frank.query("c_moved", filter="id >= 0", consistency_level="Strong") == []
    # Dropped: the grant goes; a new collection of the same name does not inherit it.
    root.drop_collection("c_moved")
    assert root.describe_role("frank_role")["privileges"] == []
    root.create_collection("c_moved", dimension=4)
    with pytest.raises(Exception) as info:
        frank.query("c_moved", filter="id >= 0")
    assert denied(info.value)
    frank.close()


def test_a_grant_on_a_collection_covers_its_aliases(cluster: Standalone, root: MilvusClient) -> None:
    root.create_user("gina", "gina-password")
    root.create_role("gina_role")
    root.grant_role("gina", "gina_role")
    for name in ("c_aliased", "c_other"):
        root.create_collection(name, dimension=4)
    root.create_alias("c_aliased", "a_aliased")
    root.create_alias("c_other", "a_other")
    root.grant_privilege("gina_role", "Collection", "Query", "c_aliased", db_name="default")
    gina = MilvusClient(cluster.uri, user="gina", password="gina-password")
    assert gina.query("a_aliased", filter="id >= 0", consistency_level="Strong") == []
    with pytest.raises(Exception) as info:
        gina.query("a_other", filter="id >= 0")
    assert denied(info.value)
    gina.close()


def test_restart_keeps_users_roles_and_grants(cluster: Standalone, root: MilvusClient) -> None:
    root.create_user("carol", "carol-password")
    root.create_role("writer")
    root.grant_role("carol", "writer")
    root.create_collection("c_restart", dimension=4)
    root.grant_privilege("writer", "Collection", "Insert", "c_restart", db_name="default")
    before = root.describe_role("writer")
    root.close()
    cluster.stop()
    cluster.start()
    root = MilvusClient(cluster.uri, token=ROOT_TOKEN)
    assert root.describe_role("writer") == before
    assert root.describe_user("carol")["roles"] == ("writer",)
    carol = MilvusClient(cluster.uri, user="carol", password="carol-password")
    assert carol.insert("c_restart", [{"id": 7, "vector": [0.0] * 4}])["insert_count"] == 1
    with pytest.raises(Exception) as info:
        carol.drop_collection("c_restart")
    assert denied(info.value)
    carol.close()
    with pytest.raises(MilvusException):
        MilvusClient(cluster.uri, user="carol", password="wrong-password")


def test_no_password_in_clear_in_etcd_or_logs(cluster: Standalone, root: MilvusClient) -> None:
    root.create_user("dave", "dave-secret-pw")
    MilvusClient(cluster.uri, user="dave", password="dave-secret-pw").close()
    with pytest.raises(MilvusException):
        MilvusClient(cluster.uri, user="dave", password="dave-wrong-pw")
    secrets = [*PASSWORDS, "carol-password", "dave-secret-pw", "dave-wrong-pw"]
    forms = [f for p in secrets for f in (p.encode(), base64.b64encode(p.encode()), base64.b64encode(f"x:{p}".encode())[4:])]
    values = read_prefix(_etcd_endpoint(cluster), "strata", "")
    assert any(k.startswith("security/credential/dave") for k in values)
    for key, value in values.items():
        for form in forms:
            assert form not in value, key
    logs = [cluster.log_path, *(cluster.data_dir / "logs").glob("*.log")]
    text = b"".join(p.read_bytes() for p in logs)
    assert b"user created" in text  # the logs are there and at debug level
    for form in forms:
        if form == b"Milvus":
            continue  # the product name appears in ordinary log lines
        assert form not in text, form


def test_a_flood_of_bad_passwords_does_not_slow_a_logged_in_client(cluster: Standalone, root: MilvusClient) -> None:
    root.create_user("erin", "erin-password")
    client = MilvusClient(cluster.uri, user="erin", password="erin-password")

    def latencies(n: int) -> list[float]:
        out = []
        for _ in range(n):
            start = time.perf_counter()
            client.has_collection("nothing")
            out.append(time.perf_counter() - start)
        return out

    quiet = statistics.median(latencies(40))
    stop = threading.Event()
    refused = [0]

    def guess(worker: int) -> None:
        channel, stub = _raw(cluster, None)
        with channel:
            i = 0
            while not stop.is_set():
                i += 1
                try:
                    stub.HasCollection(milvus_pb2.HasCollectionRequest(collection_name="x"),
                                       metadata=_metadata(f"root:guess-{worker}-{i}"), timeout=30)
                except grpc.RpcError as err:
                    assert err.code() == grpc.StatusCode.UNAUTHENTICATED
                    refused[0] += 1

    threads = [threading.Thread(target=guess, args=(w,)) for w in range(6)]
    for t in threads:
        t.start()
    try:
        time.sleep(1.0)
        flooded = statistics.median(latencies(40))
    finally:
        stop.set()
        for t in threads:
            t.join()
    print(f"\nlogged-in client, median of 40 calls: {quiet * 1000:.1f} ms alone, {flooded * 1000:.1f} ms "
          f"under 6 threads of password guesses ({refused[0]} refused)")
    assert refused[0] > 10
    # Generous: the logged-in client's calls need no bcrypt; on a loaded 2-core machine they may
    # slow somewhat, but not to the tens of milliseconds each guess costs.
    assert flooded < max(10 * quiet, 0.05), (quiet, flooded)
    client.close()
