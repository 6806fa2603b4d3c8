"""Which collections and databases a user sees in ``ShowCollections`` and ``ListDatabases`` (pure).

As Milvus 2.6's root coordinator filters them when ``common.security.authorizationEnabled`` is on
(neither RPC needs a privilege of its own; the answer is cut down instead):

* ``root``, and any user with the ``admin`` role, sees everything;
* only the roles granted to the user count, not ``public``: its default grants (``IndexDetail``
  on every collection) would otherwise show every collection to everyone;
* collections, in the database listed: a grant of the database (or of database ``*``) shows
  every collection if it is a ``Global`` grant of ``*`` (every privilege) or names the object
  ``*`` with a ``Collection`` grant or a built-in collection group (``CollectionReadOnly`` ...);
  a ``Collection`` grant or a built-in collection group on one collection shows that collection,
  whatever its privilege. Other ``Global`` grants (``ShowCollections``, ``DatabaseReadOnly`` ...)
  show none;
* databases: every database the user's roles hold any grant in (a grant in database ``*``: all).

``None`` stands for "everything".
"""

from __future__ import annotations

from common.rbac.catalog import Grant, SecurityState
from common.rbac.privileges import ANY, BUILTIN_GROUP_TYPES, ROLE_ADMIN, ROOT_USER, ObjectType

#: A set of names, or None for all of them.
Visible = frozenset[str] | None


def _sees_all(state: SecurityState, user: str) -> bool:
    return user == ROOT_USER or ROLE_ADMIN in state.roles_of(user)


def _own_grants(state: SecurityState, user: str) -> list[Grant]:
    roles = state.roles_of(user)
    return [g for g in state.grants if g.role in roles]


def _collection_group(privilege: str) -> bool:
    return BUILTIN_GROUP_TYPES.get(privilege) == ObjectType.COLLECTION and privilege.startswith("Collection")


def visible_collections(state: SecurityState, user: str, db_name: str) -> Visible:
    """The collections of ``db_name`` that ``user`` sees listed; None: all of them."""
    if _sees_all(state, user):
        return None
    names: set[str] = set()
    for g in _own_grants(state, user):
        if g.db_name not in (db_name, ANY):
            continue
        if g.object_type == ObjectType.GLOBAL and g.privilege == ANY:
            return None
        if g.object_type != ObjectType.COLLECTION and not _collection_group(g.privilege):
            continue
        if g.object_name == ANY:
            return None
        names.add(g.object_name)
    return frozenset(names)


def visible_databases(state: SecurityState, user: str) -> Visible:
    """The databases ``user`` sees listed; None: all of them."""
    if _sees_all(state, user):
        return None
    names: set[str] = set()
    for g in _own_grants(state, user):
        if g.db_name == ANY:
            return None
        names.add(g.db_name)
    return frozenset(names)
