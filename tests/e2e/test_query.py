"""query / get / delete / count / stats through pymilvus."""

from __future__ import annotations

import numpy as np
from pymilvus import DataType, MilvusClient

from tests.e2e.util import unique_name


def _setup(milvus: MilvusClient, n: int = 100, pk: DataType = DataType.INT64) -> tuple[str, list[dict]]:
    name = unique_name()
    schema = MilvusClient.create_schema(auto_id=False)
    if pk == DataType.INT64:
        schema.add_field("id", DataType.INT64, is_primary=True)
    else:
        schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=20)
    schema.add_field("x", DataType.DOUBLE)
    schema.add_field("flag", DataType.BOOL)
    schema.add_field("v", DataType.FLOAT_VECTOR, dim=4)
    index = milvus.prepare_index_params()
    index.add_index("v", metric_type="L2")
    milvus.create_collection(name, schema=schema, index_params=index, num_shards=2)
    rng = np.random.default_rng(3)
    rows = [
        {"id": i if pk == DataType.INT64 else f"k{i:04d}", "x": float(i) / 2, "flag": i % 2 == 0,
         "v": rng.standard_normal(4).astype(np.float32).tolist()}
        for i in range(n)
    ]  # fmt: skip
    milvus.insert(name, rows)
    return name, rows


def test_query_filter_limit_offset_count(milvus: MilvusClient) -> None:
    name, rows = _setup(milvus)
    got = milvus.query(name, filter="x >= 10 and flag == true", output_fields=["x", "flag"], consistency_level="Strong")
    expect = sorted(r["id"] for r in rows if r["x"] >= 10 and r["flag"])
    assert sorted(r["id"] for r in got) == expect
    assert all(r["x"] == rows[r["id"]]["x"] for r in got)
    page = milvus.query(name, filter="id > 5", output_fields=["id"], limit=10, offset=5, consistency_level="Strong")
    assert [r["id"] for r in page] == list(range(11, 21))
    count = milvus.query(name, filter="x < 5", output_fields=["count(*)"], consistency_level="Strong")
    assert count[0]["count(*)"] == 10
    total = milvus.query(name, filter="", output_fields=["count(*)"], consistency_level="Strong")
    assert total[0]["count(*)"] == 100
    milvus.drop_collection(name)


def test_get_and_delete_by_ids(milvus: MilvusClient) -> None:
    name, rows = _setup(milvus)
    got = milvus.get(name, ids=[3, 50, 99], output_fields=["x", "v"])
    assert sorted(r["id"] for r in got) == [3, 50, 99]
    for r in got:
        np.testing.assert_allclose(r["v"], rows[r["id"]]["v"], rtol=1e-6)
    milvus.delete(name, ids=[3, 50])
    after = milvus.query(name, filter="id in [3, 50, 99]", output_fields=["id"], consistency_level="Strong")
    assert [r["id"] for r in after] == [99]
    assert milvus.query(name, filter="", output_fields=["count(*)"], consistency_level="Strong")[0]["count(*)"] == 98
    # Milvus semantics: row_count counts inserted rows until compaction removes deleted ones.
    assert milvus.get_collection_stats(name)["row_count"] == 100
    milvus.drop_collection(name)


def test_delete_by_filter_and_varchar_pk(milvus: MilvusClient) -> None:
    name, rows = _setup(milvus, n=40, pk=DataType.VARCHAR)
    milvus.delete(name, filter="x < 5")
    left = milvus.query(name, filter="", output_fields=["id"], limit=100, consistency_level="Strong")
    assert sorted(r["id"] for r in left) == sorted(r["id"] for r in rows if r["x"] >= 5)
    milvus.drop_collection(name)


def test_flush_and_stats(milvus: MilvusClient) -> None:
    name, _ = _setup(milvus, n=30)
    milvus.flush(name)
    assert milvus.get_collection_stats(name)["row_count"] == 30
    milvus.drop_collection(name)


def test_auto_id_insert_returns_ids(milvus: MilvusClient) -> None:
    name = unique_name()
    milvus.create_collection(name, dimension=4, auto_id=True)
    res = milvus.insert(name, [{"vector": [0.1, 0.2, 0.3, 0.4], "color": "red"} for _ in range(5)])
    ids = list(res["ids"])
    assert len(set(ids)) == 5
    got = milvus.get(name, ids=ids, output_fields=["color"])
    assert sorted(r["id"] for r in got) == sorted(ids)
    assert all(r["color"] == "red" for r in got)
    milvus.drop_collection(name)
