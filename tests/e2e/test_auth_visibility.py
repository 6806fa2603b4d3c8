"""What list_collections and list_databases show each user, and what common.security.superUsers lets do.

One standalone with authorization on and ``superUsers: sue``. Collections ``c_one``, ``c_two`` in
``default`` and ``s_one``, ``s_two`` in ``sales``; users with a grant on one collection, with a
database-wide group, with a Global grant that shows nothing, with none, with ``admin``; all see
exactly what Milvus 2.6 shows them. ``sue`` may then reset another user's password without the
old one, where a user with the same grants may not.
"""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest
from pymilvus import MilvusClient
from pymilvus.exceptions import MilvusException

from tests.e2e.authutil import ROOT_TOKEN, auth_standalone
from tests.harness import Standalone, dump_logs_on_failure

pytestmark = pytest.mark.timeout(600)

PASSWORD = "a-long-password"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Standalone, MilvusClient]]:
    data = tmp_path_factory.mktemp("auth-visibility") / "data"
    with auth_standalone(data, env={"STRATA_COMMON_SECURITY_SUPERUSERS": "sue"}) as s, dump_logs_on_failure(s):
        root = MilvusClient(s.uri, token=ROOT_TOKEN)
        root.create_database("sales")
        for name in ("c_one", "c_two"):
            root.create_collection(name, dimension=4)
        sales = MilvusClient(s.uri, token=ROOT_TOKEN, db_name="sales", dedicated=True)
        for name in ("s_one", "s_two"):
            sales.create_collection(name, dimension=4)
        sales.close()
        for user in ("one", "wide", "globe", "nobody", "adm", "sue", "carl", "bob"):
            root.create_user(user, PASSWORD)
        for role in ("r_one", "r_wide", "r_globe", "r_reset"):
            root.create_role(role)
        root.grant_privilege_v2("r_one", "Search", "c_one", db_name="default")
        root.grant_privilege_v2("r_wide", "CollectionReadOnly", "*", db_name="sales")
        root.grant_privilege("r_globe", "Global", "ShowCollections", "*", db_name="default")
        root.grant_privilege("r_reset", "User", "UpdateUser", "*", db_name="*")
        for user, role in (("one", "r_one"), ("wide", "r_wide"), ("globe", "r_globe"), ("adm", "admin"),
                           ("sue", "r_reset"), ("carl", "r_reset")):
            root.grant_role(user, role)
        yield s, root
        root.close()


def _client(s: Standalone, user: str, db: str = "", password: str = PASSWORD) -> MilvusClient:
    token = ROOT_TOKEN if user == "root" else f"{user}:{password}"
    return MilvusClient(s.uri, token=token, db_name=db, dedicated=True)


@pytest.mark.parametrize(
    ("user", "default_collections", "sales_collections", "databases"),
    [
        ("one", ["c_one"], [], ["default"]),  # a grant on one collection: that one
        ("wide", [], ["s_one", "s_two"], ["sales"]),  # a database-wide group: all of that database
        ("globe", [], [], ["default"]),  # a Global grant: a database, but no collection
        ("nobody", [], [], []),  # public's default grants do not count
        ("adm", ["c_one", "c_two"], ["s_one", "s_two"], ["default", "sales"]),
        ("root", ["c_one", "c_two"], ["s_one", "s_two"], ["default", "sales"]),
    ],
)
def test_lists_show_what_the_grants_cover(
    cluster: tuple[Standalone, MilvusClient],
    user: str,
    default_collections: list[str],
    sales_collections: list[str],
    databases: list[str],
) -> None:
    s, _ = cluster
    client, sales = _client(s, user), _client(s, user, "sales")
    try:
        assert sorted(client.list_collections()) == default_collections
        assert sorted(sales.list_collections()) == sales_collections
        assert sorted(client.list_databases()) == databases
    finally:
        client.close()
        sales.close()


def test_lists_follow_grants_as_they_change(cluster: tuple[Standalone, MilvusClient]) -> None:
    s, root = cluster
    one = _client(s, "one")
    try:
        root.grant_privilege_v2("r_one", "Query", "c_two", db_name="default")
        assert sorted(one.list_collections()) == ["c_one", "c_two"]
        root.revoke_privilege_v2("r_one", "Query", "c_two", db_name="default")
        assert one.list_collections() == ["c_one"]
        root.revoke_role("one", "r_one")
        assert one.list_collections() == []
        assert one.list_databases() == []
    finally:
        root.grant_role("one", "r_one")
        one.close()


def _not_allowed(name: str) -> str:
    return f"not allowed to access collection, collection name: {name}: privilege not permitted"


@pytest.mark.parametrize(
    ("user", "db", "name", "allowed"),
    [
        ("one", "", "c_one", True),  # a grant on c_one: describes it
        ("one", "", "c_two", False),  # ... not the collection beside it
        ("nobody", "", "c_one", False),  # public's default DescribeCollection does not reach it
        ("globe", "", "c_one", False),  # a Global grant shows no collection, so describes none
        ("wide", "sales", "s_two", True),  # a database-wide group: every collection of it
        ("adm", "sales", "s_one", True),
    ],
)
def test_describe_collection_answers_only_what_the_grants_cover(
    cluster: tuple[Standalone, MilvusClient], user: str, db: str, name: str, allowed: bool
) -> None:
    s, _ = cluster
    client = _client(s, user, db)
    try:
        if allowed:
            assert client.describe_collection(name)["collection_name"] == name
            assert client.has_collection(name)  # pymilvus asks DescribeCollection
            return
        for call in (client.describe_collection, client.has_collection):
            with pytest.raises(MilvusException) as err:
                call(name)
            assert (err.value.code, err.value.message) == (1401, _not_allowed(name))
    finally:
        client.close()


def test_describe_through_an_alias_is_checked_as_its_collection(cluster: tuple[Standalone, MilvusClient]) -> None:
    s, root = cluster
    root.create_alias("c_two", "c_two_alias")
    one = _client(s, "one")
    try:
        with pytest.raises(MilvusException) as err:
            one.describe_collection("c_two_alias")
        assert (err.value.code, err.value.message) == (1401, _not_allowed("c_two"))
        root.alter_alias("c_one", "c_two_alias")
        assert one.describe_collection("c_two_alias")["collection_name"] == "c_one"
    finally:
        root.drop_alias("c_two_alias")
        one.close()


def test_collection_statistics_need_get_statistics_on_the_collection(cluster: tuple[Standalone, MilvusClient]) -> None:
    s, _ = cluster
    one, wide = _client(s, "one"), _client(s, "wide", "sales")
    try:
        with pytest.raises(grpc.RpcError) as err:
            one.get_collection_stats("c_one")  # Search on c_one is not GetStatistics
        assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED
        assert err.value.details() == "PrivilegeGetStatistics: permission deny to one in the `default` database"
        assert wide.get_collection_stats("s_one")["row_count"] == 0  # CollectionReadOnly holds it
    finally:
        one.close()
        wide.close()


def test_a_super_user_resets_a_password_without_the_old_one(cluster: tuple[Standalone, MilvusClient]) -> None:
    s, _ = cluster
    sue, carl = _client(s, "sue"), _client(s, "carl")
    try:
        with pytest.raises(MilvusException, match="old password not correct"):
            carl.update_password("bob", "not-bobs-password", "carl-chose-this")
        sue.update_password("bob", "not-bobs-password", "sue-chose-this")
        bob = _client(s, "bob", password="sue-chose-this")
        assert bob.list_databases() == []  # logged in with the new password
        bob.close()
    finally:
        sue.close()
        carl.close()

