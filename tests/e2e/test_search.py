"""Insert + exact search through pymilvus, checked against numpy brute force."""

from __future__ import annotations

import numpy as np
import pytest
from pymilvus import DataType, MilvusClient, MilvusException

from tests.e2e.util import brute_force, unique_name

DIM = 16


def _collection(milvus: MilvusClient, metric: str, shards: int = 2) -> str:
    name = unique_name()
    schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=True)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("age", DataType.INT32)
    schema.add_field("tag", DataType.VARCHAR, max_length=16)
    schema.add_field("meta", DataType.JSON)
    schema.add_field("vec", DataType.FLOAT_VECTOR, dim=DIM)
    index = milvus.prepare_index_params()
    index.add_index("vec", index_type="AUTOINDEX", metric_type=metric)
    milvus.create_collection(name, schema=schema, index_params=index, num_shards=shards)
    return name


def _rows(n: int, seed: int = 7) -> tuple[list[dict], np.ndarray]:
    rng = np.random.default_rng(seed)
    vecs = rng.standard_normal((n, DIM)).astype(np.float32)
    rows = [
        {
            "id": i,
            "age": int(i % 50),
            "tag": ["red", "green", "blue"][i % 3],
            "meta": {"score": i % 10, "group": {"name": f"g{i % 4}"}},
            "vec": vecs[i].tolist(),
            "extra": i * 2,
        }
        for i in range(n)
    ]
    return rows, vecs


@pytest.mark.parametrize("metric", ["L2", "IP", "COSINE"])
def test_search_matches_brute_force(milvus: MilvusClient, metric: str) -> None:
    name = _collection(milvus, metric)
    rows, vecs = _rows(600)
    res = milvus.insert(name, rows)
    assert res["insert_count"] == 600
    queries = np.random.default_rng(1).standard_normal((5, DIM)).astype(np.float32)
    hits = milvus.search(name, data=queries.tolist(), limit=10, consistency_level="Strong")
    order, dist = brute_force(vecs, queries, metric, 10)
    for q in range(5):
        assert [h["id"] for h in hits[q]] == order[q].tolist()
        np.testing.assert_allclose([h["distance"] for h in hits[q]], dist[q], rtol=1e-4, atol=1e-4)
    milvus.drop_collection(name)


def test_search_with_filter_and_output_fields(milvus: MilvusClient) -> None:
    name = _collection(milvus, "L2")
    rows, vecs = _rows(400)
    milvus.insert(name, rows)
    q = vecs[:2] + 0.01
    hits = milvus.search(
        name,
        data=q.tolist(),
        limit=5,
        filter='age < 20 and tag in ["red", "blue"] and meta["group"]["name"] != "g1"',
        output_fields=["age", "tag", "meta", "extra"],
        consistency_level="Strong",
    )
    keep = np.array(
        [r["age"] < 20 and r["tag"] in ("red", "blue") and r["meta"]["group"]["name"] != "g1" for r in rows]
    )
    idx = np.nonzero(keep)[0]
    order, dist = brute_force(vecs[idx], q, "L2", 5)
    for qi in range(2):
        assert [h["id"] for h in hits[qi]] == idx[order[qi]].tolist()
        for h in hits[qi]:
            src = rows[h["id"]]
            assert h["entity"]["age"] == src["age"]
            assert h["entity"]["tag"] == src["tag"]
            assert h["entity"]["meta"] == src["meta"]
            assert h["entity"]["extra"] == src["extra"]
    milvus.drop_collection(name)


def test_strong_read_sees_every_acknowledged_write(milvus: MilvusClient) -> None:
    name = _collection(milvus, "L2")
    rows, vecs = _rows(50)
    for i in range(0, 50, 10):
        milvus.insert(name, rows[i : i + 10])
        count = milvus.query(name, filter="", output_fields=["count(*)"], consistency_level="Strong")
        assert count[0]["count(*)"] == i + 10
    hits = milvus.search(name, data=[vecs[49].tolist()], limit=1, consistency_level="Strong")
    assert hits[0][0]["id"] == 49
    milvus.drop_collection(name)


def test_session_consistency_reads_own_writes(milvus: MilvusClient) -> None:
    name = _collection(milvus, "IP")
    rows, vecs = _rows(20)
    milvus.insert(name, rows)
    # Default consistency of the collection is Bounded; Session uses pymilvus' cached write ts.
    got = milvus.query(name, filter="id >= 0", output_fields=["id"], consistency_level="Session")
    assert sorted(r["id"] for r in got) == list(range(20))
    milvus.drop_collection(name)


def test_wrong_dimension_is_refused_and_changes_nothing(milvus: MilvusClient) -> None:
    name = _collection(milvus, "L2")
    rows, _ = _rows(3)
    milvus.insert(name, rows)
    bad = dict(rows[0], id=100, vec=[0.0] * (DIM + 1))
    with pytest.raises(MilvusException, match="dim"):
        milvus.insert(name, [bad])
    with pytest.raises(MilvusException, match="dim"):
        milvus.search(name, data=[[0.0] * (DIM - 1)], limit=1)
    assert milvus.query(name, filter="", output_fields=["count(*)"], consistency_level="Strong")[0]["count(*)"] == 3
    milvus.drop_collection(name)


def test_wrong_type_and_missing_field_are_refused(milvus: MilvusClient) -> None:
    name = _collection(milvus, "L2")
    rows, _ = _rows(2)
    with pytest.raises(MilvusException):
        milvus.insert(name, [dict(rows[0], age="old")])
    missing = {k: v for k, v in rows[1].items() if k != "tag"}
    with pytest.raises(MilvusException, match="tag"):
        milvus.insert(name, [missing])
    assert milvus.query(name, filter="", output_fields=["count(*)"], consistency_level="Strong")[0]["count(*)"] == 0
    milvus.drop_collection(name)


def test_malformed_filter_is_a_clear_error(milvus: MilvusClient) -> None:
    name = _collection(milvus, "L2")
    rows, _ = _rows(5)
    milvus.insert(name, rows)
    with pytest.raises(MilvusException) as exc:
        milvus.search(name, data=[[0.0] * DIM], limit=1, filter="age >> 3")
    assert "age >> 3" in str(exc.value) or "parse" in str(exc.value).lower()
    with pytest.raises(MilvusException, match="nosuchfield|not exist"):
        milvus.query(name, filter="nosuchfield_x.y > 1", output_fields=["id"])
    milvus.drop_collection(name)
