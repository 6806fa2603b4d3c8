"""What each ``MilvusService`` RPC needs when ``common.security.authorizationEnabled`` is on.

One row per RPC: the privilege, the object type it is checked on, and the request field naming
the object (a collection, or a user for ``User`` rules); no field means the object ``*``. The
rows follow Milvus's (the ``privilege_ext_obj`` option of each request in milvus.proto,
``tests/proxy/auth/test_rpc_privileges.py`` compares them), with these choices where
milvus.proto has none: ``GetPartitionStatistics`` needs ``GetStatistics``. ``None``: any
authenticated user (as in Milvus: the handshake, health, versions, metrics, and reads of cluster
state; ``ShowCollections`` and ``ListDatabases`` answer only what the user's grants cover,
``visibility.py``). An RPC
missing from the table is refused (``permission deny``), so a new RPC is never open by accident.
README.md, "Security", shows the same table.
"""

from __future__ import annotations

from dataclasses import dataclass

from common.rbac.privileges import ObjectType

G = ObjectType.GLOBAL
C = ObjectType.COLLECTION
U = ObjectType.USER


@dataclass(frozen=True, slots=True)
class Rule:
    privilege: str
    object_type: ObjectType
    # The request field naming the object (a string, or repeated strings: each is checked; a dotted
    # path reaches into a message, ``user.name``).
    # On a Global rule it names the collection the call is about: a Collection grant of the
    # privilege on that collection covers the call too.
    name_field: str = ""


RPC_PRIVILEGES: dict[str, Rule | None] = {
    # collections
    "CreateCollection": Rule("CreateCollection", G, "collection_name"),
    "DropCollection": Rule("DropCollection", G, "collection_name"),
    "HasCollection": None,
    "DescribeCollection": Rule("DescribeCollection", G, "collection_name"),
    "BatchDescribeCollection": Rule("DescribeCollection", G, "collection_name"),
    "ShowCollections": None,  # filtered by the caller's grants instead (visibility.py)
    "RenameCollection": Rule("RenameCollection", G, "oldName"),
    "AlterCollection": Rule("CreateCollection", G, "collection_name"),
    "AlterCollectionField": Rule("CreateCollection", G, "collection_name"),
    "AddCollectionFunction": Rule("CreateCollection", G, "collection_name"),
    "AlterCollectionFunction": Rule("CreateCollection", G, "collection_name"),
    "DropCollectionFunction": Rule("CreateCollection", G, "collection_name"),
    "TruncateCollection": Rule("DropCollection", G, "collection_name"),
    "AddCollectionField": Rule("AddCollectionField", C, "collection_name"),
    "GetCollectionStatistics": Rule("GetStatistics", C, "collection_name"),
    # load
    "LoadCollection": Rule("Load", C, "collection_name"),
    "ReleaseCollection": Rule("Release", C, "collection_name"),
    "LoadPartitions": Rule("Load", C, "collection_name"),
    "ReleasePartitions": Rule("Release", C, "collection_name"),
    "GetLoadingProgress": Rule("GetLoadState", C, "collection_name"),
    "GetLoadState": Rule("GetLoadState", C, "collection_name"),
    "LoadBalance": Rule("LoadBalance", C, "collectionName"),
    # partitions
    "CreatePartition": Rule("CreatePartition", C, "collection_name"),
    "DropPartition": Rule("DropPartition", C, "collection_name"),
    "HasPartition": Rule("HasPartition", C, "collection_name"),
    "ShowPartitions": Rule("ShowPartitions", C, "collection_name"),
    "GetPartitionStatistics": Rule("GetStatistics", C, "collection_name"),
    # aliases
    "CreateAlias": Rule("CreateAlias", G, "collection_name"),
    "DropAlias": Rule("DropAlias", G),
    "AlterAlias": Rule("CreateAlias", G, "collection_name"),
    "DescribeAlias": Rule("DescribeAlias", G),
    "ListAliases": Rule("ListAliases", G, "collection_name"),
    # indexes
    "CreateIndex": Rule("CreateIndex", C, "collection_name"),
    "AlterIndex": Rule("CreateIndex", C, "collection_name"),
    "DescribeIndex": Rule("IndexDetail", C, "collection_name"),
    "GetIndexStatistics": Rule("IndexDetail", C, "collection_name"),
    "GetIndexState": Rule("IndexDetail", C, "collection_name"),
    "GetIndexBuildProgress": Rule("IndexDetail", C, "collection_name"),
    "DropIndex": Rule("DropIndex", C, "collection_name"),
    # data
    "Insert": Rule("Insert", C, "collection_name"),
    "Delete": Rule("Delete", C, "collection_name"),
    "Upsert": Rule("Upsert", C, "collection_name"),
    "Search": Rule("Search", C, "collection_name"),
    "HybridSearch": Rule("Search", C, "collection_name"),
    "Query": Rule("Query", C, "collection_name"),
    "Flush": Rule("Flush", C, "collection_names"),
    "GetFlushState": Rule("GetFlushState", C, "collection_name"),
    "FlushAll": Rule("FlushAll", G),
    "GetFlushAllState": None,
    "ManualCompaction": Rule("Compaction", C, "collection_name"),
    "GetCompactionState": None,
    "GetCompactionStateWithPlans": None,
    "Import": Rule("Import", C, "collection_name"),
    "GetImportState": None,
    "ListImportTasks": None,
    "CalcDistance": None,
    "RunAnalyzer": None,
    # segments, replicas, cluster state
    "GetPersistentSegmentInfo": None,
    "GetQuerySegmentInfo": None,
    "GetReplicas": None,
    "ListIndexedSegment": None,
    "DescribeSegmentIndexData": None,
    "GetMetrics": None,
    "GetComponentStates": None,
    "CheckHealth": None,
    "GetVersion": None,
    "Connect": None,
    "AllocTimestamp": None,
    "Dummy": None,
    "RegisterLink": None,
    # resource groups
    "CreateResourceGroup": Rule("CreateResourceGroup", G),
    "DropResourceGroup": Rule("DropResourceGroup", G),
    "UpdateResourceGroups": Rule("UpdateResourceGroups", G),
    "TransferNode": Rule("TransferNode", G),
    "TransferReplica": Rule("TransferReplica", G),
    "ListResourceGroups": Rule("ListResourceGroups", G),
    "DescribeResourceGroup": Rule("DescribeResourceGroup", G),
    # databases
    "CreateDatabase": Rule("CreateDatabase", G),
    "DropDatabase": Rule("DropDatabase", G),
    "ListDatabases": None,  # filtered by the caller's grants (visibility.py)
    "AlterDatabase": Rule("AlterDatabase", G),
    "DescribeDatabase": Rule("DescribeDatabase", G),
    # users, roles, grants (a user may always change its own password, see its own roles and grants)
    "CreateCredential": Rule("CreateOwnership", G),
    "UpdateCredential": Rule("UpdateUser", U, "username"),
    "DeleteCredential": Rule("DropOwnership", G),
    "ListCredUsers": Rule("SelectOwnership", G),
    "CreateRole": Rule("CreateOwnership", G),
    "AlterRole": Rule("CreateOwnership", G),
    "DropRole": Rule("DropOwnership", G),
    "OperateUserRole": Rule("ManageOwnership", G),
    "SelectRole": Rule("SelectOwnership", G),
    "SelectUser": Rule("SelectUser", U, "user.name"),
    "OperatePrivilege": Rule("ManageOwnership", G),
    "OperatePrivilegeV2": Rule("ManageOwnership", G),
    "SelectGrant": Rule("SelectOwnership", G),
    "BackupRBAC": Rule("BackupRBAC", G),
    "RestoreRBAC": Rule("RestoreRBAC", G),
    "CreatePrivilegeGroup": Rule("CreatePrivilegeGroup", G),
    "DropPrivilegeGroup": Rule("DropPrivilegeGroup", G),
    "ListPrivilegeGroups": Rule("ListPrivilegeGroups", G),
    "OperatePrivilegeGroup": Rule("OperatePrivilegeGroup", G),
    # user tags, row policies, file resources, replication (not served by Strata: NOT_SUPPORTED once permitted)
    "AddUserTags": Rule("UpdateUser", U, "user_name"),
    "DeleteUserTags": Rule("UpdateUser", U, "user_name"),
    "GetUserTags": Rule("SelectUser", U, "user_name"),
    "ListUsersWithTag": Rule("SelectUser", U),
    "CreateRowPolicy": Rule("CreateOwnership", C, "collection_name"),
    "DropRowPolicy": Rule("DropOwnership", C, "collection_name"),
    "ListRowPolicies": Rule("SelectOwnership", C, "collection_name"),
    "AddFileResource": Rule("AddFileResource", G),
    "RemoveFileResource": Rule("RemoveFileResource", G),
    "ListFileResources": Rule("ListFileResources", G),
    "UpdateReplicateConfiguration": Rule("UpdateReplicateConfiguration", G),
    "GetReplicateConfiguration": Rule("GetReplicateConfiguration", G),
    "GetReplicateInfo": None,
    "ReplicateMessage": None,
    "CreateReplicateStream": None,
    "DumpMessages": None,
}
