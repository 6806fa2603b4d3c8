"""``BackupRBAC`` and ``RestoreRBAC``: the security catalog as Milvus 2.6 exports and imports it (pure).

A backup holds what Milvus's ``RBACMeta`` holds:

* the users other than ``root``, each with its bcrypt hash (Milvus exports the hash it stores;
  Strata's are bcrypt too, cost 10, so users keep their passwords across Milvus and Strata) and
  its roles (not ``public``, which every user has anyway);
* the roles other than ``admin`` and ``public``, with their descriptions;
* the grants of those roles (``public``'s grants stay with the cluster, as in Milvus);
* the custom privilege groups.

A restore adds all of it or nothing (``Credentials.restore``), with Milvus's checks: a role, group or
user that already exists, a grant of an unknown privilege or a user of an unknown role is refused.
Strata also checks names, hashes, grants and its limits as the single calls do.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from common.errors import InvalidArgument
from common.etcd.metastore import Op
from common.rbac import catalog
from common.rbac.catalog import Grant, SecurityState, UserRecord
from common.rbac.names import check_group_name, check_role_name, check_user_name
from common.rbac.privileges import ALL_PRIVILEGES, ANY, BUILTIN_GROUPS, BUILTIN_ROLES, ROLE_PUBLIC, ROOT_USER


@dataclass(frozen=True, slots=True, kw_only=True)
class BackedUpUser:
    name: str
    password_hash: str = field(repr=False)
    roles: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class RBACBackup:
    users: tuple[BackedUpUser, ...] = ()
    roles: tuple[tuple[str, str], ...] = ()  # (name, description)
    grants: tuple[Grant, ...] = ()
    groups: tuple[tuple[str, frozenset[str]], ...] = ()  # custom privilege groups


def backup_of(state: SecurityState) -> RBACBackup:
    """What ``BackupRBAC`` answers for ``state``, sorted by name."""
    roles = tuple(sorted((n, d) for n, d in state.roles.items() if n not in BUILTIN_ROLES))
    kept = {n for n, _ in roles}
    users = tuple(
        BackedUpUser(name=u.name, password_hash=u.password_hash,
                     roles=tuple(sorted(r for r in state.roles_of(u.name) if r != ROLE_PUBLIC)))
        for u in sorted(state.users.values(), key=lambda u: u.name)
        if u.name != ROOT_USER
    )
    grants = tuple(sorted((g for g in state.grants if g.role in kept), key=lambda g: g.key))
    return RBACBackup(users=users, roles=roles, grants=grants, groups=tuple(sorted(state.groups.items())))


def _refuse(message: str) -> InvalidArgument:
    return InvalidArgument(message)  # Milvus: ParameterInvalid


def restore_ops(state: SecurityState, backup: RBACBackup, *, max_users: int, max_roles: int) -> list[Op]:
    """The etcd writes that add ``backup`` to ``state`` (roles, groups, grants, then users), each key
    once; raises ``InvalidArgument`` if it cannot be restored, before anything is written."""
    roles_after = set(state.roles)
    for name, _ in backup.roles:
        check_role_name(name)
        if name in state.roles:
            raise _refuse(f"role [{name}] already exists")
        roles_after.add(name)
    if len(roles_after) > max_roles + len(BUILTIN_ROLES):
        raise _refuse(f"unable to restore roles because the number of roles would exceed the limit {max_roles}")
    groups_after = set(state.groups)
    for name, privileges in backup.groups:
        check_group_name(name)
        if name in state.groups or name in BUILTIN_GROUPS or name in ALL_PRIVILEGES:
            raise _refuse(f"privilege group [{name}] already exists")
        unknown = sorted(privileges - ALL_PRIVILEGES)
        if unknown:
            raise _refuse(f"privilege [{unknown[0]}] does not exist")
        groups_after.add(name)
    for g in backup.grants:
        if g.privilege != ANY and g.privilege not in groups_after and g.privilege not in BUILTIN_GROUPS \
                and g.privilege not in ALL_PRIVILEGES:
            raise _refuse(f"privilege [{g.privilege}] does not exist")
        if g.role not in roles_after:
            raise _refuse(f"role [{g.role}] does not exist")
        if not g.db_name or not g.object_name or "/" in g.db_name + g.object_name:
            raise _refuse(f"invalid grant of role [{g.role}]: database and object name must be non-empty, without '/'")
    for user in backup.users:
        check_user_name(user.name)
        if user.name in state.users:
            raise _refuse(f"user [{user.name}] already exists")
        if not user.password_hash.startswith("$2"):
            raise _refuse(f"the password of user [{user.name}] is not a bcrypt hash")
        for role in user.roles:
            if role not in roles_after:
                raise _refuse(f"role [{role}] does not exist")
    if len(state.users) + len(backup.users) > max_users:
        raise _refuse(f"unable to restore users because the number of users would exceed the limit {max_users}")
    ops = [Op(key=f"{catalog.ROLE}{n}", value=json.dumps({"description": d}).encode()) for n, d in backup.roles]
    ops += [Op(key=f"{catalog.GROUP}{n}", value=json.dumps({"privileges": sorted(p)}).encode())
            for n, p in backup.groups]
    ops += [Op(key=g.key, value=g.to_json()) for g in backup.grants]
    for user in backup.users:
        record = UserRecord(name=user.name, password_hash=user.password_hash)
        ops.append(Op(key=f"{catalog.USER}{user.name}", value=record.to_json()))
        ops += [Op(key=f"{catalog.USER_ROLE}{user.name}/{r}", value=b"{}") for r in user.roles if r != ROLE_PUBLIC]
    return list({op.key: op for op in ops}.values())  # a name twice in the backup: written once
