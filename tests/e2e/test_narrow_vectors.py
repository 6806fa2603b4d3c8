"""FLOAT16_VECTOR, BFLOAT16_VECTOR and INT8_VECTOR end to end through pymilvus against a real standalone.

One collection per type x metric (L2, IP, COSINE), each with three vector fields of that type under three index
kinds (FLAT, HNSW, IVF_FLAT for the half types; HNSW, HNSW_SQ, AUTOINDEX for INT8, which Milvus 2.6 indexes with the
HNSW family only), over sealed and growing rows; users pass numpy float16, ``ml_dtypes.bfloat16`` and int8 arrays.
Searches against a float64 reference on the up-converted values (exact kinds: the same hits), range search,
queries returning the vectors bit-exact, deletes, an upsert, group by, hybrid search, search_iterator, a restart;
the bad combinations refused with Milvus' code and nothing created.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from pymilvus import AnnSearchRequest, DataType, MilvusClient, MilvusException, RRFRanker

from common.narrow_vectors import to_float32
from segcore.segments.metric import Metric
from tests.harness import Standalone, dump_logs_on_failure
from tests.segcore.index.reference import recall, reference_distances, reference_topk

N, SEALED, DIM = 900, 600, 16
TYPES: dict[str, tuple[DataType, Any]] = {
    "f16": (DataType.FLOAT16_VECTOR, np.float16),
    "b16": (DataType.BFLOAT16_VECTOR, ml_dtypes.bfloat16),
    "i8": (DataType.INT8_VECTOR, np.int8),
}
# (field, index_type, build params, search params, exact): the first field of each is searched exactly.
IndexCase = tuple[str, str, dict[str, Any], dict[str, Any], bool]
HALF_INDEXES: list[IndexCase] = [("flat", "FLAT", {}, {}, True), ("hnsw", "HNSW", {"M": 16, "efConstruction": 200}, {"ef": 300}, False),
                ("ivf", "IVF_FLAT", {"nlist": 8}, {"nprobe": 8}, True)]
INT8_INDEXES: list[IndexCase] = [("hnsw", "HNSW", {"M": 16, "efConstruction": 200}, {"ef": 300}, False),
                ("sq", "HNSW_SQ", {"M": 16, "efConstruction": 200, "sq_type": "SQ8", "refine": True,
                                   "refine_type": "FP32"}, {"ef": 300, "refine_k": 4}, False),
                ("auto", "AUTOINDEX", {}, {"ef": 300}, False)]
METRICS = ["L2", "IP", "COSINE"]


def _indexes(kind: str) -> list[IndexCase]:
    return INT8_INDEXES if kind == "i8" else HALF_INDEXES


def _rows(kind: str, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if kind == "i8":
        return rng.integers(-128, 128, (N, DIM)).astype(np.int8)
    return (rng.standard_normal((N, DIM)) * 2).astype(TYPES[kind][1])


def _bits(value: Any) -> bytes:
    """A vector's bytes as pymilvus returns them: bytes in search hits, a one-element list in query rows."""
    return bytes(value[0] if isinstance(value, list) else value)


def _create(client: MilvusClient, name: str, kind: str, metric: str, data: dict[str, np.ndarray]) -> None:
    schema = MilvusClient.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("tag", DataType.INT64)
    index = client.prepare_index_params()
    for field, index_type, params, _, _ in _indexes(kind):
        schema.add_field(field, TYPES[kind][0], dim=DIM)
        index.add_index(field, index_type=index_type, metric_type=metric, params=params)
    client.create_collection(name, schema=schema, index_params=index)
    fields = [f[0] for f in _indexes(kind)]
    rows = [{"id": i, "tag": i % 3, **{f: data[f][i] for f in fields}} for i in range(N)]
    client.insert(name, rows[:SEALED])
    client.flush(name)
    client.insert(name, rows[SEALED:])  # growing


def _check(client: MilvusClient, name: str, kind: str, metric: str, data: dict[str, np.ndarray],
           deleted: set[int]) -> None:
    alive = np.array([i not in deleted for i in range(N)])
    for field, _, _, search, exact in _indexes(kind):
        values = to_float32(data[field].view(np.uint16) if kind == "b16" else data[field])
        picks = [5, 9, SEALED + 7]
        hits = client.search(name, data=[data[field][i] for i in picks], anns_field=field, limit=5,
                             output_fields=[field], search_params={"metric_type": metric, "params": search},
                             consistency_level="Strong")
        want, dist = reference_topk(Metric(metric), values[picks], values, 5, allowed=alive)
        got = np.array([[h["id"] for h in q] for q in hits])
        if exact:
            np.testing.assert_array_equal(got, want)
        else:
            assert recall(got, want) >= 0.8, (field, got, want)
        full = reference_distances(Metric(metric), values[picks], values)
        for q, row in enumerate(hits):
            for h in row:
                assert alive[h["id"]]
                assert h["distance"] == pytest.approx(full[q, h["id"]], rel=2e-3, abs=2e-3)
                assert _bits(h["entity"][field]) == data[field][h["id"]].tobytes()
        if exact:
            np.testing.assert_allclose([h["distance"] for h in hits[0]], dist[0], rtol=1e-4, atol=1e-3)


def _range(client: MilvusClient, name: str, kind: str, metric: str, data: dict[str, np.ndarray]) -> None:
    field = _indexes(kind)[0][0]
    values = to_float32(data[field].view(np.uint16) if kind == "b16" else data[field])
    dist = reference_distances(Metric(metric), values[[10]], values)[0]
    lo, hi = np.quantile(dist, [0.2, 0.3])
    bounds = {"radius": float(hi), "range_filter": float(lo)} if metric == "L2" else \
        {"radius": float(lo), "range_filter": float(hi)}
    hits = client.search(name, data=[data[field][10]], anns_field=field, limit=500, consistency_level="Strong",
                         search_params={"metric_type": metric, "params": bounds})
    inside = (dist >= lo) & (dist < hi) if metric == "L2" else (dist > lo) & (dist <= hi)
    assert abs(len(hits[0]) - int(inside.sum())) <= 2 and len(hits[0]) > 0  # float32 vs float64 at the edges
    assert all(lo - 1e-3 <= h["distance"] <= hi + 1e-3 for h in hits[0])


@pytest.mark.timeout(600)
def test_narrow_vectors_end_to_end(tmp_path: Path) -> None:
    data = {(kind, metric): {f[0]: _rows(kind, seed=i * 10 + j) for j, f in enumerate(_indexes(kind))}
            for i, (kind, metric) in enumerate((k, m) for k in TYPES for m in METRICS)}
    s = Standalone(tmp_path / "data")
    s.start()
    deleted = set(range(0, 40, 3)) | {SEALED + 7}
    try:
        with dump_logs_on_failure(s):
            client = MilvusClient(s.uri)
            for (kind, metric), d in data.items():
                _create(client, f"{kind}_{metric.lower()}", kind, metric, d)
            for (kind, metric), d in data.items():
                name = f"{kind}_{metric.lower()}"
                _check(client, name, kind, metric, d, set())
                _range(client, name, kind, metric, d)
                got = client.query(name, filter="id in [3, 599, 600, 899]", output_fields=list(d),
                                   consistency_level="Strong")
                assert sorted(r["id"] for r in got) == [3, 599, 600, 899]
                assert all(_bits(r[f]) == d[f][r["id"]].tobytes() for r in got for f in d)
                client.delete(name, ids=sorted(deleted))
                fresh = {f: -d[f][11] for f in d}
                client.upsert(name, [{"id": 11, "tag": 2, **fresh}])
                for f in d:
                    d[f][11] = fresh[f]
                got = client.query(name, filter="id == 11", output_fields=list(d), consistency_level="Strong")
                assert [_bits(got[0][f]) for f in d] == [fresh[f].tobytes() for f in d]
                client.flush(name)
                _check(client, name, kind, metric, d, deleted)

            # Group by, hybrid search and search_iterator over half-float hits.
            d = data[("f16", "L2")]
            grouped = client.search("f16_l2", data=[d["flat"][2]], anns_field="flat", limit=3, group_by_field="tag",
                                    output_fields=["tag"], consistency_level="Strong")
            tags = [h["entity"]["tag"] for h in grouped[0]]
            assert len(set(tags)) == len(tags) >= 2 and grouped[0][0]["id"] == 2
            requests = [AnnSearchRequest([d["flat"][20]], "flat", {"metric_type": "L2"}, limit=5),
                        AnnSearchRequest([d["ivf"][20]], "ivf", {"metric_type": "L2", "params": {"nprobe": 8}}, limit=5)]
            fused = client.hybrid_search("f16_l2", requests, RRFRanker(), limit=3, consistency_level="Strong")
            assert fused[0][0]["id"] == 20
            iterator = client.search_iterator("f16_l2", data=[d["flat"][21]], anns_field="flat", batch_size=40,
                                              limit=100, consistency_level="Strong")
            paged: list[Any] = []
            while page := iterator.next():
                paged.extend(page)
            iterator.close()
            alive = np.array([i not in deleted for i in range(N)])
            values = to_float32(d["flat"])
            want, _ = reference_topk(Metric.L2, values[[21]], values, 100, allowed=alive)
            assert [h["id"] for h in paged] == want[0].tolist()
            client.close()
        assert s.stop() == 0
        s.start()
        with dump_logs_on_failure(s):
            client = MilvusClient(s.uri)
            for (kind, metric), d in data.items():
                name = f"{kind}_{metric.lower()}"
                client.load_collection(name, timeout=120)
                _check(client, name, kind, metric, d, deleted)
                got = client.query(name, filter="id < 4", output_fields=list(d), consistency_level="Strong")
                assert {r["id"]: [_bits(r[f]) for f in d] for r in got} == {
                    i: [d[f][i].tobytes() for f in d] for i in (1, 2)
                }
            client.close()
    finally:
        s.stop()


def _refused(call: Any, code: int, message: str) -> None:
    with pytest.raises(MilvusException) as err:
        call()
    assert err.value.code == code and message in err.value.message, (err.value.code, err.value.message)


def test_bad_combinations_are_refused_and_nothing_is_created(milvus: MilvusClient) -> None:
    from tests.e2e.util import unique_name

    name = unique_name("narrow_combos")
    schema = MilvusClient.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("i8", DataType.INT8_VECTOR, dim=8)
    schema.add_field("f16", DataType.FLOAT16_VECTOR, dim=8)
    milvus.create_collection(name, schema=schema)
    for field, index_type, metric, message in [
        ("i8", "FLAT", "L2", "data type Int8Vector can't build with this index FLAT"),
        ("i8", "IVF_FLAT", "IP", "data type Int8Vector can't build with this index IVF_FLAT"),
        ("i8", "IVF_SQ8", "COSINE", "data type Int8Vector can't build with this index IVF_SQ8"),
        ("i8", "BIN_FLAT", "L2", "data type Int8Vector can't build with this index BIN_FLAT"),
        ("i8", "HNSW", "HAMMING", "float vector index does not support metric type: HAMMING"),
        ("f16", "BIN_IVF_FLAT", "L2", "data type Float16Vector can't build with this index BIN_IVF_FLAT"),
    ]:
        index = milvus.prepare_index_params()
        index.add_index(field, index_type=index_type, metric_type=metric)
        _refused(lambda index=index: milvus.create_index(name, index), 1100, message)
    index = milvus.prepare_index_params()
    index.add_index("f16", index_type="IVF_PQ", metric_type="L2", params={"m": 3})  # 3 does not divide dim 8
    _refused(lambda: milvus.create_index(name, index), 1100, "m")
    assert milvus.list_indexes(name) == []
    index = milvus.prepare_index_params()
    index.add_index("i8", index_type="HNSW", metric_type="L2")
    index.add_index("f16", index_type="FLAT", metric_type="IP")
    milvus.create_index(name, index)
    milvus.load_collection(name)
    row = {"id": 1, "i8": np.arange(8, dtype=np.int8), "f16": np.ones(8, np.float16)}
    milvus.insert(name, [row])
    _refused(lambda: milvus.search(name, data=[[0.5] * 8], anns_field="i8", limit=1, consistency_level="Strong"),
             1100, "search data type FloatVector does not match the type Int8Vector")
    _refused(lambda: milvus.insert(name, [{**row, "id": 2, "f16": np.full(8, np.inf, np.float16)}]), 1100,
             "float16 vector field (f16) contains NaN or Inf")
    assert milvus.query(name, filter="id >= 0", output_fields=["id"], consistency_level="Strong") == [{"id": 1}]
    milvus.drop_collection(name)
