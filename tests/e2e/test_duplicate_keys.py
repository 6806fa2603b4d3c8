"""Duplicate primary keys in one insert: every row counts, a read sees one row per key, as in Milvus.

Milvus does not merge the rows of a key an insert names twice: ``count(*)`` counts
each (also after a flush and after compaction, which keeps them), and a query or
search returns one row per key. Which of them is not defined by Milvus; Strata
returns the last one of the insert. A delete of the key removes them all.
Measured on Milvus 2.3.5: ``insert`` of ids ``[1, 1, 2]`` gives ``count(*) = 3``
and one row for ``id == 1``.
"""

from __future__ import annotations

import pytest
from pymilvus import DataType, MilvusClient

from tests.e2e.test_compaction import wait_compaction
from tests.e2e.util import unique_name


def _collection(milvus: MilvusClient) -> str:
    name = unique_name("dup")
    schema = MilvusClient.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("x", DataType.INT64)
    schema.add_field("v", DataType.FLOAT_VECTOR, dim=2)
    index = milvus.prepare_index_params()
    index.add_index("v", metric_type="L2", index_type="FLAT")
    milvus.create_collection(name, schema=schema, index_params=index, num_shards=2)
    return name


def _count(milvus: MilvusClient, name: str) -> int:
    return milvus.query(name, filter="", output_fields=["count(*)"], consistency_level="Strong")[0]["count(*)"]


def _rows(milvus: MilvusClient, name: str) -> list[dict[str, int]]:
    return milvus.query(name, filter="id >= 0", output_fields=["x"], consistency_level="Strong")


def test_every_row_of_a_duplicated_key_counts_and_reads_see_one(milvus: MilvusClient) -> None:
    name = _collection(milvus)
    res = milvus.insert(name, [
        {"id": 1, "x": 10, "v": [0.0, 0.0]}, {"id": 1, "x": 11, "v": [1.0, 1.0]}, {"id": 2, "x": 20, "v": [2.0, 2.0]},
    ])
    assert res["insert_count"] == 3
    assert _count(milvus, name) == 3
    assert _rows(milvus, name) == [{"id": 1, "x": 11}, {"id": 2, "x": 20}]
    hits = milvus.search(name, data=[[0.0, 0.0]], limit=5, output_fields=["x"], consistency_level="Strong")
    assert [(h["id"], h["entity"]["x"]) for h in hits[0]] == [(1, 11), (2, 20)]

    milvus.flush(name)
    milvus.release_collection(name)
    milvus.load_collection(name)  # the same from the sealed segment
    assert _count(milvus, name) == 3
    assert _rows(milvus, name) == [{"id": 1, "x": 11}, {"id": 2, "x": 20}]

    milvus.delete(name, ids=[1])
    assert _count(milvus, name) == 1
    assert _rows(milvus, name) == [{"id": 2, "x": 20}]
    milvus.drop_collection(name)


def test_a_later_insert_of_the_key_replaces_both_rows(milvus: MilvusClient) -> None:
    name = _collection(milvus)
    milvus.insert(name, [{"id": 1, "x": 10, "v": [0.0, 0.0]}, {"id": 1, "x": 11, "v": [0.0, 0.0]}])
    milvus.upsert(name, [{"id": 1, "x": 12, "v": [0.0, 0.0]}])
    assert _count(milvus, name) == 1
    assert _rows(milvus, name) == [{"id": 1, "x": 12}]
    milvus.drop_collection(name)


@pytest.mark.timeout(600)
def test_compaction_keeps_every_row_of_a_duplicated_key(milvus: MilvusClient) -> None:
    # Milvus's compaction does not merge the rows of a key inserted twice (milvus-io/milvus#52047).
    name = _collection(milvus)
    milvus.insert(name, [{"id": 1, "x": 10, "v": [0.0, 0.0]}, {"id": 1, "x": 11, "v": [0.0, 0.0]}])
    milvus.flush(name)
    milvus.insert(name, [{"id": 2, "x": 20, "v": [0.0, 0.0]}, {"id": 2, "x": 21, "v": [0.0, 0.0]}])
    milvus.flush(name)
    before = {s.segment_id for s in milvus.list_persistent_segments(name)}
    wait_compaction(milvus, milvus.compact(name))
    assert not before & {s.segment_id for s in milvus.list_persistent_segments(name)}  # rewritten
    milvus.release_collection(name)
    milvus.load_collection(name)
    assert _count(milvus, name) == 4
    assert [r["id"] for r in _rows(milvus, name)] == [1, 2]
    milvus.drop_collection(name)
