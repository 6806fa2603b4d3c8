"""Database records (real etcd): "default" written once by the first leader; others created, altered,
dropped; collection records and name keys scoped by database."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator

import pytest

from common.errors import CODE_TABLE, DatabaseNotFound, StrataError
from common.etcd.metastore import MetaStore
from common.schema import CollectionSchema, DataType, FieldSchema
from coordinator.catalog import CollectionMeta, alias_key, name_key
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


async def test_databases_are_created_altered_and_dropped(store: MetaStore) -> None:
    ids = iter(range(100, 200))

    async def allocate() -> int:
        return next(ids)

    dbs = Databases(store, clock_ns=lambda: 5_000, allocate_id=allocate)
    await dbs.start()
    held: set[int] = set()

    async def has_collections(db_id: int) -> bool:
        return db_id in held

    dbs.bind(asyncio.Lock(), has_collections)
    sales = await dbs.create("sales", {"owner": "ann"})
    assert (sales.database_id, sales.created_ns, sales.properties) == (100, 5_000, {"owner": "ann"})
    with pytest.raises(StrataError, match="database already exist: sales"):
        await dbs.create("sales", {})
    altered = await dbs.alter("sales", {"k": "v"}, ["owner"])
    assert (await dbs.get("sales")).properties == altered.properties == {"k": "v"}
    held.add(100)
    with pytest.raises(StrataError, match="database:sales not empty"):
        await dbs.drop("sales")
    held.clear()
    await dbs.drop("sales")
    await dbs.drop("sales")  # gone already: no error
    assert [d.name for d in await dbs.list()] == ["default"]
    with pytest.raises(StrataError, match="can not drop default database"):
        await dbs.drop("default")


def test_collection_records_written_before_databases_belong_to_default() -> None:
    schema = CollectionSchema(
        name="old", fields=(FieldSchema(field_id=100, name="id", dtype=DataType.INT64, is_primary=True),)
    )
    meta = CollectionMeta(collection_id=7, name="old", schema=schema, vchannels=("p_7v0",), consistency_level=0)
    raw = json.loads(meta.to_json())
    del raw["db_id"], raw["db_name"]
    old = CollectionMeta.from_json(json.dumps(raw).encode())
    assert (old.db_id, old.db_name) == (1, "default")


def test_names_and_aliases_are_keyed_by_database() -> None:
    assert name_key(1, "items") == "rootcoord/collection-name/items"  # "default" keeps the keys it had
    assert name_key(42, "items") == "rootcoord/collection-name/42/items"
    assert alias_key(42, "cur") == "rootcoord/alias/42/cur"
