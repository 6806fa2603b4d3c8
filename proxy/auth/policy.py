"""Whether a user may make a call: the grants of its roles against what the call needs (pure).

Rules, in order:

* ``root`` may do anything; so may a user with the ``admin`` role;
* every user has the ``public`` role besides its own;
* a grant covers the call if its privilege is the one needed, ``*``, or a group holding it; its
  database is the call's or ``*``; and its object is ``*``, or the object the call names with the
  same object type, or, for a Global privilege of a call about one collection, that collection
  (so ``grant_privilege_v2(role, "DescribeCollection", "c1")`` lets the role describe ``c1``);
* a user may always act on itself where the object is a user (change its own password, describe
  itself), as in Milvus.
"""

from __future__ import annotations

from dataclasses import dataclass

from common.rbac.catalog import Grant, SecurityState
from common.rbac.privileges import ANY, ROLE_ADMIN, ROLE_PUBLIC, ROOT_USER, ObjectType


@dataclass(frozen=True, slots=True, kw_only=True)
class Access:
    """What one call needs: ``privilege`` on ``object_name`` (``*``: none named) of ``object_type`` in ``db_name``."""

    privilege: str
    object_type: ObjectType
    db_name: str
    object_name: str = ANY


def _privilege_covers(state: SecurityState, granted: str, needed: str) -> bool:
    if granted in (ANY, needed):
        return True
    group = state.group(granted)
    return group is not None and needed in group


def _object_covers(grant: Grant, access: Access) -> bool:
    if grant.object_name == ANY:
        return True
    if grant.object_name != access.object_name:
        return False
    return grant.object_type == access.object_type or (
        access.object_type == ObjectType.GLOBAL and grant.object_type == ObjectType.COLLECTION
    )


def permits(state: SecurityState, user: str, access: Access) -> bool:
    if user == ROOT_USER:
        return True
    if access.object_type == ObjectType.USER and access.object_name == user:
        return True
    roles = state.roles_of(user) | {ROLE_PUBLIC}
    if ROLE_ADMIN in roles:
        return True
    return any(
        g.role in roles
        and g.db_name in (ANY, access.db_name)
        and _privilege_covers(state, g.privilege, access.privilege)
        and _object_covers(g, access)
        for g in state.grants
    )
