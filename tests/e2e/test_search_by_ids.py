"""Search by primary keys (``client.search(ids=[...])``, Milvus 2.6) through pymilvus on a real standalone.

Each search by keys is compared with the same search given the keys' vectors as ``data``: equal hits
and distances, for a float and a binary field, over sealed and growing rows, with a filter, a range,
a group by, output fields and partitions; keys that are missing, deleted or outside the searched
partitions are refused with Milvus' message; a key inserted just before a Strong search is found.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from pymilvus import DataType, MilvusClient, MilvusException
from pymilvus.exceptions import ParamError

N, SEALED, DIM, BITS = 300, 200, 16, 32
NAME = "search_by_ids"


def _hits(result: Any) -> list[list[tuple[int, float]]]:
    return [[(h["id"], round(float(h["distance"]), 4)) for h in hits] for hits in result]


@pytest.fixture()
def coll(milvus: MilvusClient) -> tuple[MilvusClient, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(11)
    vecs = rng.standard_normal((N, DIM)).astype(np.float32)
    codes = rng.integers(0, 256, (N, BITS // 8), dtype=np.uint8)
    schema = MilvusClient.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("tag", DataType.INT64)
    schema.add_field("vec", DataType.FLOAT_VECTOR, dim=DIM)
    schema.add_field("bits", DataType.BINARY_VECTOR, dim=BITS)
    index = milvus.prepare_index_params()
    index.add_index("vec", index_type="FLAT", metric_type="L2")
    index.add_index("bits", index_type="BIN_FLAT", metric_type="HAMMING")
    if milvus.has_collection(NAME):
        milvus.drop_collection(NAME)
    milvus.create_collection(NAME, schema=schema, index_params=index, num_shards=2)
    milvus.create_partition(NAME, "p1")
    rows = [{"id": i, "tag": i % 4, "vec": vecs[i].tolist(), "bits": codes[i].tobytes()} for i in range(N)]
    milvus.insert(NAME, [r for r in rows[:SEALED] if r["id"] % 10 != 9])
    milvus.insert(NAME, [r for r in rows[:SEALED] if r["id"] % 10 == 9], partition_name="p1")
    milvus.flush(NAME)
    milvus.insert(NAME, rows[SEALED:])  # growing
    yield milvus, vecs, codes
    milvus.drop_collection(NAME)


def _both(client: MilvusClient, keys: list[int], data: list[Any], **kw: Any) -> tuple[Any, Any]:
    by_ids = client.search(NAME, ids=keys, consistency_level="Strong", **kw)
    by_data = client.search(NAME, data=data, consistency_level="Strong", **kw)
    return by_ids, by_data


def test_search_by_ids_equals_search_by_their_vectors(coll: tuple[MilvusClient, np.ndarray, np.ndarray]) -> None:
    client, vecs, codes = coll
    keys = [5, 250, 17, 9]  # sealed, growing, sealed, in partition p1
    by_ids, by_data = _both(client, keys, [vecs[k].tolist() for k in keys], anns_field="vec", limit=7)
    assert len(by_ids) == len(keys)
    assert _hits(by_ids) == _hits(by_data)
    assert [hits[0]["id"] for hits in by_ids] == keys  # each key's own row is its best hit (L2 0)

    by_ids, by_data = _both(client, keys, [codes[k].tobytes() for k in keys], anns_field="bits", limit=6)
    assert _hits(by_ids) == _hits(by_data)
    assert all(hits[0]["distance"] == 0 for hits in by_ids)

    # Filter, output fields, a range, a group by: they apply to the search, not to the keys.
    kw: dict[str, Any] = {"anns_field": "vec", "limit": 5, "filter": "tag == 1", "output_fields": ["tag"]}
    by_ids, by_data = _both(client, keys, [vecs[k].tolist() for k in keys], **kw)
    assert _hits(by_ids) == _hits(by_data) and len(by_ids[0]) == 5
    assert all(h["entity"]["tag"] == 1 for hits in by_ids for h in hits)
    radius = float(np.sort(((vecs - vecs[5]) ** 2).sum(1))[20])
    kw = {"anns_field": "vec", "limit": 50, "search_params": {"params": {"radius": radius, "range_filter": 0.5}}}
    by_ids, by_data = _both(client, keys, [vecs[k].tolist() for k in keys], **kw)
    assert _hits(by_ids) == _hits(by_data)
    assert all(0.5 <= h["distance"] < radius for h in by_ids[0]) and 5 not in [h["id"] for h in by_ids[0]]
    kw = {"anns_field": "vec", "limit": 3, "group_by_field": "tag", "output_fields": ["tag"]}
    by_ids, by_data = _both(client, keys, [vecs[k].tolist() for k in keys], **kw)
    assert _hits(by_ids) == _hits(by_data)
    assert all(len({h["entity"]["tag"] for h in hits}) == len(hits) == 3 for hits in by_ids)

    # Partitions: the keys are read from the searched partitions only.
    in_p1 = client.search(NAME, ids=[9, 19], anns_field="vec", limit=3, partition_names=["p1"],
                          consistency_level="Strong")
    assert [hits[0]["id"] for hits in in_p1] == [9, 19]
    assert all(h["id"] % 10 == 9 for hits in in_p1 for h in hits)
    with pytest.raises(MilvusException, match=r"missing IDs = \[5\]"):
        client.search(NAME, ids=[9, 5], anns_field="vec", limit=3, partition_names=["p1"],
                      consistency_level="Strong")


def test_bad_key_searches_are_refused(coll: tuple[MilvusClient, np.ndarray, np.ndarray]) -> None:
    client, vecs, _ = coll
    with pytest.raises(MilvusException, match=r"some of the provided primary key IDs do not exist: missing IDs = \[10000\]"):
        client.search(NAME, ids=[3, 10_000], anns_field="vec", limit=3, consistency_level="Strong")
    client.delete(NAME, ids=[3, 260])  # one sealed, one growing
    with pytest.raises(MilvusException, match=r"missing IDs = \[3, 260\]"):
        client.search(NAME, ids=[4, 3, 260], anns_field="vec", limit=3, consistency_level="Strong")
    with pytest.raises(MilvusException, match="primary key is int64, but IDs type mismatch"):
        client.search(NAME, ids=["4"], anns_field="vec", limit=3)
    with pytest.raises(MilvusException, match="anns_field is required for search by IDs"):
        client.search(NAME, ids=[4], limit=3)
    with pytest.raises(MilvusException, match="duplicate primary key IDs"):
        client.search(NAME, ids=[4, 4], anns_field="vec", limit=3)
    with pytest.raises(ParamError, match="Either ids or data must be provided, not both"):
        client.search(NAME, ids=[4], data=[vecs[4].tolist()], anns_field="vec", limit=3)
    # The server kept running and still answers.
    assert client.search(NAME, ids=[4], anns_field="vec", limit=1, consistency_level="Strong")[0][0]["id"] == 4


def test_a_strong_search_by_ids_sees_a_key_just_inserted(coll: tuple[MilvusClient, np.ndarray, np.ndarray]) -> None:
    client, vecs, _ = coll
    new = (vecs[0] + 100.0).tolist()
    client.insert(NAME, [{"id": 5000, "tag": 0, "vec": new, "bits": bytes(BITS // 8)}])
    hits = client.search(NAME, ids=[5000], anns_field="vec", limit=2, consistency_level="Strong")
    expected = client.search(NAME, data=[new], anns_field="vec", limit=2, consistency_level="Strong")
    assert _hits(hits) == _hits(expected) and hits[0][0]["id"] == 5000


@pytest.mark.parametrize(
    ("dtype", "index_type", "metric"),
    [
        (DataType.FLOAT16_VECTOR, "HNSW", "L2"),
        (DataType.BFLOAT16_VECTOR, "FLAT", "IP"),
        (DataType.INT8_VECTOR, "HNSW", "COSINE"),
        (DataType.SPARSE_FLOAT_VECTOR, "SPARSE_INVERTED_INDEX", "IP"),
    ],
)
def test_search_by_ids_for_every_other_vector_type(
    milvus: MilvusClient, dtype: DataType, index_type: str, metric: str
) -> None:
    import ml_dtypes

    rng = np.random.default_rng(int(dtype))
    name = f"by_ids_{dtype.name.lower()}"
    values: list[Any]
    if dtype == DataType.SPARSE_FLOAT_VECTOR:
        values = [{int(j): float(rng.random() + 0.1) for j in rng.choice(64, 5, replace=False)} for _ in range(N)]
    elif dtype == DataType.INT8_VECTOR:
        values = list(rng.integers(-100, 100, (N, DIM), dtype=np.int8))
    else:
        wide = rng.standard_normal((N, DIM)).astype(np.float32)
        values = list(wide.astype(np.float16 if dtype == DataType.FLOAT16_VECTOR else ml_dtypes.bfloat16))
    schema = MilvusClient.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    if dtype == DataType.SPARSE_FLOAT_VECTOR:
        schema.add_field("v", dtype)
    else:
        schema.add_field("v", dtype, dim=DIM)
    index = milvus.prepare_index_params()
    index.add_index("v", index_type=index_type, metric_type=metric)
    if milvus.has_collection(name):
        milvus.drop_collection(name)
    milvus.create_collection(name, schema=schema, index_params=index)
    try:
        milvus.insert(name, [{"id": i, "v": values[i]} for i in range(SEALED)])
        milvus.flush(name)
        milvus.insert(name, [{"id": i, "v": values[i]} for i in range(SEALED, N)])  # growing
        keys = [3, 260, 42]
        by_ids = milvus.search(name, ids=keys, anns_field="v", limit=5, consistency_level="Strong")
        by_data = milvus.search(name, data=[values[k] for k in keys], anns_field="v", limit=5,
                                consistency_level="Strong")
        assert _hits(by_ids) == _hits(by_data)
        assert len(by_ids) == len(keys) and all(len(h) == 5 for h in by_ids)
    finally:
        milvus.drop_collection(name)
