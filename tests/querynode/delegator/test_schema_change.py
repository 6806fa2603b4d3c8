"""A field added to the collection reaches every copy a delegator reads: growing rows, sealed ones on a
worker, and inserts a proxy converted with the old schema after the change.

A real WAL (local backend) served by the streaming node's handler; the query node's service with
its real delegator and in-process worker. Rows written before the change read the field's default
value (or null), rows after it their values; a filter on the field sees both; a search of an
added vector field never returns a row written before it.
"""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from common.message import Insert, SchemaChange, decode
from common.readplan import ReadFilter, ReadPlan, VectorQuery
from common.schema import DataType, FieldSchema
from common.storage.objectstore import ObjectStore
from protos.common_pb2 import Message
from querynode.service.service import QueryNodeService
from tests.querynode.delegator.walnode import (
    LOCAL,
    PART,
    SCHEMA,
    C,
    Node,
    P,
    V,
    create_and_insert,
    flushed_segment,
    placement,
    rows,
    watch_request,
)

pytestmark = pytest.mark.timeout(60)

NEW = dataclasses.replace(
    SCHEMA,
    fields=(
        *SCHEMA.fields,
        FieldSchema(field_id=102, name="n", dtype=DataType.INT64, nullable=True, added=True),
        FieldSchema(field_id=103, name="tag", dtype=DataType.VARCHAR, max_length=8, nullable=True,
                    default_value="old", added=True),
        FieldSchema(field_id=104, name="w", dtype=DataType.FLOAT_VECTOR, dim=2, nullable=True, added=True),
    ),
    version=1,
)


def _insert(table: pa.Table, segment_id: int) -> Message:
    msg = Insert.of(vchannel=V, collection_id=C, partition_id=PART, table=table).encode()
    msg.header = decode(msg).assigned(segment_id).header()
    return msg


def _spec(guarantee: int, filter: str = "") -> ReadPlan:
    """A read as the proxy plans it, its filter bound to the new schema (the guarantee covers it)."""
    return ReadPlan(guarantee_ts=guarantee, filter=ReadFilter.parse(filter, NEW), output_fields=("n", "tag", "w"),
                    timeout=5)


async def _until(check: Any) -> None:
    async with asyncio.timeout(10):
        while not check():
            await asyncio.sleep(0.02)


async def test_an_added_field_reads_as_its_fill_in_every_copy_written_before(node: Node, tmp_path: Path) -> None:
    store = ObjectStore.from_uri((tmp_path / "storage").as_uri())
    wal = node.manager.get(P, 1)
    created, _ = await create_and_insert(node, 77, range(100, 103))  # growing, old schema
    sealed = flushed_segment(store, 5, range(3), created.timetick)  # sealed, old schema
    service = QueryNodeService(1, node.source, store)
    service.serve_at(LOCAL)
    try:
        await service.WatchChannel(watch_request(created, placements=[placement(sealed)]), None)  # type: ignore[arg-type]
        d = service.delegators[V]
        await _until(lambda: d.serviceable and 5 in d.dist.current.sealed)
        await wal.append([SchemaChange(vchannel=V, collection_id=C, schema=NEW).encode()])
        fresh = rows(range(200, 202))
        fresh = fresh.append_column("n", pa.array([7, None], pa.int64()))
        fresh = fresh.append_column("tag", pa.array(["new", "new"], pa.string()))
        fresh = fresh.append_column("w", pa.array([[1.0, 0.0], None], pa.list_(pa.float32(), 2)))
        await wal.append([_insert(fresh, 78)])
        [last] = await wal.append([_insert(rows(range(300, 301)), 79)])  # a stale proxy's insert
        await _until(lambda: d.tsafe.value >= last.timetick)
        assert d.schema == NEW

        table, _ = await d.query(_spec(last.timetick), limit=None, count_only=False)
        got = {r["id"]: (r["n"], r["tag"], r["w"]) for r in table.to_pylist()}
        old = (None, "old", None)
        assert got == {0: old, 1: old, 2: old, 100: old, 101: old, 102: old, 300: old,
                       200: (7, "new", [1.0, 0.0]), 201: (None, "new", None)}
        table, _ = await d.query(_spec(last.timetick, "tag == 'old' and n is null"), limit=None, count_only=False)
        assert sorted(table.column("id").to_pylist()) == [0, 1, 2, 100, 101, 102, 300]
        query = VectorQuery(anns_field="w", metric="L2", topk=10, vectors=np.array([[1.0, 0.0]], np.float32))
        hits = await d.search(_spec(last.timetick), query)
        assert hits.column("id").to_pylist() == [200]
        # The worker's copy of the sealed segment has the field, and a replayed older schema changes nothing.
        assert service.worker.schema(C) == NEW
        await d._schema_changed(SCHEMA)
        assert d.schema == NEW
    finally:
        await service.close()
