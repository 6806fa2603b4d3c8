"""An index created on flushed data of a collection that is not loaded: ``create_index`` returns.

pymilvus' ``create_index`` (ORM and MilvusClient) waits until ``describe_index``
says Finished. Milvus marks a segment's index Finished without building it when
the segment has fewer than 1024 rows or the index trains nothing (FLAT,
BIN_FLAT); Strata's query nodes build indexes only when they load a segment, so
before this an index created after ``flush`` and before ``load`` stayed
InProgress and ``create_index`` never returned. The flow is the one of
pymilvus' own examples: insert a few rows, flush, create the index, load, search.
"""

from __future__ import annotations

import numpy as np
import pytest
from pymilvus import DataType, MilvusClient

from tests.e2e.util import unique_name

DIM = 8


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("dtype", "index_type", "metric", "params"),
    [
        (DataType.FLOAT16_VECTOR, "FLAT", "L2", {"nlist": 128}),
        (DataType.INT8_VECTOR, "HNSW", "L2", {"M": 8, "efConstruction": 200}),
        (DataType.FLOAT_VECTOR, "IVF_FLAT", "L2", {"nlist": 16}),
        (DataType.BINARY_VECTOR, "BIN_IVF_FLAT", "HAMMING", {"nlist": 16}),
    ],
)
def test_create_index_after_flush_returns_before_load(
    milvus: MilvusClient, dtype: DataType, index_type: str, metric: str, params: dict[str, int]
) -> None:
    name = unique_name("flushed")
    rng = np.random.default_rng(26)
    rows = 12
    if dtype == DataType.BINARY_VECTOR:
        dim = DIM * 8
        vecs = [np.packbits(rng.integers(0, 2, dim)).tobytes() for _ in range(rows)]
    elif dtype == DataType.INT8_VECTOR:
        dim = DIM
        vecs = [rng.integers(-128, 128, dim).astype(np.int8) for _ in range(rows)]
    else:
        dim = DIM
        vecs = [rng.random(dim).astype(np.float16 if dtype == DataType.FLOAT16_VECTOR else np.float32)
                for _ in range(rows)]
    schema = MilvusClient.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("v", dtype, dim=dim)
    milvus.create_collection(name, schema=schema, num_shards=1)
    try:
        milvus.insert(name, [{"id": i, "v": vecs[i]} for i in range(rows)])
        milvus.flush(name)
        index = milvus.prepare_index_params()
        index.add_index("v", index_type=index_type, metric_type=metric, params=params)
        # Waits for Finished; raises after 20 s if the index stays InProgress.
        milvus.create_index(name, index, timeout=20)
        desc = milvus.describe_index(name, "v")
        assert desc["state"] == "Finished" and desc["indexed_rows"] == desc["total_rows"] == rows, desc
        milvus.load_collection(name, timeout=60)
        hits = milvus.search(name, data=[vecs[5]], anns_field="v", limit=1, search_params={"metric_type": metric},
                             consistency_level="Strong")
        assert hits[0][0]["id"] == 5
    finally:
        milvus.drop_collection(name)
