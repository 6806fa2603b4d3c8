"""Which grants permit a call (proxy/auth/policy.py), without a cluster."""

from __future__ import annotations

from common.rbac.catalog import Grant, SecurityState, UserRecord
from common.rbac.privileges import ObjectType
from proxy.auth.policy import Access, permits

C, G, U = ObjectType.COLLECTION, ObjectType.GLOBAL, ObjectType.USER


def _state(*grants: Grant, roles: dict[str, frozenset[str]] | None = None, groups=None) -> SecurityState:
    users = {n: UserRecord(name=n, password_hash="x") for n in ("root", "alice", "bob")}
    return SecurityState(
        users=users,
        roles={"admin": "", "public": "", "r": ""},
        user_roles=roles if roles is not None else {"alice": frozenset({"r"})},
        grants=grants,
        groups=groups or {},
    )


def _grant(otype: ObjectType, obj: str, privilege: str, db: str = "default", role: str = "r") -> Grant:
    return Grant(role=role, object_type=otype, db_name=db, object_name=obj, privilege=privilege)


def _search(coll: str = "c1", db: str = "default") -> Access:
    return Access(privilege="Search", object_type=C, db_name=db, object_name=coll)


def test_no_grant_denies_and_root_is_superuser() -> None:
    state = _state()
    assert not permits(state, "alice", _search())
    assert permits(state, "root", _search())


def test_admin_role_permits_everything() -> None:
    state = _state(roles={"alice": frozenset({"admin"})})
    assert permits(state, "alice", Access(privilege="DropDatabase", object_type=G, db_name="x"))


def test_collection_grant_is_per_collection_and_database() -> None:
    state = _state(_grant(C, "c1", "Search"))
    assert permits(state, "alice", _search("c1"))
    assert not permits(state, "alice", _search("c2"))
    assert not permits(state, "alice", _search("c1", db="other"))
    assert not permits(state, "alice", Access(privilege="Query", object_type=C, db_name="default", object_name="c1"))


def test_wildcards_and_all_privileges() -> None:
    assert permits(_state(_grant(C, "*", "Search")), "alice", _search("any"))
    assert permits(_state(_grant(C, "c1", "Search", db="*")), "alice", _search("c1", db="other"))
    assert permits(_state(_grant(G, "*", "*")), "alice", _search("c9"))


def test_public_role_applies_to_every_user() -> None:
    state = _state(_grant(C, "*", "Search", role="public"), roles={})
    assert permits(state, "bob", _search())


def test_groups_builtin_and_custom() -> None:
    assert permits(_state(_grant(C, "c1", "CollectionReadOnly")), "alice", _search("c1"))
    assert not permits(
        _state(_grant(C, "c1", "CollectionReadOnly")), "alice",
        Access(privilege="Insert", object_type=C, db_name="default", object_name="c1"),
    )
    custom = _state(_grant(C, "c1", "mine"), groups={"mine": frozenset({"Insert"})})
    assert permits(custom, "alice", Access(privilege="Insert", object_type=C, db_name="default", object_name="c1"))


def test_collection_grant_covers_a_global_privilege_on_that_collection() -> None:
    state = _state(_grant(C, "c1", "DescribeCollection"))
    assert permits(state, "alice", Access(privilege="DescribeCollection", object_type=G, db_name="default", object_name="c1"))
    assert not permits(state, "alice", Access(privilege="DescribeCollection", object_type=G, db_name="default", object_name="c2"))
    assert not permits(state, "alice", Access(privilege="DescribeCollection", object_type=G, db_name="default"))


def test_users_act_on_themselves_only() -> None:
    state = _state()
    assert permits(state, "alice", Access(privilege="UpdateUser", object_type=U, db_name="default", object_name="alice"))
    assert not permits(state, "alice", Access(privilege="UpdateUser", object_type=U, db_name="default", object_name="bob"))
