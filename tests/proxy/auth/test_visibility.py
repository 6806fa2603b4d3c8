"""Which collections and databases a user sees listed (proxy/auth/visibility.py), without a cluster."""

from __future__ import annotations

from common.rbac.catalog import Grant, SecurityState, UserRecord
from common.rbac.privileges import ObjectType
from proxy.auth.visibility import visible_collections, visible_databases

C, G, U = ObjectType.COLLECTION, ObjectType.GLOBAL, ObjectType.USER


def _state(*grants: Grant, roles: dict[str, frozenset[str]] | None = None) -> SecurityState:
    users = {n: UserRecord(name=n, password_hash="x") for n in ("root", "alice", "bob")}
    return SecurityState(
        users=users,
        roles={"admin": "", "public": "", "r": ""},
        user_roles=roles if roles is not None else {"alice": frozenset({"r"})},
        grants=grants,
    )


def _grant(otype: ObjectType, obj: str, privilege: str, db: str = "default", role: str = "r") -> Grant:
    return Grant(role=role, object_type=otype, db_name=db, object_name=obj, privilege=privilege)


def test_root_and_admin_see_everything() -> None:
    state = _state(roles={"alice": frozenset({"admin"})})
    for user in ("root", "alice"):
        assert visible_collections(state, user, "default") is None
        assert visible_databases(state, user) is None


def test_no_grant_sees_nothing_and_public_does_not_count() -> None:
    # public's default grants cover every collection: counted, they would show everything to everyone.
    state = _state(_grant(C, "*", "IndexDetail", db="*", role="public"), _grant(G, "*", "ShowCollections", db="*", role="public"))
    assert visible_collections(state, "bob", "default") == frozenset()
    assert visible_databases(state, "bob") == frozenset()


def test_a_collection_grant_shows_that_collection_in_its_database_only() -> None:
    state = _state(_grant(C, "c1", "Search"), _grant(C, "c2", "my_group", db="db2"))
    assert visible_collections(state, "alice", "default") == frozenset({"c1"})
    assert visible_collections(state, "alice", "db2") == frozenset({"c2"})
    assert visible_collections(state, "alice", "db3") == frozenset()


def test_database_wide_grants_show_all_its_collections() -> None:
    assert visible_collections(_state(_grant(C, "*", "Query")), "alice", "default") is None
    assert visible_collections(_state(_grant(G, "*", "*")), "alice", "default") is None
    assert visible_collections(_state(_grant(C, "*", "CollectionReadOnly")), "alice", "default") is None
    # a grant in database * counts in every database
    assert visible_collections(_state(_grant(C, "c1", "Query", db="*")), "alice", "any") == frozenset({"c1"})
    assert visible_collections(_state(_grant(C, "*", "Query")), "alice", "other") == frozenset()


def test_other_global_grants_show_no_collection() -> None:
    state = _state(_grant(G, "*", "ShowCollections"), _grant(G, "*", "DatabaseReadOnly"), _grant(U, "bob", "SelectUser"))
    assert visible_collections(state, "alice", "default") == frozenset()


def test_databases_are_those_with_any_grant() -> None:
    state = _state(_grant(C, "c1", "Search", db="db1"), _grant(G, "*", "DescribeDatabase", db="db2"))
    assert visible_databases(state, "alice") == frozenset({"db1", "db2"})
    assert visible_databases(_state(_grant(C, "c1", "Search", db="*")), "alice") is None
