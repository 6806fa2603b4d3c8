"""What BackupRBAC exports and what RestoreRBAC accepts (common/rbac/backup.py), without a cluster."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from common.errors import InvalidArgument
from common.etcd.metastore import KeyValue
from common.rbac.backup import BackedUpUser, RBACBackup, backup_of, restore_ops
from common.rbac.catalog import Grant, SecurityState, UserRecord
from common.rbac.privileges import ObjectType

HASH = "$2b$10$abcdefghijklmnopqrstuuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ012"


def _grant(role: str, obj: str = "c1", privilege: str = "Search") -> Grant:
    return Grant(role=role, object_type=ObjectType.COLLECTION, db_name="default", object_name=obj,
                 privilege=privilege, grantor="root")


def _state() -> SecurityState:
    return SecurityState(
        users={n: UserRecord(name=n, password_hash=HASH) for n in ("root", "alice")},
        roles={"admin": "", "public": "", "reader": "reads"},
        user_roles={"alice": frozenset({"reader", "admin"})},
        grants=(_grant("reader", privilege="readers"), _grant("public", "*", "IndexDetail")),
        groups={"readers": frozenset({"Query", "Search"})},
    )


def test_backup_leaves_out_root_the_built_in_roles_and_their_grants() -> None:
    backup = backup_of(_state())
    assert [(u.name, u.password_hash, u.roles) for u in backup.users] == [("alice", HASH, ("admin", "reader"))]
    assert backup.roles == (("reader", "reads"),)
    assert backup.grants == (_grant("reader", privilege="readers"),)
    assert backup.groups == (("readers", frozenset({"Query", "Search"})),)


def test_a_backup_restores_into_an_empty_catalog() -> None:
    backup = backup_of(_state())
    empty = SecurityState(users={"root": UserRecord(name="root", password_hash=HASH)}, roles={"admin": "", "public": ""})
    ops = restore_ops(empty, backup, max_users=100, max_roles=10)
    written = {op.key: op.value for op in ops}
    assert json.loads(written["security/role/reader"] or b"") == {"description": "reads"}
    assert json.loads(written["security/privilege-group/readers"] or b"") == {"privileges": ["Query", "Search"]}
    assert json.loads(written["security/credential/alice"] or b"")["password_hash"] == HASH
    assert {"security/user-role/alice/reader", "security/user-role/alice/admin", _grant("reader", privilege="readers").key} <= set(written)
    restored = SecurityState.from_kvs([KeyValue(key=k, value=v or b"", mod_revision=1) for k, v in written.items()])
    assert backup_of(restored) == backup  # the round trip loses nothing


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda b: replace(b, roles=(("reader", ""),)), r"role \[reader\] already exists"),
        (lambda b: replace(b, groups=(("readers", frozenset({"Query"})),)), r"privilege group \[readers\] already exists"),
        (lambda b: replace(b, users=(BackedUpUser(name="alice", password_hash=HASH),)), r"user \[alice\] already exists"),
        (lambda b: replace(b, users=(BackedUpUser(name="bob", password_hash=HASH, roles=("ghost",)),)),
         r"role \[ghost\] does not exist"),
        (lambda b: replace(b, grants=(_grant("reader", privilege="Fly"),)), r"privilege \[Fly\] does not exist"),
        (lambda b: replace(b, grants=(_grant("ghost"),)), r"role \[ghost\] does not exist"),
        (lambda b: replace(b, users=(BackedUpUser(name="bob", password_hash="plain-text"),)), "not a bcrypt hash"),
    ],
)
def test_conflicts_and_unknown_names_are_refused(change, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidArgument, match=message):
        restore_ops(_state(), change(RBACBackup()), max_users=100, max_roles=10)


def test_limits_hold() -> None:
    many = RBACBackup(users=tuple(BackedUpUser(name=f"u{i}", password_hash=HASH) for i in range(99)))
    with pytest.raises(InvalidArgument, match="limit 100"):
        restore_ops(_state(), many, max_users=100, max_roles=10)
