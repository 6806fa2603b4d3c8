"""Compaction (a Spark job) through pymilvus keeps every vector type exact and searchable.

One collection with a FLOAT16 (IVF_FLAT, nullable), an INT8 (HNSW), a SPARSE (SPARSE_WAND) and a
BINARY (BIN_IVF_FLAT) field, three flushed segments of 1,500 rows, a fifth of the rows deleted; after
``compact()`` the segments are merged, the deleted rows are gone, the survivors' vectors come back
bit-exact (nulls stay null), and each field's index on the merged segment finds the rows.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest
from pymilvus import DataType, MilvusClient

from tests.e2e.test_compaction import live_segments, wait_compaction
from tests.e2e.util import unique_name
from tests.harness import Standalone, dump_logs_on_failure

ROUNDS, PER_ROUND, DIM, BITS = 3, 1_500, 16, 64
ROWS = ROUNDS * PER_ROUND


def _sparse_dot(a: dict[int, float], b: dict[int, float]) -> float:
    return float(sum(np.float32(v) * np.float32(b[k]) for k, v in a.items() if k in b))


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_compaction_keeps_every_vector_type_exact(standalone: Standalone, milvus: MilvusClient) -> None:
    rng = np.random.default_rng(26)
    half = rng.standard_normal((ROWS, DIM)).astype(np.float16)
    small = rng.integers(-120, 120, (ROWS, DIM), dtype=np.int8)
    codes = rng.integers(0, 256, (ROWS, BITS // 8), dtype=np.uint8)
    sparse = [{int(j): float(rng.random() + 0.05) for j in rng.choice(200, 6, replace=False)} for _ in range(ROWS)]
    null_half = {i for i in range(ROWS) if i % 7 == 0}
    name = unique_name("compact_types")
    schema = MilvusClient.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("f16", DataType.FLOAT16_VECTOR, dim=DIM, nullable=True)
    schema.add_field("i8", DataType.INT8_VECTOR, dim=DIM)
    schema.add_field("sp", DataType.SPARSE_FLOAT_VECTOR)
    schema.add_field("bin", DataType.BINARY_VECTOR, dim=BITS)
    index = milvus.prepare_index_params()
    index.add_index("f16", index_type="IVF_FLAT", metric_type="L2", params={"nlist": 16})
    index.add_index("i8", index_type="HNSW", metric_type="COSINE", params={"M": 16, "efConstruction": 64})
    index.add_index("sp", index_type="SPARSE_WAND", metric_type="IP")
    index.add_index("bin", index_type="BIN_IVF_FLAT", metric_type="HAMMING", params={"nlist": 16})
    milvus.create_collection(name, schema=schema, index_params=index, num_shards=1)

    def row(i: int) -> dict[str, Any]:
        return {"id": i, "f16": None if i in null_half else half[i], "i8": small[i], "sp": sparse[i],
                "bin": codes[i].tobytes()}

    with dump_logs_on_failure(standalone):
        for r in range(ROUNDS):
            milvus.insert(name, [row(i) for i in range(r * PER_ROUND, (r + 1) * PER_ROUND)])
            milvus.flush(name)
        before = live_segments(milvus, name)
        assert len(before) >= ROUNDS
        milvus.delete(name, filter="id % 5 == 1")
        milvus.flush(name)
        survivors = [i for i in range(ROWS) if i % 5 != 1]

        job = milvus.compact(name)
        wait_compaction(milvus, job)
        after = live_segments(milvus, name)
        assert len(after) < len(before) and not {s.segment_id for s in after} & {s.segment_id for s in before}

        milvus.load_collection(name, timeout=300)
        deadline = time.monotonic() + 120
        while milvus.query(name, filter="", output_fields=["count(*)"],
                           consistency_level="Strong")[0]["count(*)"] != len(survivors):
            assert time.monotonic() < deadline, "reads did not switch to the compacted segment"
            time.sleep(0.5)

        sample = survivors[::97] + [1, 6]  # and two deleted keys
        got = {r["id"]: r for r in milvus.query(name, filter=f"id in {sample}", output_fields=["*"],
                                                 consistency_level="Strong")}
        assert sorted(got) == sorted(survivors[::97])
        for i, r in got.items():
            if i in null_half:
                assert r["f16"] is None
            else:
                assert bytes(r["f16"][0]) == half[i].tobytes()
            assert bytes(r["i8"][0]) == small[i].tobytes()
            assert bytes(r["bin"][0]) == codes[i].tobytes()
            assert r["sp"] == {k: float(np.float32(v)) for k, v in sorted(sparse[i].items())}

        probes = [i for i in survivors[5::301] if i not in null_half][:5]
        for field, data in (("f16", [half[i] for i in probes]), ("i8", [small[i] for i in probes]),
                            ("bin", [codes[i].tobytes() for i in probes])):
            params = {"params": {"nprobe": 16}} if field != "i8" else {"params": {"ef": 64}}
            hits = milvus.search(name, data=data, anns_field=field, limit=3, search_params=params,
                                 consistency_level="Strong")
            assert [h[0]["id"] for h in hits] == probes, field  # each row finds itself first
        # SPARSE_WAND at drop ratio 0 is exact: the best IP over the survivors.
        hits = milvus.search(name, data=[sparse[i] for i in probes], anns_field="sp", limit=1,
                             consistency_level="Strong")
        for i, h in zip(probes, hits, strict=True):
            best = max(_sparse_dot(sparse[i], sparse[j]) for j in survivors)
            assert h[0]["distance"] == pytest.approx(best, rel=1e-5)
        # Null FLOAT16 vectors are never hits after the merge either.
        hits = milvus.search(name, data=[half[probes[0]]], anns_field="f16", limit=50,
                             search_params={"params": {"nprobe": 16}}, consistency_level="Strong")
        assert not {h["id"] for h in hits[0]} & null_half
        milvus.drop_collection(name)
