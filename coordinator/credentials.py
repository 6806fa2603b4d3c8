"""Users, roles, grants and privilege groups: the coordinator's side (it alone writes them).

``start`` creates, once per cluster (put-if-absent), the ``root`` user with the configured
default password (``common.security.defaultRootPassword``, Milvus's ``Milvus``), the built-in
roles ``admin`` and ``public``, and ``public``'s default grants (Milvus's, see
``common/rbac/privileges.py``). Every change reads the current state, checks it (a user or role
that must exist, one that must not, a grant's privilege valid for its object type), then writes
in one etcd transaction; changes are serialized by one lock. Passwords arrive as bcrypt hashes
made by the proxy; only ``root``'s first one is hashed here (in a thread).
Grants on a collection go with it, as in Milvus 2.6: revoked when it is dropped, moved when it
is renamed (``collection_dropped``, ``collection_renamed``, called by the coordinator service).
Key layout: ``common/rbac/catalog.py``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from dataclasses import replace

import structlog

from common.errors import ErrorCode, InvalidArgument, StrataError
from common.etcd.metastore import TXN_BATCH_OPS, MetaStore, Op
from common.passwords import hash_password
from common.rbac import catalog
from common.rbac.backup import RBACBackup, restore_ops
from common.rbac.catalog import Grant, SecurityState, UserRecord
from common.rbac.names import check_group_name, check_role_name, check_user_name
from common.rbac.privileges import (
    ALL_PRIVILEGES,
    ANY,
    BUILTIN_GROUPS,
    BUILTIN_ROLES,
    PRIVILEGES_BY_TYPE,
    PUBLIC_DEFAULT_GRANTS,
    ROLE_PUBLIC,
    ROOT_USER,
    ObjectType,
    level_of,
)

# Milvus's limits (proxy.maxUserNum, proxy.maxRoleNum).
MAX_USERS = 100
MAX_ROLES = 10


def refused(message: str) -> StrataError:
    """A refusal Milvus answers with a plain error (code 65535)."""
    return StrataError(message, ErrorCode.REFUSED)


class Credentials:
    """The security catalog's writer; ``start`` bootstraps root and the built-in roles."""

    def __init__(self, store: MetaStore, *, default_root_password: str) -> None:
        self._store = store
        self._root_password = default_root_password
        self._lock = asyncio.Lock()
        self._log = structlog.get_logger().bind(component="credentials")

    async def start(self) -> None:
        if await self._store.get(f"{catalog.USER}{ROOT_USER}") is None:
            hashed = await asyncio.to_thread(hash_password, self._root_password)
            root = UserRecord(name=ROOT_USER, password_hash=hashed)
            if await self._store.create_if_absent(f"{catalog.USER}{ROOT_USER}", root.to_json()):
                self._log.info("root user created")
        for role in BUILTIN_ROLES:
            defaults = [] if role != ROLE_PUBLIC else [
                Op(key=g.key, value=g.to_json())
                for g in (
                    Grant(role=ROLE_PUBLIC, object_type=t, db_name=ANY, object_name=ANY, privilege=p, grantor=ROOT_USER)
                    for t, p in PUBLIC_DEFAULT_GRANTS
                )
            ]
            if await self._store.create_if_absent(f"{catalog.ROLE}{role}", b"{}", also=defaults):
                self._log.info("built-in role created", role=role)

    async def state(self) -> SecurityState:
        return SecurityState.from_kvs(await self._store.scan(catalog.PREFIX))

    # ---- users ---------------------------------------------------------------------------------
    async def create_user(self, name: str, password_hash: str, description: str = "") -> None:
        check_user_name(name)
        async with self._lock:
            state = await self.state()
            if name in state.users:
                raise refused(f"user already exists:{name}")
            if len(state.users) >= MAX_USERS:
                raise refused(f"unable to add user because the number of users has reached the limit {MAX_USERS}")
            record = UserRecord(name=name, password_hash=password_hash, description=description)
            await self._store.multi([Op(key=f"{catalog.USER}{name}", value=record.to_json())])
        self._log.info("user created", user=name)

    async def update_user(self, name: str, password_hash: str, description: str, expected_hash: str) -> None:
        async with self._lock:
            old = (await self.state()).users.get(name)
            if old is None:
                raise refused(f"user not found:{name}")
            if expected_hash and old.password_hash != expected_hash:
                raise refused(f"the password of user {name} changed meanwhile, try again")
            record = UserRecord(name=name, password_hash=password_hash or old.password_hash,
                                description=description or old.description)
            await self._store.multi([Op(key=f"{catalog.USER}{name}", value=record.to_json())])
        self._log.info("user updated", user=name, password_changed=bool(password_hash))

    async def drop_user(self, name: str) -> None:
        if name == ROOT_USER:
            raise InvalidArgument("root user cannot be deleted")
        async with self._lock:
            state = await self.state()
            if name not in state.users:
                return  # Milvus: dropping a missing user succeeds
            ops = [Op(key=f"{catalog.USER}{name}", value=None)]
            ops += [Op(key=f"{catalog.USER_ROLE}{name}/{r}", value=None) for r in state.roles_of(name)]
            await self._store.multi(ops)
        self._log.info("user dropped", user=name)

    # ---- roles ---------------------------------------------------------------------------------
    async def create_role(self, name: str, description: str = "") -> None:
        check_role_name(name)
        async with self._lock:
            state = await self.state()
            if name in state.roles:
                raise refused(f"role [name:\"{name}\"] already exists")
            if len(state.roles) >= MAX_ROLES + len(BUILTIN_ROLES):
                raise refused(f"unable to create role because the number of roles has reached the limit {MAX_ROLES}")
            await self._store.multi([Op(key=f"{catalog.ROLE}{name}", value=json.dumps({"description": description}).encode())])
        self._log.info("role created", role=name)

    async def alter_role(self, name: str, description: str) -> None:
        async with self._lock:
            if name not in (await self.state()).roles:
                raise refused(f"not found the role, maybe the role isn't existed or internal system error: {name}")
            await self._store.multi([Op(key=f"{catalog.ROLE}{name}", value=json.dumps({"description": description}).encode())])

    async def drop_role(self, name: str, *, force: bool) -> None:
        if name in BUILTIN_ROLES:
            raise InvalidArgument(f"the role[{name}] is a default role, which can't be dropped")
        async with self._lock:
            state = await self.state()
            if name not in state.roles:
                raise refused(f"not found the role, maybe the role isn't existed or internal system error: {name}")
            grants = state.grants_of(name)
            if grants and not force:
                raise refused(f"fail to drop the role that it has privileges. Use REVOKE API to revoke privileges: {name}")
            ops = [Op(key=f"{catalog.ROLE}{name}", value=None)]
            ops += [Op(key=f"{catalog.USER_ROLE}{u}/{name}", value=None) for u in state.users_of(name)]
            ops += [Op(key=g.key, value=None) for g in grants]
            await self._store.multi_batched(ops)
        self._log.info("role dropped", role=name, grants=len(grants))

    async def operate_user_role(self, user: str, role: str, *, remove: bool) -> None:
        async with self._lock:
            state = await self.state()
            if user not in state.users:
                raise refused(f"not found the user, maybe the user isn't existed or internal system error: {user}")
            if role not in state.roles:
                raise refused(f"not found the role, maybe the role isn't existed or internal system error: {role}")
            key = f"{catalog.USER_ROLE}{user}/{role}"
            await self._store.multi([Op(key=key, value=None if remove else b"{}")])
        self._log.info("user role changed", user=user, role=role, removed=remove)

    # ---- grants --------------------------------------------------------------------------------
    def _check_grant(self, state: SecurityState, grant: Grant) -> None:
        if grant.role not in state.roles:
            raise refused(f"not found the role, maybe the role isn't existed or internal system error: {grant.role}")
        if not grant.object_name or not grant.db_name:
            raise InvalidArgument("the object name and the database of a grant must not be empty")
        if grant.privilege == ANY or grant.privilege in state.groups:
            return
        level = level_of(grant.privilege)
        if level is None:
            raise InvalidArgument(f"not found the privilege name[{grant.privilege}]")
        if grant.privilege in BUILTIN_GROUPS or grant.privilege in ALL_PRIVILEGES:
            allowed = PRIVILEGES_BY_TYPE[grant.object_type] | {
                g for g, t in ((g, level_of(g)) for g in BUILTIN_GROUPS) if t == grant.object_type
            }
            if grant.privilege not in allowed:
                raise InvalidArgument(
                    f"not found the privilege name[{grant.privilege}] in object[{grant.object_type.value}]"
                )

    async def operate_privilege(self, grant: Grant, *, revoke: bool) -> None:
        async with self._lock:
            state = await self.state()
            if revoke:
                await self._store.multi([Op(key=grant.key, value=None)])
            else:
                self._check_grant(state, grant)
                await self._store.multi([Op(key=grant.key, value=grant.to_json())])
        self._log.info("privilege changed", role=grant.role, object_type=grant.object_type.value,
                       db=grant.db_name, object=grant.object_name, privilege=grant.privilege, revoked=revoke)

    async def collection_dropped(self, db: str, collection: str) -> None:
        """Revoke every grant on ``collection`` of ``db`` (a new collection of that name starts bare)."""
        async with self._lock:
            gone = [g for g in (await self.state()).grants if _on_collection(g, db, collection)]
            await self._store.multi_batched([Op(key=g.key, value=None) for g in gone])
        if gone:
            self._log.info("grants of a dropped collection revoked", db=db, collection=collection, grants=len(gone))

    async def collection_renamed(self, db: str, old: str, new: str) -> None:
        """Move every grant on ``old`` of ``db`` to ``new``; each move is one transaction."""
        async with self._lock:
            moved = [g for g in (await self.state()).grants if _on_collection(g, db, old)]
            for g in moved:
                await self._store.multi([Op(key=g.key, value=None), Op(key=replace(g, object_name=new).key, value=g.to_json())])
        if moved:
            self._log.info("grants of a renamed collection moved", db=db, old=old, new=new, grants=len(moved))

    # ---- backup --------------------------------------------------------------------------------
    async def restore(self, backup: RBACBackup) -> None:
        """Add a ``BackupRBAC`` answer, all or nothing: checked whole first (``restore_ops``), then
        written in one transaction, or in batches of ``TXN_BATCH_OPS`` keys when it has more (etcd
        refuses a transaction of more than ``--max-txn-ops``); a batch that fails undoes the ones
        before it (``write_or_undo``), so the catalog is as it was and the error goes to the caller."""
        async with self._lock:
            before = await self._store.scan(catalog.PREFIX)
            ops = restore_ops(SecurityState.from_kvs(before), backup, max_users=MAX_USERS, max_roles=MAX_ROLES)
            await write_or_undo(self._store, ops, {kv.key: kv.value for kv in before}, self._log)
        self._log.info("rbac restored", roles=len(backup.roles), groups=len(backup.groups),
                       grants=len(backup.grants), users=len(backup.users))

    # ---- privilege groups ----------------------------------------------------------------------
    async def create_group(self, name: str) -> None:
        check_group_name(name)
        if name in BUILTIN_GROUPS or name in ALL_PRIVILEGES:
            raise InvalidArgument(f"privilege group name [{name}] is defined by built in privileges or privilege groups")
        async with self._lock:
            if name in (await self.state()).groups:
                raise refused(f"privilege group [{name}] already exists")
            await self._store.multi([Op(key=f"{catalog.GROUP}{name}", value=json.dumps({"privileges": []}).encode())])
        self._log.info("privilege group created", group=name)

    async def drop_group(self, name: str) -> None:
        if name in BUILTIN_GROUPS:
            raise InvalidArgument(f"the privilege group [{name}] is built in, it cannot be dropped")
        async with self._lock:
            state = await self.state()
            users = sorted({g.role for g in state.grants if g.privilege == name})
            if users:
                raise refused(f"privilege group [{name}] is used by role [{', '.join(users)}], Use REVOKE API to revoke it first")
            await self._store.multi([Op(key=f"{catalog.GROUP}{name}", value=None)])
        self._log.info("privilege group dropped", group=name)

    async def operate_group(self, name: str, privileges: list[str], *, remove: bool) -> None:
        for p in privileges:
            if p not in ALL_PRIVILEGES:
                raise InvalidArgument(f"privilege name [{p}] is invalid: only single privileges go into a group")
        async with self._lock:
            current = (await self.state()).groups.get(name)
            if current is None:
                raise refused(f"there is no privilege group name [{name}] to operate")
            updated = current - set(privileges) if remove else current | set(privileges)
            value = json.dumps({"privileges": sorted(updated)}).encode()
            await self._store.multi([Op(key=f"{catalog.GROUP}{name}", value=value)])
        self._log.info("privilege group changed", group=name, privileges=sorted(privileges), removed=remove)


async def write_or_undo(
    store: MetaStore, ops: Sequence[Op], before: Mapping[str, bytes], log: structlog.typing.FilteringBoundLogger
) -> None:
    """Apply ``ops`` in transactions of ``TXN_BATCH_OPS``; if one fails, put back what every key
    written so far held in ``before`` (deleting the keys it lacked), then re-raise.

    The failing batch is undone too: a transaction that timed out may still have been applied.
    The caller holds the only writer's lock, so nothing else changed these keys meanwhile. The
    undo runs even when the caller is cancelled (that is when a half-written restore must not
    stay). Only an undo that fails itself (etcd gone) leaves part of ``ops`` written; it is logged.
    """
    tried = 0
    try:
        for first in range(0, len(ops), TXN_BATCH_OPS):
            tried = first + TXN_BATCH_OPS
            await store.multi(ops[first:tried])
    except BaseException:
        undo = [Op(key=o.key, value=before.get(o.key)) for o in ops[:tried]]
        try:
            await store.multi_batched(undo)
        except Exception:  # the original error is the one to report; this one is logged
            log.exception("undo of a partial write failed", keys=len(undo))
        else:
            log.warning("partial write undone", keys=len(undo))
        raise


def _on_collection(grant: Grant, db: str, collection: str) -> bool:
    return grant.object_type == ObjectType.COLLECTION and grant.db_name == db and grant.object_name == collection


def grant_from(role: str, object_type: str, db_name: str, object_name: str, privilege: str, grantor: str) -> Grant:
    """A ``Grant`` from wire values; an unknown object type is ``InvalidArgument``."""
    try:
        otype = ObjectType(object_type)
    except ValueError:
        raise InvalidArgument(f"invalid object type {object_type!r}: Global, Collection or User") from None
    return Grant(role=role, object_type=otype, db_name=db_name, object_name=object_name,
                 privilege=privilege, grantor=grantor)
