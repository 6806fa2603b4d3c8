"""The everyday MilvusClient surface: nullable fields and defaults, iterators, output fields, count.

Against the session's standalone, growing and flushed rows alike.
"""

from __future__ import annotations

import numpy as np
from pymilvus import DataType, MilvusClient

from tests.e2e.util import brute_force, unique_name

N = 500


def _collection(milvus: MilvusClient) -> tuple[str, np.ndarray]:
    name = unique_name("surface")
    schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=True)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("maybe", DataType.INT64, nullable=True)
    schema.add_field("level", DataType.INT64, default_value=7)
    schema.add_field("tag", DataType.VARCHAR, max_length=8, nullable=True, default_value="none")
    schema.add_field("v", DataType.FLOAT_VECTOR, dim=8)
    params = milvus.prepare_index_params()
    params.add_index("v", index_type="FLAT", metric_type="L2")
    milvus.create_collection(name, schema=schema, index_params=params, num_shards=2)
    data = np.random.default_rng(3).standard_normal((N, 8)).astype(np.float32)
    rows: list[dict[str, object]] = []
    for i in range(N):
        row: dict[str, object] = {"id": i, "v": data[i].tolist(), "extra": i % 3}
        if i % 2:
            row["maybe"] = i
        if i % 5 == 0:
            row["level"] = 1
        if i % 7 == 0:
            row["tag"] = "seven"
        rows.append(row)
    milvus.insert(name, rows[: N // 2])
    milvus.flush(name)
    milvus.insert(name, rows[N // 2 :])
    return name, data


def test_nullable_and_default_values_and_star_output(milvus: MilvusClient) -> None:
    name, _ = _collection(milvus)
    got = {r["id"]: r for r in milvus.query(name, filter="id < 30", output_fields=["*"], consistency_level="Strong")}
    assert sorted(got) == list(range(30))
    for i, r in got.items():
        assert r["maybe"] == (i if i % 2 else None)
        assert r["level"] == (1 if i % 5 == 0 else 7)
        assert r["tag"] == ("seven" if i % 7 == 0 else "none")
        assert r["extra"] == i % 3  # dynamic field
        assert len(r["v"]) == 8
    nulls = milvus.query(name, filter="maybe is null", output_fields=["count(*)"], consistency_level="Strong")
    assert nulls[0]["count(*)"] == N // 2
    assert milvus.query(
        name, filter="level == 7 and extra == 1", output_fields=["count(*)"], consistency_level="Strong"
    )[0]["count(*)"] == sum(1 for i in range(N) if i % 5 and i % 3 == 1)
    milvus.drop_collection(name)


def test_query_iterator_visits_every_row_once(milvus: MilvusClient) -> None:
    name, _ = _collection(milvus)
    it = milvus.query_iterator(name, batch_size=64, filter="id >= 10", output_fields=["level"])
    seen: list[int] = []
    while batch := it.next():
        assert len(batch) <= 64
        seen += [r["id"] for r in batch]
    it.close()
    assert sorted(seen) == list(range(10, N)) and len(seen) == len(set(seen))
    milvus.drop_collection(name)


def test_search_iterator_pages_through_neighbours_in_distance_order(milvus: MilvusClient) -> None:
    name, data = _collection(milvus)
    query = data[:1] + 0.01
    it = milvus.search_iterator(
        name, data=query.tolist(), anns_field="v", batch_size=50, limit=200, search_params={"metric_type": "L2"}
    )
    ids, dists = [], []
    while batch := it.next():
        ids += [h["id"] for h in batch]
        dists += [h["distance"] for h in batch]
    it.close()
    want, _ = brute_force(data, query, "L2", 200)
    assert len(ids) == 200 and len(set(ids)) == 200
    assert dists == sorted(dists)
    assert set(ids) == set(want[0].tolist())
    milvus.drop_collection(name)
