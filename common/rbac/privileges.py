"""Milvus's privilege names, object types and built-in privilege groups (pure, no I/O).

Names are the API names pymilvus sends (``Search``, not ``PrivilegeSearch``). A grant names an
object type (``Global``, ``Collection``, ``User``), a database, an object (a collection, a user,
or ``*``) and a privilege, a privilege group, or ``*`` (every privilege). ``Global`` privileges
apply to a whole database (or, with database ``*``, to every one); ``Collection`` privileges to
one collection or to ``*``.
"""

from __future__ import annotations

from enum import StrEnum

ANY = "*"


class ObjectType(StrEnum):
    GLOBAL = "Global"
    COLLECTION = "Collection"
    USER = "User"


#: Privileges of one collection (or ``*``): the proxy checks them against the collection a call names.
COLLECTION_PRIVILEGES = frozenset({
    "CreateIndex", "DropIndex", "IndexDetail", "Load", "GetLoadingProgress", "GetLoadState", "Release",
    "Insert", "Delete", "Upsert", "Search", "Flush", "GetFlushState", "Query", "GetStatistics",
    "Compaction", "Import", "LoadBalance", "CreatePartition", "DropPartition", "ShowPartitions",
    "HasPartition", "AddCollectionField",
})  # fmt: skip

#: Privileges of a database (or of every database, with database ``*``).
GLOBAL_PRIVILEGES = frozenset({
    "CreateCollection", "DropCollection", "DescribeCollection", "ShowCollections", "RenameCollection",
    "FlushAll", "CreateOwnership", "DropOwnership", "SelectOwnership", "ManageOwnership",
    "CreateResourceGroup", "DropResourceGroup", "DescribeResourceGroup", "ListResourceGroups",
    "TransferNode", "TransferReplica", "UpdateResourceGroups", "CreateDatabase", "DropDatabase",
    "ListDatabases", "AlterDatabase", "DescribeDatabase", "CreateAlias", "DropAlias", "DescribeAlias",
    "ListAliases", "BackupRBAC", "RestoreRBAC", "CreatePrivilegeGroup", "DropPrivilegeGroup",
    "ListPrivilegeGroups", "OperatePrivilegeGroup", "AddFileResource", "RemoveFileResource", "ListFileResources",
    "UpdateReplicateConfiguration", "GetReplicateConfiguration",
})  # fmt: skip

#: Privileges on a user (its name is the object).
USER_PRIVILEGES = frozenset({"UpdateUser", "SelectUser"})

PRIVILEGES_BY_TYPE: dict[ObjectType, frozenset[str]] = {
    ObjectType.GLOBAL: GLOBAL_PRIVILEGES,
    ObjectType.COLLECTION: COLLECTION_PRIVILEGES,
    ObjectType.USER: USER_PRIVILEGES,
}
ALL_PRIVILEGES = COLLECTION_PRIVILEGES | GLOBAL_PRIVILEGES | USER_PRIVILEGES

# Milvus 2.5's built-in privilege groups, by level (each level's ReadWrite holds its ReadOnly, Admin its ReadWrite).
_COLL_RO = ("Query", "Search", "IndexDetail", "GetFlushState", "GetLoadState", "GetLoadingProgress", "HasPartition",
            "ShowPartitions", "DescribeCollection", "DescribeAlias", "GetStatistics", "ListAliases")
_COLL_RW = (*_COLL_RO, "Load", "Release", "Insert", "Delete", "Upsert", "Import", "Flush", "Compaction",
            "LoadBalance", "CreateIndex", "DropIndex", "CreatePartition", "DropPartition", "AddCollectionField")
_COLL_ADMIN = (*_COLL_RW, "CreateAlias", "DropAlias")
_DB_RO = ("ShowCollections", "DescribeDatabase")
_DB_RW = (*_DB_RO, "AlterDatabase")
_DB_ADMIN = (*_DB_RW, "CreateCollection", "DropCollection")
_CLUSTER_RO = ("ListDatabases", "SelectOwnership", "SelectUser", "DescribeResourceGroup", "ListResourceGroups",
               "ListPrivilegeGroups")
_CLUSTER_RW = (*_CLUSTER_RO, "FlushAll", "TransferNode", "TransferReplica", "UpdateResourceGroups")
_CLUSTER_ADMIN = (*_CLUSTER_RW, "BackupRBAC", "RestoreRBAC", "CreateDatabase", "DropDatabase", "CreateOwnership",
                  "DropOwnership", "ManageOwnership", "CreateResourceGroup", "DropResourceGroup", "UpdateUser",
                  "RenameCollection", "CreatePrivilegeGroup", "DropPrivilegeGroup", "OperatePrivilegeGroup")

BUILTIN_GROUPS: dict[str, frozenset[str]] = {
    "CollectionReadOnly": frozenset(_COLL_RO),
    "CollectionReadWrite": frozenset(_COLL_RW),
    "CollectionAdmin": frozenset(_COLL_ADMIN),
    "DatabaseReadOnly": frozenset(_DB_RO),
    "DatabaseReadWrite": frozenset(_DB_RW),
    "DatabaseAdmin": frozenset(_DB_ADMIN),
    "ClusterReadOnly": frozenset(_CLUSTER_RO),
    "ClusterReadWrite": frozenset(_CLUSTER_RW),
    "ClusterAdmin": frozenset(_CLUSTER_ADMIN),
    # Milvus 2.4's groups, granted on collections.
    "ReadOnly": frozenset(_COLL_RO),
    "ReadWrite": frozenset(_COLL_RW),
    "Admin": frozenset(_COLL_ADMIN),
}

#: The object type a built-in group is granted on.
BUILTIN_GROUP_TYPES: dict[str, ObjectType] = {
    name: ObjectType.COLLECTION if name.startswith("Collection") or name in ("ReadOnly", "ReadWrite", "Admin")
    else ObjectType.GLOBAL
    for name in BUILTIN_GROUPS
}

#: Built-in roles (created on the cluster's first start; never dropped). ``admin`` may do anything.
ROLE_ADMIN = "admin"
ROLE_PUBLIC = "public"
BUILTIN_ROLES = (ROLE_ADMIN, ROLE_PUBLIC)
#: The superuser, created on the cluster's first start; never dropped, never denied.
ROOT_USER = "root"
#: What Milvus grants ``public`` on a new cluster (proxy.enablePublicPrivilege): any user may list
#: and describe collections and read their indexes. Revocable like any grant.
PUBLIC_DEFAULT_GRANTS: tuple[tuple[ObjectType, str], ...] = (
    (ObjectType.GLOBAL, "DescribeCollection"),
    (ObjectType.GLOBAL, "ShowCollections"),
    (ObjectType.COLLECTION, "IndexDetail"),
)


def normalize_privilege(name: str) -> str:
    """The API name of ``name``: ``PrivilegeSearch`` -> ``Search``; ``All`` and ``*`` -> ``*``."""
    if name in (ANY, "All", "PrivilegeAll"):
        return ANY
    if name.startswith("Privilege") and name[len("Privilege"):] in ALL_PRIVILEGES:
        return name[len("Privilege"):]
    return name


def level_of(privilege: str) -> ObjectType | None:
    """The object type a single privilege or built-in group is granted on; None for other names."""
    if privilege in COLLECTION_PRIVILEGES:
        return ObjectType.COLLECTION
    if privilege in GLOBAL_PRIVILEGES:
        return ObjectType.GLOBAL
    if privilege in USER_PRIVILEGES:
        return ObjectType.USER
    return BUILTIN_GROUP_TYPES.get(privilege)
