"""RestoreRBAC over more than one transaction's worth of keys is all or nothing (real etcd).

``Credentials.restore`` writes a big backup in batches of ``TXN_BATCH_OPS``; a batch that fails
(injected here: etcd refuses the third transaction) must leave the catalog as it was, with the
grant the restore re-wrote on an existing role back as before.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence

import pytest

from common.errors import StrataError
from common.etcd.metastore import TXN_BATCH_OPS, MetaStore, Op
from common.passwords import hash_password
from common.rbac import catalog
from common.rbac.backup import BackedUpUser, RBACBackup
from common.rbac.catalog import Grant
from common.rbac.privileges import ObjectType
from coordinator.credentials import Credentials

# One bcrypt hash for every user of the backup (hashing 60 would take ~20 s on a loaded machine).
HASH = hash_password("a-long-password")


class FailingStore(MetaStore):
    """A real MetaStore whose ``fail_at``-th transaction through ``multi`` is refused."""

    def __init__(self, store: MetaStore, root: str, fail_at: int) -> None:
        super().__init__(store.client, root)
        self.calls = 0
        self.fail_at = fail_at

    async def multi(self, ops: Sequence[Op]) -> None:
        self.calls += 1
        if self.calls == self.fail_at:
            raise StrataError("etcd refused the transaction (injected)")
        await super().multi(ops)


@pytest.fixture()
async def root(etcd_endpoint: str) -> AsyncIterator[tuple[MetaStore, str]]:
    name = f"rbac-restore-{uuid.uuid4().hex}"
    store = await MetaStore.connect(etcd_endpoint, name)
    try:
        yield store, name
    finally:
        await store.close()


async def _catalog(store: MetaStore) -> dict[str, bytes]:
    return {kv.key: kv.value for kv in await store.scan(catalog.PREFIX)}


def _grant(role: str, collection: str, privilege: str = "Search", grantor: str = "root") -> Grant:
    return Grant(role=role, object_type=ObjectType.COLLECTION, db_name="default", object_name=collection,
                 privilege=privilege, grantor=grantor)


def _big_backup() -> RBACBackup:
    roles = tuple((f"role{i}", "") for i in range(5))
    grants = tuple(_grant(f"role{i % 5}", f"c{i}") for i in range(120))
    # A grant the catalog holds already (same key), from another grantor: the undo must put it back.
    grants += (_grant("existing", "kept", grantor="restorer"),)
    users = tuple(BackedUpUser(name=f"user{i}", password_hash=HASH, roles=(f"role{i % 5}",)) for i in range(60))
    return RBACBackup(users=users, roles=roles, grants=grants)


async def test_a_restore_failing_partway_leaves_the_catalog_as_it_was(root: tuple[MetaStore, str]) -> None:
    store, name = root
    creds = Credentials(store, default_root_password="Milvus")
    await creds.start()
    await creds.create_role("existing")
    await creds.operate_privilege(_grant("existing", "kept"), revoke=False)
    before = await _catalog(store)
    backup = _big_backup()
    assert len(backup.grants) + len(backup.roles) + 2 * len(backup.users) > 2 * TXN_BATCH_OPS  # three batches

    failing = FailingStore(store, name, fail_at=3)
    with pytest.raises(StrataError, match="injected"):
        await Credentials(failing, default_root_password="Milvus").restore(backup)
    assert failing.calls >= 3  # two batches were written before the failure
    assert await _catalog(store) == before

    await creds.restore(backup)  # the same restore, with etcd willing, goes through whole
    state = await creds.state()
    assert {f"role{i}" for i in range(5)} <= set(state.roles)
    assert len(state.users) == 61 and state.roles_of("user7") == frozenset({"role2"})
    assert len([g for g in state.grants if g.role.startswith("role")]) == 120
    assert [g.grantor for g in state.grants_of("existing")] == ["restorer"]
