"""The "default" database record (real etcd): written once by the first leader, then only read."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest

from common.errors import CODE_TABLE, DatabaseNotFound
from common.etcd.metastore import MetaStore
from coordinator.databases import Databases


@pytest.fixture()
async def store(etcd_endpoint: str) -> AsyncIterator[MetaStore]:
    s = await MetaStore.connect(etcd_endpoint, f"databases-{uuid.uuid4().hex}")
    try:
        yield s
    finally:
        await s.close()


async def test_default_is_created_once_and_keeps_its_creation_time(store: MetaStore) -> None:
    first = Databases(store, clock_ns=lambda: 1_000)
    await first.start()
    later = Databases(store, clock_ns=lambda: 2_000)  # a later leader
    await later.start()
    default = await later.get("default")
    assert (default.name, default.database_id, default.created_ns, default.properties) == ("default", 1, 1_000, {})
    assert await later.get("") == default
    assert [d.name for d in await later.list()] == ["default"]


async def test_another_database_is_not_found(store: MetaStore) -> None:
    dbs = Databases(store)
    await dbs.start()
    with pytest.raises(DatabaseNotFound) as err:
        await dbs.get("nodb")
    assert err.value.message == "database not found[database=nodb]"
    assert CODE_TABLE[err.value.code].milvus_code == 800
