"""``BackupRBAC`` and ``RestoreRBAC`` (mixed into ``MilvusProxy``): Milvus's ``RBACMeta`` and back.

The backup is read from the proxy's state copy (``common/rbac/backup.py`` says what it holds:
users with their bcrypt hashes, never a password); a restore goes to the coordinator, which
checks it whole and writes it, then the proxy reloads its copy, as for every RBAC change.
"""

from __future__ import annotations

from typing import TypeAlias

import grpc
from pymilvus.grpc_gen import common_pb2, milvus_pb2

from common.rbac.backup import RBACBackup, backup_of
from common.rbac.privileges import normalize_privilege
from protos import security_pb2 as spb
from proxy.auth.interceptor import DEFAULT_DB
from proxy.parts import ProxyParts
from proxy.rpc import milvus_rpc
from proxy.status import success

_Ctx: TypeAlias = grpc.aio.ServicerContext


def rbac_meta(backup: RBACBackup) -> milvus_pb2.RBACMeta:
    """``backup`` as Milvus's ``RBACMeta``."""
    return milvus_pb2.RBACMeta(
        users=[milvus_pb2.UserInfo(user=u.name, password=u.password_hash,
                                   roles=[milvus_pb2.RoleEntity(name=r) for r in u.roles]) for u in backup.users],
        roles=[milvus_pb2.RoleEntity(name=n, description=d) for n, d in backup.roles],
        grants=[
            milvus_pb2.GrantEntity(
                role=milvus_pb2.RoleEntity(name=g.role),
                object=milvus_pb2.ObjectEntity(name=g.object_type.value),
                object_name=g.object_name,
                db_name=g.db_name,
                grantor=milvus_pb2.GrantorEntity(user=milvus_pb2.UserEntity(name=g.grantor),
                                                 privilege=milvus_pb2.PrivilegeEntity(name=g.privilege)),
            )
            for g in backup.grants
        ],
        privilege_groups=[
            milvus_pb2.PrivilegeGroupInfo(group_name=n, privileges=[milvus_pb2.PrivilegeEntity(name=p) for p in sorted(ps)])
            for n, ps in backup.groups
        ],
    )


def restore_request(meta: milvus_pb2.RBACMeta) -> spb.RestoreRequest:
    """Milvus's ``RBACMeta`` as the coordinator's restore request (privilege names as the API spells them)."""
    return spb.RestoreRequest(
        roles=[spb.RoleRequest(role=r.name, description=r.description) for r in meta.roles],
        groups=[spb.PrivilegeGroupRequest(group=g.group_name, privileges=[normalize_privilege(p.name) for p in g.privileges])
                for g in meta.privilege_groups],
        grants=[
            spb.Grant(role=g.role.name, object_type=g.object.name, db_name=g.db_name or DEFAULT_DB,
                      object_name=g.object_name, privilege=normalize_privilege(g.grantor.privilege.name),
                      grantor=g.grantor.user.name)
            for g in meta.grants
        ],
        users=[spb.RestoredUser(user=u.user, password_hash=u.password, roles=[r.name for r in u.roles])
               for u in meta.users],
    )


class RBACBackupRPCs(ProxyParts):
    @milvus_rpc(milvus_pb2.BackupRBACMetaResponse)
    async def BackupRBAC(self, request: milvus_pb2.BackupRBACMetaRequest, context: _Ctx) -> milvus_pb2.BackupRBACMetaResponse:
        return milvus_pb2.BackupRBACMetaResponse(status=success(), RBAC_meta=rbac_meta(backup_of(self._security.states.state)))

    @milvus_rpc(common_pb2.Status)
    async def RestoreRBAC(self, request: milvus_pb2.RestoreRBACMetaRequest, context: _Ctx) -> common_pb2.Status:
        await self._security.change("RestoreRBAC", restore_request(request.RBAC_meta))
        return success()
