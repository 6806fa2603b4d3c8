"""Schema DDL (real etcd, a stand-in WAL producer): a field added to a live collection, a field altered.

An added field takes the next id and the schema's next version; the catalog shows it only after
every vchannel got the SchemaChange, and its update timestamp is the largest timetick they got.
A change whose append failed stays pending: the next schema change of the collection, or the
coordinator's recovery, finishes it first, so no later change can overtake it.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator, Sequence

import pytest

from common.errors import ErrorCode, InvalidArgument, StrataError
from common.etcd.metastore import MetaStore
from common.message import SchemaChange, TypedMessage
from common.schema import CollectionSchema, DataType, FieldSchema
from common.tsoutil import compose
from coordinator.catalog import Catalog, CollectionMeta
from coordinator.data.datacoord import DataCoordinator
from coordinator.ddl import DDL
from coordinator.idalloc import IDAllocator
from coordinator.schema_ddl import SchemaDDL
from coordinator.tso import TimestampOracle
from streamingnode.client.producer import AppendResult

PCHANNELS = ["t-dml_0", "t-dml_1"]


class Producer:
    """Stands in for ``Producer``: records SchemaChanges; ``failures`` appends fail first."""

    def __init__(self) -> None:
        self.failures = 0
        self.timetick = compose(int(time.time() * 1000) + 1000)  # the WAL's timeticks come from the TSO
        self.changes: list[tuple[str, int]] = []  # (vchannel, schema version)

    async def append(self, pchannel: str, messages: Sequence[TypedMessage], **_: object) -> list[AppendResult]:
        if self.failures > 0:
            self.failures -= 1
            raise StrataError(f"streaming node of {pchannel} unreachable", ErrorCode.UNAVAILABLE)
        out = []
        for msg in messages:
            self.timetick += 1
            if isinstance(msg, SchemaChange):
                self.changes.append((msg.vchannel, msg.schema.version))
            out.append(AppendResult((1).to_bytes(8, "big"), self.timetick))
        return out


@pytest.fixture()
async def store(etcd_endpoint: str) -> AsyncIterator[MetaStore]:
    s = await MetaStore.connect(etcd_endpoint, f"schema-ddl-{uuid.uuid4().hex}")
    try:
        yield s
    finally:
        await s.close()


async def _setup(store: MetaStore, producer: Producer) -> tuple[DDL, SchemaDDL, Catalog, CollectionMeta]:
    tso, ids, catalog = TimestampOracle(store), IDAllocator(store), Catalog(store)
    await tso.start()
    await ids.start()

    async def release(_: int) -> None:
        pass

    data = DataCoordinator(store, catalog, tso, producer)  # type: ignore[arg-type]
    await data.start()
    ddl = DDL(catalog, ids, tso, producer, PCHANNELS, release, data)  # type: ignore[arg-type]
    schema = CollectionSchema(
        name="c",
        fields=(
            FieldSchema(field_id=100, name="id", dtype=DataType.INT64, is_primary=True),
            FieldSchema(field_id=101, name="v", dtype=DataType.FLOAT_VECTOR, dim=4),
            FieldSchema(field_id=102, name="s", dtype=DataType.VARCHAR, max_length=4, type_params={"max_length": "4"}),
        ),
    )
    meta = await ddl.create_collection(schema, shards_num=2, consistency_level=0, properties={})
    return ddl, SchemaDDL(ddl, catalog, tso, producer), catalog, meta  # type: ignore[arg-type]


def _field(name: str) -> FieldSchema:
    return FieldSchema(field_id=0, name=name, dtype=DataType.INT64, nullable=True)


async def test_an_added_field_reaches_every_vchannel_before_the_catalog(store: MetaStore) -> None:
    producer = Producer()
    _, schemas, catalog, meta = await _setup(store, producer)
    added = await schemas.add_field(meta, _field("n"))
    n = added.schema.field("n")
    assert (n.field_id, n.added, added.schema.version) == (103, True, 1)
    assert sorted(producer.changes) == sorted((v, 1) for v in meta.vchannels)
    assert added.update_ts == producer.timetick and added.update_ts > meta.created_ts
    stored = await catalog.get_collection(meta.collection_id)
    assert stored is not None and stored.schema == added.schema and stored.pending_schema is None
    with pytest.raises(InvalidArgument, match="field already exists, name: n"):
        await schemas.add_field(meta, _field("n"))


async def test_a_change_whose_append_failed_is_finished_before_the_next_one(store: MetaStore) -> None:
    producer = Producer()
    ddl, schemas, catalog, meta = await _setup(store, producer)
    producer.failures = 1
    with pytest.raises(StrataError, match="unreachable"):
        await schemas.add_field(meta, _field("n"))
    stored = await catalog.get_collection(meta.collection_id)
    assert stored is not None and not stored.schema.has_field("n")  # not shown yet ...
    assert stored.pending_schema is not None and stored.latest_schema.has_field("n")  # ... but kept
    # The next change finishes it first: version 1 (n) reaches the vchannels before version 2 (m).
    after = await schemas.add_field(meta, _field("m"))
    assert [f.name for f in after.schema.fields][-2:] == ["n", "m"] and after.schema.version == 2
    versions = [v for _, v in producer.changes]
    assert versions.index(2) > max(i for i, v in enumerate(versions) if v == 1)

    producer.failures = 1
    with pytest.raises(StrataError):
        await schemas.add_field(after, _field("k"))
    await SchemaDDL(ddl, catalog, TimestampOracle(store), producer).recover()  # type: ignore[arg-type]
    stored = await catalog.get_collection(meta.collection_id)
    assert stored is not None and stored.schema.has_field("k") and stored.pending_schema is None


async def test_altering_a_field_changes_the_catalog_only(store: MetaStore) -> None:
    producer = Producer()
    _, schemas, catalog, meta = await _setup(store, producer)
    altered = await schemas.alter_field(meta, "s", {"max_length": "16", "mmap.enabled": "True"}, [])
    s = altered.schema.field("s")
    assert (s.max_length, s.type_params) == (16, {"max_length": "16", "mmap.enabled": "True"})
    assert altered.schema.version == 1 and altered.update_ts > meta.update_ts and producer.changes == []
    again = await schemas.alter_field(altered, "s", {}, ["mmap.enabled"])
    assert again.schema.field("s").type_params == {"max_length": "16"}
    with pytest.raises(InvalidArgument, match="field nope does not exist in collection"):
        await schemas.alter_field(meta, "nope", {"mmap.enabled": "True"}, [])
