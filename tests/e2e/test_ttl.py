"""A collection's TTL (``collection.ttl.seconds``): reads leave out rows older than it, as Milvus does.

Through pymilvus against the session's standalone. Rows flushed into a sealed
segment (served by the worker) and rows still growing (served by the
delegator) both expire; rows written within the TTL stay, and every read
(count, query, search) agrees.
"""

from __future__ import annotations

import time

from pymilvus import DataType, MilvusClient

from tests.e2e.util import unique_name

TTL_SECONDS = 3


def test_rows_older_than_the_ttl_leave_every_read(milvus: MilvusClient) -> None:
    name = unique_name("ttl")
    schema = MilvusClient.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("v", DataType.FLOAT_VECTOR, dim=2)
    index = milvus.prepare_index_params()
    index.add_index("v", index_type="FLAT", metric_type="L2")
    milvus.create_collection(name, schema=schema, index_params=index)

    def rows(ids: range) -> list[dict[str, object]]:
        return [{"id": i, "v": [float(i), 0.0]} for i in ids]

    def count() -> int:
        return int(milvus.query(name, filter="", output_fields=["count(*)"], consistency_level="Strong")[0]["count(*)"])

    milvus.insert(name, rows(range(0, 50)))
    milvus.flush(name)
    milvus.release_collection(name)
    milvus.load_collection(name)  # rows 0..49 now come from a sealed segment on the worker
    milvus.insert(name, rows(range(50, 100)))  # rows 50..99 stay growing
    written = time.monotonic()
    assert count() == 100

    milvus.alter_collection_properties(name, properties={"collection.ttl.seconds": TTL_SECONDS})
    time.sleep(max(0.0, written + TTL_SECONDS + 0.5 - time.monotonic()))
    milvus.insert(name, rows(range(100, 110)))  # written within the TTL

    assert count() == 10
    kept = milvus.query(name, filter="id >= 0", output_fields=["id"], consistency_level="Strong")
    assert sorted(int(r["id"]) for r in kept) == list(range(100, 110))
    hits = milvus.search(name, data=[[0.0, 0.0], [75.0, 0.0]], limit=5, consistency_level="Strong")
    # The nearest rows to 0 and to 75 have expired: each query finds the oldest fresh keys first.
    assert [[h["id"] for h in q] for q in hits] == [list(range(100, 105)), list(range(100, 105))]

    milvus.alter_collection_properties(name, properties={"collection.ttl.seconds": 0})  # 0: no TTL
    assert count() == 110  # not compacted yet, the expired rows are there to read again
    milvus.drop_collection(name)
