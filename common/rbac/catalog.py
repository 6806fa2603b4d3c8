"""Users, roles, grants and privilege groups as the coordinator keeps them in etcd.

Key layout (under the cluster's root; values are JSON, passwords only as bcrypt hashes)::

    security/credential/<user>                                  {"password_hash", "description"}
    security/role/<role>                                        {"description"}
    security/user-role/<user>/<role>                            {}
    security/grant/<role>/<type>/<db>/<object>/<privilege>      {"grantor"}
    security/privilege-group/<group>                            {"privileges": [...]}

The coordinator alone writes these (``coordinator/credentials.py``); proxies read the whole prefix
into a ``SecurityState`` and follow it with a watch (``proxy/auth/state.py``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field

from common.etcd.metastore import KeyValue
from common.rbac.privileges import BUILTIN_GROUPS, ObjectType

PREFIX = "security/"
USER = "security/credential/"
ROLE = "security/role/"
USER_ROLE = "security/user-role/"
GRANT = "security/grant/"
GROUP = "security/privilege-group/"


@dataclass(frozen=True, slots=True, kw_only=True)
class UserRecord:
    name: str
    password_hash: str = field(repr=False)
    description: str = ""

    def to_json(self) -> bytes:
        return json.dumps({"password_hash": self.password_hash, "description": self.description}).encode()


@dataclass(frozen=True, slots=True, kw_only=True)
class Grant:
    """``privilege`` (a name, a group, or ``*``) on ``object_name`` of ``object_type`` in ``db_name``."""

    role: str
    object_type: ObjectType
    db_name: str
    object_name: str
    privilege: str
    grantor: str = ""

    @property
    def key(self) -> str:
        return f"{GRANT}{self.role}/{self.object_type.value}/{self.db_name}/{self.object_name}/{self.privilege}"

    def to_json(self) -> bytes:
        return json.dumps({"grantor": self.grantor}).encode()


@dataclass(frozen=True, slots=True, kw_only=True)
class SecurityState:
    """Everything under ``security/`` at one revision."""

    users: dict[str, UserRecord] = field(default_factory=dict)
    roles: dict[str, str] = field(default_factory=dict)  # name -> description
    user_roles: dict[str, frozenset[str]] = field(default_factory=dict)
    grants: tuple[Grant, ...] = ()
    groups: dict[str, frozenset[str]] = field(default_factory=dict)  # custom privilege groups

    def roles_of(self, user: str) -> frozenset[str]:
        return self.user_roles.get(user, frozenset())

    def users_of(self, role: str) -> list[str]:
        return sorted(u for u, roles in self.user_roles.items() if role in roles)

    def grants_of(self, role: str) -> list[Grant]:
        return [g for g in self.grants if g.role == role]

    def group(self, name: str) -> frozenset[str] | None:
        """The privileges of the built-in or custom group ``name``; None if there is no such group."""
        return BUILTIN_GROUPS.get(name) or self.groups.get(name)

    @staticmethod
    def from_kvs(kvs: Iterable[KeyValue]) -> SecurityState:
        users: dict[str, UserRecord] = {}
        roles: dict[str, str] = {}
        user_roles: dict[str, set[str]] = {}
        grants: list[Grant] = []
        groups: dict[str, frozenset[str]] = {}
        for kv in kvs:
            key, value = kv.key, json.loads(kv.value or b"{}")
            if key.startswith(USER):
                name = key[len(USER):]
                users[name] = UserRecord(
                    name=name, password_hash=value["password_hash"], description=value.get("description", "")
                )
            elif key.startswith(ROLE):
                roles[key[len(ROLE):]] = value.get("description", "")
            elif key.startswith(USER_ROLE):
                user, _, role = key[len(USER_ROLE):].partition("/")
                user_roles.setdefault(user, set()).add(role)
            elif key.startswith(GRANT):
                role, otype, db, obj, privilege = key[len(GRANT):].split("/", 4)
                grants.append(Grant(role=role, object_type=ObjectType(otype), db_name=db, object_name=obj,
                                    privilege=privilege, grantor=value.get("grantor", "")))
            elif key.startswith(GROUP):
                groups[key[len(GROUP):]] = frozenset(value.get("privileges", ()))
        return SecurityState(
            users=users,
            roles=roles,
            user_roles={u: frozenset(r) for u, r in user_roles.items()},
            grants=tuple(grants),
            groups=groups,
        )
