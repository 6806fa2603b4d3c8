"""``ignore_growing=True`` leaves growing segments out of a search or query, as in Milvus.

Rows flushed and loaded sealed are read; rows inserted after the load (still
growing on the delegator) are not, until a flush seals them.
"""

from __future__ import annotations

from pymilvus import DataType, MilvusClient

from tests.e2e.util import unique_name


def _collection(milvus: MilvusClient) -> str:
    name = unique_name("growing")
    schema = MilvusClient.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("v", DataType.FLOAT_VECTOR, dim=4)
    index = milvus.prepare_index_params()
    index.add_index("v", metric_type="L2", index_type="FLAT")
    milvus.create_collection(name, schema=schema, index_params=index, num_shards=2)
    return name


def _rows(ids: range) -> list[dict[str, object]]:
    return [{"id": i, "v": [float(i), 0.0, 0.0, 0.0]} for i in ids]


def test_ignore_growing_reads_sealed_segments_only(milvus: MilvusClient) -> None:
    name = _collection(milvus)
    milvus.insert(name, _rows(range(0, 10)))
    milvus.flush(name)
    milvus.release_collection(name)
    milvus.load_collection(name)  # rows 0-9 now come from sealed segments
    milvus.insert(name, _rows(range(10, 15)))  # growing

    def ids(**kwargs: object) -> set[int]:
        got = milvus.query(name, filter="id >= 0", output_fields=["id"], consistency_level="Strong", **kwargs)
        return {r["id"] for r in got}

    assert ids() == set(range(15))
    assert ids(ignore_growing=True) == set(range(10))
    count = milvus.query(name, filter="", output_fields=["count(*)"], consistency_level="Strong",
                         ignore_growing=True)
    assert count[0]["count(*)"] == 10

    query = [[12.0, 0.0, 0.0, 0.0]]
    hits = milvus.search(name, data=query, limit=3, consistency_level="Strong")
    assert [h["id"] for h in hits[0]] == [12, 11, 13]
    hits = milvus.search(name, data=query, limit=3, consistency_level="Strong",
                         search_params={"ignore_growing": True})
    assert [h["id"] for h in hits[0]] == [9, 8, 7]

    milvus.flush(name)
    milvus.release_collection(name)
    milvus.load_collection(name)  # sealed now: read whatever ignore_growing says
    assert ids(ignore_growing=True) == set(range(15))
    milvus.drop_collection(name)
