"""Databases as Milvus 2.6 has them, through pymilvus against a real standalone.

Each call (create, list, describe, alter and drop properties, drop, use), names scoped per
database (the same collection name in two databases is two collections; an alias lives in its
database), the database named in the request's ``db_name`` or in the ``dbname`` metadata, the
refusals with Milvus' codes and texts (``internal/rootcoord/meta_table.go``,
``internal/proxy/util.go`` ``ValidateDatabaseName``, ``pkg/util/merr``), and the properties
Strata enforces (``database.max.collections``, ``database.force.deny.writing`` / ``reading``,
``database.replica.number``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from pymilvus import MilvusClient, MilvusException
from pymilvus.grpc_gen import common_pb2, milvus_pb2, milvus_pb2_grpc

from tests.e2e.util import unique_name
from tests.harness import Standalone

pytestmark = pytest.mark.timeout(180)


@pytest.fixture()
def stub(standalone: Standalone) -> Iterator[milvus_pb2_grpc.MilvusServiceStub]:
    with grpc.insecure_channel(standalone.uri.removeprefix("http://")) as channel:
        yield milvus_pb2_grpc.MilvusServiceStub(channel)


def _drop_everything(client: MilvusClient, db: str) -> None:
    client.use_database(db)
    for name in client.list_collections():
        for alias in client.list_aliases(name)["aliases"]:
            client.drop_alias(alias)
        client.drop_collection(name)
    client.use_database("default")
    client.drop_database(db)


@pytest.fixture()
def db(milvus: MilvusClient) -> Iterator[str]:
    name = unique_name("db")
    milvus.create_database(name)
    try:
        yield name
    finally:
        _drop_everything(milvus, name)


def _make(client: MilvusClient, name: str, dim: int = 2) -> None:
    client.create_collection(name, dimension=dim, consistency_level="Strong")


def _ids(client: MilvusClient, name: str) -> list[int]:
    return sorted(r["id"] for r in client.query(name, filter="id >= 0", output_fields=["id"]))


def test_create_list_describe_alter_and_drop(milvus: MilvusClient) -> None:
    name = unique_name("db")
    milvus.create_database(name, properties={"key_1": "1"})
    assert name in milvus.list_databases()
    assert milvus.list_databases()[0] == "default"
    assert milvus.describe_database(name) == {"name": name, "key_1": "1"}
    milvus.alter_database_properties(name, {"database.max.collections": 3, "key.4": "a.b.c"})
    assert milvus.describe_database(name) == {
        "name": name,
        "key_1": "1",
        "database.max.collections": "3",
        "key.4": "a.b.c",
    }
    milvus.drop_database_properties(name, ["key_1", "database.max.collections", "absent"])
    assert milvus.describe_database(name) == {"name": name, "key.4": "a.b.c"}
    milvus.drop_database(name)
    assert name not in milvus.list_databases()
    milvus.drop_database(name)  # dropping a database that is not there succeeds, as in Milvus


def test_describe_database_answers_id_and_creation_time(stub: milvus_pb2_grpc.MilvusServiceStub, db: str) -> None:
    resp = stub.DescribeDatabase(milvus_pb2.DescribeDatabaseRequest(db_name=db))
    assert resp.status.code == 0 and resp.db_name == db
    assert resp.dbID > 1 and resp.created_timestamp > 0
    listed = stub.ListDatabases(milvus_pb2.ListDatabasesRequest())
    assert dict(zip(listed.db_names, listed.db_ids, strict=True))[db] == resp.dbID


def test_the_same_name_in_two_databases_is_two_collections(milvus: MilvusClient, db: str) -> None:
    name = unique_name("same")
    _make(milvus, name, dim=2)
    try:
        milvus.insert(name, [{"id": i, "vector": [1.0, float(i)]} for i in range(3)])
        milvus.use_database(db)
        assert not milvus.has_collection(name)
        _make(milvus, name, dim=3)
        milvus.insert(name, [{"id": 100 + i, "vector": [0.0, 1.0, float(i)]} for i in range(5)])
        assert milvus.list_collections() == [name]
        assert milvus.describe_collection(name)["fields"][1]["params"]["dim"] == 3
        assert _ids(milvus, name) == [100, 101, 102, 103, 104]
        hits = milvus.search(name, data=[[0.0, 1.0, 2.0]], limit=10)
        assert sorted(h["id"] for h in hits[0]) == [100, 101, 102, 103, 104]
        milvus.use_database("default")
        assert _ids(milvus, name) == [0, 1, 2]
        hits = milvus.search(name, data=[[1.0, 2.0]], limit=10)
        assert sorted(h["id"] for h in hits[0]) == [0, 1, 2]
        assert milvus.describe_collection(name)["fields"][1]["params"]["dim"] == 2
        milvus.drop_collection(name)  # the default database's only
        milvus.use_database(db)
        assert _ids(milvus, name) == [100, 101, 102, 103, 104]
    finally:
        milvus.use_database("default")
        milvus.drop_collection(name)


def test_describe_collection_names_its_database(stub: milvus_pb2_grpc.MilvusServiceStub, milvus: MilvusClient, db: str) -> None:
    name = unique_name("desc")
    milvus.use_database(db)
    _make(milvus, name)
    resp = stub.DescribeCollection(milvus_pb2.DescribeCollectionRequest(db_name=db, collection_name=name))
    dbid = stub.DescribeDatabase(milvus_pb2.DescribeDatabaseRequest(db_name=db)).dbID
    assert (resp.status.code, resp.db_name, resp.db_id) == (0, db, dbid)


def test_the_database_comes_from_the_request_or_the_metadata(
    stub: milvus_pb2_grpc.MilvusServiceStub, milvus: MilvusClient, db: str
) -> None:
    name = unique_name("where")
    milvus.use_database(db)
    _make(milvus, name)
    assert stub.HasCollection(milvus_pb2.HasCollectionRequest(db_name=db, collection_name=name)).value
    assert stub.HasCollection(milvus_pb2.HasCollectionRequest(collection_name=name), metadata=[("dbname", db)]).value
    assert not stub.HasCollection(milvus_pb2.HasCollectionRequest(collection_name=name)).value
    # The request's field wins over the metadata, as in Milvus' database interceptor.
    assert not stub.HasCollection(
        milvus_pb2.HasCollectionRequest(db_name="default", collection_name=name), metadata=[("dbname", db)]
    ).value
    shown = stub.ShowCollections(milvus_pb2.ShowCollectionsRequest(), metadata=[("dbname", db)])
    assert list(shown.collection_names) == [name]


def test_aliases_live_in_their_database(milvus: MilvusClient, db: str) -> None:
    alias = unique_name("al")
    first, second = unique_name("first"), unique_name("second")
    _make(milvus, first)
    milvus.use_database(db)
    _make(milvus, second)
    milvus.insert(second, [{"id": 7, "vector": [1.0, 1.0]}])
    try:
        milvus.use_database("default")
        milvus.create_alias(first, alias)
        milvus.use_database(db)
        milvus.create_alias(second, alias)  # the same alias in another database
        assert _ids(milvus, alias) == [7]
        assert milvus.describe_alias(alias) == {"alias": alias, "collection_name": second, "db_name": db}
        with pytest.raises(MilvusException) as err:
            milvus.alter_alias(first, alias)  # "first" is not in this database
        assert (err.value.code, err.value.message) == (100, f"collection not found[database={db}][collection={first}]")
        milvus.drop_alias(alias)
        with pytest.raises(MilvusException) as err:
            milvus.describe_alias(alias)
        assert (err.value.code, err.value.message) == (1600, f"alias not found[database={db}][alias={alias}]")
        milvus.use_database("default")
        assert milvus.describe_alias(alias)["collection_name"] == first
    finally:
        milvus.use_database("default")
        milvus.drop_alias(alias)
        milvus.drop_collection(first)


def test_missing_names_carry_their_database(milvus: MilvusClient, db: str) -> None:
    milvus.use_database(db)
    name = unique_name("missing")
    with pytest.raises(MilvusException) as err:
        milvus.describe_collection(name)
    assert (err.value.code, err.value.message) == (100, f"can't find collection[database={db}][collection={name}]")
    with pytest.raises(MilvusException) as err:
        milvus.query(name, filter="id >= 0")
    assert err.value.code == 100 and f"[database={db}][collection={name}]" in err.value.message


def test_refusals_have_milvus_codes_and_texts(stub: milvus_pb2_grpc.MilvusServiceStub, milvus: MilvusClient, db: str) -> None:
    def status(answer: Any) -> tuple[int, str]:
        s: common_pb2.Status = answer if isinstance(answer, common_pb2.Status) else answer.status
        return s.code, s.reason

    # Milvus 2.6's meta table refuses with plain errors: code 65535.
    assert status(stub.CreateDatabase(milvus_pb2.CreateDatabaseRequest(db_name=db))) == (
        65535,
        f"database already exist: {db}",
    )
    assert status(stub.CreateDatabase(milvus_pb2.CreateDatabaseRequest(db_name="default"))) == (
        65535,
        "database already exist: default",
    )
    assert status(stub.CreateDatabase(milvus_pb2.CreateDatabaseRequest(db_name=""))) == (
        802,
        "database name couldn't be empty: invalid database name[database=]",
    )
    assert status(stub.CreateDatabase(milvus_pb2.CreateDatabaseRequest(db_name="1db"))) == (
        802,
        "the first character of a database name must be an underscore or letter: invalid database name[database=1db]",
    )
    assert status(stub.CreateDatabase(milvus_pb2.CreateDatabaseRequest(db_name="a-b"))) == (
        802,
        "database name can only contain numbers, letters and underscores: invalid database name[database=a-b]",
    )
    assert status(stub.DropDatabase(milvus_pb2.DropDatabaseRequest(db_name="default"))) == (
        65535,
        "can not drop default database",
    )
    milvus.use_database(db)
    _make(milvus, unique_name("keep"))
    with pytest.raises(MilvusException) as err:
        milvus.drop_database(db)
    assert (err.value.code, err.value.message) == (
        65535,
        f"database:{db} not empty, must drop all collections before drop database",
    )
    assert db in milvus.list_databases()
    with pytest.raises(MilvusException) as err:
        milvus.use_database("nodb")
    assert (err.value.code, err.value.message) == (800, "database not found[database=nodb]")
    for call in (
        lambda: stub.HasCollection(milvus_pb2.HasCollectionRequest(db_name="nodb", collection_name="c")),
        lambda: stub.ShowCollections(milvus_pb2.ShowCollectionsRequest(db_name="nodb")),
        lambda: stub.AlterDatabase(milvus_pb2.AlterDatabaseRequest(db_name="nodb")),
    ):
        assert status(call()) == (800, "database not found[database=nodb]")


def test_at_most_64_databases_besides_default(milvus: MilvusClient) -> None:
    room = 64 - (len(milvus.list_databases()) - 1)
    made = [unique_name("many") for _ in range(room)]
    try:
        for name in made:
            milvus.create_database(name)
        with pytest.raises(MilvusException) as err:
            milvus.create_database(unique_name("over"))
        assert (err.value.code, err.value.message) == (801, "exceeded the limit number of database[limit=64]")
    finally:
        for name in made:
            milvus.drop_database(name)


def test_max_collections_is_enforced_per_database(milvus: MilvusClient) -> None:
    name = unique_name("db")
    milvus.create_database(name, properties={"database.max.collections": "2"})
    try:
        milvus.use_database(name)
        _make(milvus, unique_name("a"))
        _make(milvus, unique_name("b"))
        with pytest.raises(MilvusException) as err:
            _make(milvus, unique_name("c"))
        assert (err.value.code, err.value.message) == (
            102,
            f"exceeded the limit number of collections[dbName={name}][limit=2]",
        )
        assert len(milvus.list_collections()) == 2
        milvus.drop_database_properties(name, ["database.max.collections"])
        _make(milvus, unique_name("c"))
        assert len(milvus.list_collections()) == 3
    finally:
        _drop_everything(milvus, name)


def test_force_deny_writing_and_reading(milvus: MilvusClient, db: str) -> None:
    name = unique_name("deny")
    milvus.use_database(db)
    _make(milvus, name)
    milvus.insert(name, [{"id": 1, "vector": [1.0, 0.0]}])
    milvus.alter_database_properties(db, {"database.force.deny.writing": "true"})
    denied = (9, "quota exceeded[reason=access has been disabled by the administrator]")
    for write in (
        lambda: milvus.insert(name, [{"id": 2, "vector": [0.0, 1.0]}]),
        lambda: milvus.upsert(name, [{"id": 1, "vector": [0.0, 1.0]}]),
        lambda: milvus.delete(name, ids=[1]),
    ):
        with pytest.raises(MilvusException) as err:
            write()
        assert (err.value.code, err.value.message) == denied
    assert _ids(milvus, name) == [1]  # reads still work, and nothing was written
    milvus.alter_database_properties(db, {"database.force.deny.reading": "true"})
    for read in (
        lambda: milvus.query(name, filter="id >= 0"),
        lambda: milvus.search(name, data=[[1.0, 0.0]], limit=1),
    ):
        with pytest.raises(MilvusException) as err:
            read()
        assert (err.value.code, err.value.message) == denied
    milvus.drop_database_properties(db, ["database.force.deny.writing", "database.force.deny.reading"])
    milvus.insert(name, [{"id": 2, "vector": [0.0, 1.0]}])
    assert _ids(milvus, name) == [1, 2]
    milvus.use_database("default")
    other = unique_name("free")
    _make(milvus, other)  # another database is not denied
    milvus.insert(other, [{"id": 1, "vector": [1.0, 0.0]}])
    milvus.drop_collection(other)


def test_rename_into_another_database(milvus: MilvusClient, db: str) -> None:
    name, new = unique_name("mv"), unique_name("moved")
    _make(milvus, name)
    milvus.insert(name, [{"id": 3, "vector": [1.0, 0.0]}])
    milvus.rename_collection(name, new, target_db=db)
    assert not milvus.has_collection(name)
    milvus.use_database(db)
    assert milvus.list_collections() == [new]
    assert _ids(milvus, new) == [3]
    milvus.create_alias(new, unique_name("al"))
    with pytest.raises(MilvusException) as err:
        milvus.rename_collection(new, name, target_db="default")
    assert (err.value.code, err.value.message) == (
        65535,
        "fail to rename db name, must drop all aliases of this collection before rename",
    )
    assert milvus.list_collections() == [new]


def test_replica_number_is_the_default_for_loads_in_the_database(milvus: MilvusClient, db: str) -> None:
    name = unique_name("rep")
    milvus.use_database(db)
    milvus.create_collection(name, dimension=2, consistency_level="Strong")
    milvus.release_collection(name)
    with pytest.raises(MilvusException) as explicit:
        milvus.load_collection(name, replica_number=2)  # one query node: two replicas do not fit
    assert "with 2 replicas" in explicit.value.message
    milvus.alter_database_properties(db, {"database.replica.number": "2"})
    with pytest.raises(MilvusException) as by_database:
        milvus.load_collection(name)  # pymilvus leaves the number to the server
    assert (by_database.value.code, by_database.value.message) == (explicit.value.code, explicit.value.message)
    milvus.drop_database_properties(db, ["database.replica.number"])
    milvus.load_collection(name)
    assert len(milvus.describe_replica(name)) == 1


def test_a_new_collection_takes_the_database_time_zone(milvus: MilvusClient, db: str) -> None:
    milvus.alter_database_properties(db, {"timezone": "Asia/Tokyo"})
    milvus.use_database(db)
    name = unique_name("tz")
    _make(milvus, name)
    assert milvus.describe_collection(name)["properties"]["timezone"] == "Asia/Tokyo"
    with pytest.raises(MilvusException) as err:
        milvus.alter_database_properties(db, {"timezone": "Mars/Base"})
    assert (err.value.code, err.value.message) == (1100, "unknown or invalid IANA Time Zone ID: Mars/Base: invalid parameter")


def test_connect_naming_a_missing_database_is_refused(stub: milvus_pb2_grpc.MilvusServiceStub, db: str) -> None:
    request = milvus_pb2.ConnectRequest()
    assert stub.Connect(request, metadata=[("dbname", db)]).status.code == 0
    refused = stub.Connect(request, metadata=[("dbname", "nodb")]).status
    assert (refused.code, refused.reason) == (800, "database not found[database=nodb]")


def test_a_client_made_for_a_database_works_in_it(standalone: Standalone, milvus: MilvusClient, db: str) -> None:
    name = unique_name("own")
    scoped = MilvusClient(standalone.uri, db_name=db)
    try:
        _make(scoped, name)
        scoped.insert(name, [{"id": 5, "vector": [1.0, 0.0]}])
        assert scoped.list_collections() == [name]
        assert _ids(scoped, name) == [5]
        assert not milvus.has_collection(name)  # the other client works in "default"
    finally:
        scoped.close()
