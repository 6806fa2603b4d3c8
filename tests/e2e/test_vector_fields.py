"""Several vector fields in one collection, up to Milvus' limit (proxy.maxVectorFieldNum = 4).

Four fields of two types, each with its own index kind and metric: each field is searched alone
(exact answers from the exact indexes, each key's own row first from HNSW) and together in a
hybrid search; a fifth vector field is refused with Milvus' message and nothing is created.
"""

from __future__ import annotations

import numpy as np
import pytest
from pymilvus import AnnSearchRequest, DataType, MilvusClient, MilvusException, RRFRanker

N, DIM, BITS = 400, 8, 32
NAME = "four_vector_fields"
FIELDS = {  # field -> (type, index, metric, params)
    "flat": (DataType.FLOAT_VECTOR, "FLAT", "L2", {}),
    "hnsw": (DataType.FLOAT_VECTOR, "HNSW", "IP", {"M": 16, "efConstruction": 64}),
    "ivf": (DataType.FLOAT_VECTOR, "IVF_FLAT", "COSINE", {"nlist": 4}),
    "bits": (DataType.BINARY_VECTOR, "BIN_FLAT", "HAMMING", {}),
}


def _schema(fields: list[str]) -> object:
    schema = MilvusClient.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    for name in fields:
        dtype = FIELDS[name][0] if name in FIELDS else DataType.FLOAT_VECTOR
        schema.add_field(name, dtype, dim=BITS if dtype == DataType.BINARY_VECTOR else DIM)
    return schema


def test_four_vector_fields_each_indexed_and_searched_alone_and_together(milvus: MilvusClient) -> None:
    rng = np.random.default_rng(5)
    data = {f: rng.standard_normal((N, DIM)).astype(np.float32) for f in ("flat", "hnsw", "ivf")}
    codes = rng.integers(0, 256, (N, BITS // 8), dtype=np.uint8)
    if milvus.has_collection(NAME):
        milvus.drop_collection(NAME)
    index = milvus.prepare_index_params()
    for name, (_, kind, metric, params) in FIELDS.items():
        index.add_index(name, index_type=kind, metric_type=metric, params=params)
    milvus.create_collection(NAME, schema=_schema(list(FIELDS)), index_params=index)
    try:
        rows = [{"id": i, **{f: data[f][i].tolist() for f in data}, "bits": codes[i].tobytes()} for i in range(N)]
        milvus.insert(NAME, rows[:300])
        milvus.flush(NAME)
        milvus.insert(NAME, rows[300:])
        described = {milvus.describe_index(NAME, f)["field_name"]: milvus.describe_index(NAME, f) for f in FIELDS}
        assert {f: (d["index_type"], d["metric_type"]) for f, d in described.items()} == {
            f: (kind, metric) for f, (_, kind, metric, _) in FIELDS.items()
        }

        keys = [3, 310]
        flat = milvus.search(NAME, data=[data["flat"][k].tolist() for k in keys], anns_field="flat", limit=5,
                             consistency_level="Strong")
        l2 = ((data["flat"][keys][:, None, :] - data["flat"][None]) ** 2).sum(-1)
        assert [[h["id"] for h in hits] for hits in flat] == [list(np.argsort(row, kind="stable")[:5]) for row in l2]
        unit = data["ivf"] / np.linalg.norm(data["ivf"], axis=1, keepdims=True)
        ivf = milvus.search(NAME, data=[data["ivf"][k].tolist() for k in keys], anns_field="ivf", limit=5,
                            search_params={"params": {"nprobe": 4}}, consistency_level="Strong")
        cos = unit[keys] @ unit.T
        assert [[h["id"] for h in hits] for hits in ivf] == [list(np.argsort(-row, kind="stable")[:5]) for row in cos]
        bits = milvus.search(NAME, data=[codes[k].tobytes() for k in keys], anns_field="bits", limit=1,
                             consistency_level="Strong")
        assert [hits[0]["distance"] for hits in bits] == [0, 0]
        ip = data["hnsw"][keys] @ data["hnsw"].T
        hnsw = milvus.search(NAME, data=[data["hnsw"][k].tolist() for k in keys], anns_field="hnsw", limit=1,
                             search_params={"params": {"ef": 64}}, consistency_level="Strong")
        assert [hits[0]["id"] for hits in hnsw] == [int(np.argmax(row)) for row in ip]

        # Together: the row whose vectors are the queries in every field ranks first in the fusion.
        subs = [
            AnnSearchRequest([data["flat"][7].tolist()], "flat", {}, 10),
            AnnSearchRequest([data["ivf"][7].tolist()], "ivf", {"params": {"nprobe": 4}}, 10),
            AnnSearchRequest([codes[7].tobytes()], "bits", {}, 10),
        ]
        fused = milvus.hybrid_search(NAME, subs, RRFRanker(), limit=3, consistency_level="Strong")
        assert fused[0][0]["id"] == 7
    finally:
        milvus.drop_collection(NAME)


def test_a_fifth_vector_field_is_refused_and_nothing_is_created(milvus: MilvusClient) -> None:
    with pytest.raises(MilvusException, match="maximum vector field's number should be limited to 4"):
        milvus.create_collection("five_vector_fields", schema=_schema([*FIELDS, "fifth"]))
    assert not milvus.has_collection("five_vector_fields")
