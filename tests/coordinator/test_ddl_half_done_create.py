"""A create_collection whose WAL append fails must not leave its name stuck (real etcd, fake WAL producer).

The create reserves the name (state CREATING) before it appends CreateCollection
to the vchannels. When an append fails (a streaming node or etcd briefly away)
the collection was left CREATING until the next coordinator start: invisible to
``get`` and ``has_collection``, yet every new create answered "already exists".
A later create of the name now finishes it first, as recovery would.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence

import pytest

from common.errors import CollectionNotFound, ErrorCode, StrataError
from common.etcd.metastore import MetaStore
from common.message import TypedMessage
from common.schema import CollectionSchema, DataType, FieldSchema
from coordinator.catalog import Catalog, CollectionState
from coordinator.data.datacoord import DataCoordinator
from coordinator.ddl import DDL
from coordinator.idalloc import IDAllocator
from coordinator.tso import TimestampOracle
from streamingnode.client.producer import AppendResult

PCHANNELS = ["t-dml_0", "t-dml_1"]


class FlakyProducer:
    """Stands in for ``Producer``: the first ``failures`` appends fail as if the streaming node were away."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.appended: list[str] = []

    async def append(self, pchannel: str, messages: Sequence[TypedMessage], **_: object) -> list[AppendResult]:
        if self.failures > 0:
            self.failures -= 1
            raise StrataError(f"streaming node of {pchannel} unreachable", ErrorCode.UNAVAILABLE)
        self.appended.append(pchannel)
        return [AppendResult((1).to_bytes(8, "big"), 1) for _ in messages]


@pytest.fixture()
async def store(etcd_endpoint: str) -> AsyncIterator[MetaStore]:
    s = await MetaStore.connect(etcd_endpoint, f"ddl-{uuid.uuid4().hex}")
    try:
        yield s
    finally:
        await s.close()


async def _ddl(store: MetaStore, producer: FlakyProducer) -> tuple[DDL, Catalog]:
    tso, ids, catalog = TimestampOracle(store), IDAllocator(store), Catalog(store)
    await tso.start()
    await ids.start()

    async def release(_: int) -> None:
        pass

    data = DataCoordinator(store, catalog, tso, producer)  # type: ignore[arg-type]
    await data.start()
    return DDL(catalog, ids, tso, producer, PCHANNELS, release, data), catalog  # type: ignore[arg-type]


def _schema(name: str, dim: int = 4) -> CollectionSchema:
    return CollectionSchema(
        name=name,
        fields=(
            FieldSchema(field_id=100, name="id", dtype=DataType.INT64, is_primary=True),
            FieldSchema(field_id=101, name="v", dtype=DataType.FLOAT_VECTOR, dim=dim),
        ),
    )


async def _create(ddl: DDL, schema: CollectionSchema) -> object:
    return await ddl.create_collection(schema, shards_num=2, consistency_level=0, properties={})


async def test_retrying_a_create_whose_append_failed_finishes_it(store: MetaStore) -> None:
    producer = FlakyProducer(failures=1)
    ddl, catalog = await _ddl(store, producer)
    with pytest.raises(StrataError, match="unreachable"):
        await _create(ddl, _schema("c"))
    # Half done: the name is reserved, the collection is not visible.
    [half] = await catalog.list_collections()
    assert half.state == CollectionState.CREATING
    with pytest.raises(CollectionNotFound):
        await ddl.get(name="c")

    meta = await _create(ddl, _schema("c"))  # the client retries the same create

    assert await ddl.get(name="c") == meta
    [done] = await catalog.list_collections()
    assert (done.collection_id, done.state) == (half.collection_id, CollectionState.CREATED)
    # Every vchannel heard of it; one may have heard twice (the WAL side is idempotent, as on recovery).
    assert set(producer.appended) == set(half.pchannels)
    with pytest.raises(StrataError) as err:  # from now on the name is taken, as usual
        await _create(ddl, _schema("c"))
    assert err.value.code == ErrorCode.COLLECTION_ALREADY_EXISTS


async def test_a_different_create_of_a_half_done_name_finishes_the_first_and_is_refused(store: MetaStore) -> None:
    ddl, catalog = await _ddl(store, FlakyProducer(failures=1))
    with pytest.raises(StrataError, match="unreachable"):
        await _create(ddl, _schema("c", dim=4))

    with pytest.raises(StrataError) as err:
        await _create(ddl, _schema("c", dim=8))

    assert err.value.code == ErrorCode.COLLECTION_ALREADY_EXISTS
    meta = await ddl.get(name="c")  # the first create may have been acknowledged to nobody, but it won
    assert meta.schema.field("v").dim == 4
    assert [m.state for m in await catalog.list_collections()] == [CollectionState.CREATED]
