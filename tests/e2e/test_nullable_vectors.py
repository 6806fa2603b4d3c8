"""Nullable vector fields (Milvus 2.6) end to end through pymilvus on a real standalone.

A float (HNSW, COSINE) and a binary (BIN_FLAT, HAMMING) nullable vector field, rows with either,
both or neither vector null, over sealed and growing rows: a null vector is never a search hit
(the binary field's exact search returns every non-null row and no other), queries return None
for it and the vectors bit-exact otherwise, an upsert sets and clears a vector, and all of it
holds after a compaction and a restart. A search by the key of a null vector is refused.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pymilvus import DataType, MilvusClient, MilvusException

from tests.harness import Standalone, dump_logs_on_failure

N, SEALED, DIM, BITS = 200, 120, 8, 16
NAME = "nullable_vectors"


def _rows(vecs: np.ndarray, codes: np.ndarray, v_ok: dict[int, bool], b_ok: dict[int, bool], ids: range) -> list[Any]:
    rows = []
    for i in ids:
        row: dict[str, Any] = {"id": i, "tag": i % 3}
        row["v"] = vecs[i].tolist() if v_ok[i] else None
        if b_ok[i]:
            row["b"] = codes[i].tobytes()
        elif i % 2:
            row["b"] = None  # given as None, or (even ids) left out: both are null
        rows.append(row)
    return rows


def _check(client: MilvusClient, vecs: np.ndarray, codes: np.ndarray, v_ok: dict[int, bool],
           b_ok: dict[int, bool]) -> None:
    alive = sorted(v_ok)
    # Exact binary search with a limit above the row count: every non-null row, no null one.
    hits = client.search(NAME, data=[codes[alive[1]].tobytes()], anns_field="b", limit=N + 10,
                         consistency_level="Strong")[0]
    assert sorted(h["id"] for h in hits) == [i for i in alive if b_ok[i]]
    # HNSW over the float field: no null row among the hits, each query's own row first.
    queries = [i for i in alive if v_ok[i]][:3]
    for q, got in zip(queries, client.search(NAME, data=[vecs[i].tolist() for i in queries], anns_field="v",
                                             limit=N + 10, search_params={"params": {"ef": 512}},
                                             consistency_level="Strong"), strict=True):
        assert got[0]["id"] == q
        assert all(v_ok[h["id"]] for h in got) and all(np.isfinite(h["distance"]) for h in got)
    rows = client.query(NAME, filter="id >= 0", output_fields=["v", "b"], consistency_level="Strong")
    assert sorted(r["id"] for r in rows) == alive
    for r in rows:
        i = r["id"]
        assert (r["v"] is None) == (not v_ok[i]) and (r["b"] is None) == (not b_ok[i])
        if v_ok[i]:
            np.testing.assert_array_equal(np.asarray(r["v"], dtype=np.float32), vecs[i])
        if b_ok[i]:
            assert bytes(r["b"][0] if isinstance(r["b"], list) else r["b"]) == codes[i].tobytes()


def _compact(client: MilvusClient) -> None:
    job = client.compact(NAME)
    deadline = time.monotonic() + 240
    while client.get_compaction_state(job) != "Completed":
        assert time.monotonic() < deadline, "compaction did not complete"
        time.sleep(0.5)


def test_nullable_vector_fields_end_to_end(tmp_path: Path) -> None:
    rng = np.random.default_rng(8)
    vecs = rng.standard_normal((N, DIM)).astype(np.float32)
    codes = rng.integers(0, 256, (N, BITS // 8), dtype=np.uint8)
    v_ok = {i: i % 3 != 0 for i in range(N)}
    b_ok = {i: i % 4 != 1 for i in range(N)}
    s = Standalone(tmp_path / "data")
    s.start()
    try:
        with dump_logs_on_failure(s):
            client = MilvusClient(s.uri)
            schema = MilvusClient.create_schema(auto_id=False)
            schema.add_field("id", DataType.INT64, is_primary=True)
            schema.add_field("tag", DataType.INT64)
            schema.add_field("v", DataType.FLOAT_VECTOR, dim=DIM, nullable=True)
            schema.add_field("b", DataType.BINARY_VECTOR, dim=BITS, nullable=True)
            index = client.prepare_index_params()
            index.add_index("v", index_type="HNSW", metric_type="COSINE", params={"M": 8, "efConstruction": 64})
            index.add_index("b", index_type="BIN_FLAT", metric_type="HAMMING")
            client.create_collection(NAME, schema=schema, index_params=index, num_shards=2)
            assert [f.get("nullable") for f in client.describe_collection(NAME)["fields"][2:]] == [True, True]
            client.insert(NAME, _rows(vecs, codes, v_ok, b_ok, range(SEALED)))
            client.flush(NAME)
            client.insert(NAME, _rows(vecs, codes, v_ok, b_ok, range(SEALED, N)))  # growing
            _check(client, vecs, codes, v_ok, b_ok)

            # An upsert sets a null vector (row 0) and clears one (row 1), in both fields.
            client.upsert(NAME, [{"id": 0, "tag": 0, "v": vecs[0].tolist(), "b": codes[0].tobytes()},
                                 {"id": 1, "tag": 1, "v": None, "b": None}])
            v_ok[0], b_ok[0], v_ok[1], b_ok[1] = True, True, False, False
            _check(client, vecs, codes, v_ok, b_ok)
            with pytest.raises(MilvusException, match=r"null for primary key IDs \[1\]"):
                client.search(NAME, ids=[1], anns_field="v", limit=3, consistency_level="Strong")

            client.delete(NAME, ids=[4, 5, 6, 150])
            for i in (4, 5, 6, 150):
                del v_ok[i], b_ok[i]
            client.flush(NAME)
            _compact(client)
            _check(client, vecs, codes, v_ok, b_ok)
            client.close()
        assert s.stop() == 0
        s.start()
        with dump_logs_on_failure(s):
            client = MilvusClient(s.uri)
            client.load_collection(NAME, timeout=120)
            _check(client, vecs, codes, v_ok, b_ok)
            client.close()
    finally:
        s.stop()


def test_a_null_in_a_non_nullable_vector_field_is_refused(milvus: MilvusClient) -> None:
    schema = MilvusClient.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("v", DataType.FLOAT_VECTOR, dim=4)
    name = "non_nullable_vector"
    if milvus.has_collection(name):
        milvus.drop_collection(name)
    milvus.create_collection(name, schema=schema)
    try:
        with pytest.raises(MilvusException, match=r"the num_rows \(0\) of field \(v\) is not equal"):
            milvus.insert(name, [{"id": 1, "v": None}])
        assert milvus.get_collection_stats(name)["row_count"] == 0
    finally:
        milvus.drop_collection(name)


@pytest.mark.parametrize(
    ("dtype", "index_type", "metric"),
    [
        (DataType.FLOAT16_VECTOR, "HNSW", "L2"),
        (DataType.BFLOAT16_VECTOR, "IVF_FLAT", "IP"),
        (DataType.INT8_VECTOR, "HNSW", "COSINE"),
        (DataType.SPARSE_FLOAT_VECTOR, "SPARSE_INVERTED_INDEX", "IP"),
    ],
)
def test_nullable_fields_of_the_other_vector_types(
    milvus: MilvusClient, dtype: DataType, index_type: str, metric: str
) -> None:
    import ml_dtypes

    rng = np.random.default_rng(int(dtype))
    name = f"nullable_{dtype.name.lower()}"
    values: list[Any]
    if dtype == DataType.SPARSE_FLOAT_VECTOR:
        values = [{int(j): float(rng.random() + 0.1) for j in rng.choice(16, 4, replace=False)} for _ in range(N)]
    elif dtype == DataType.INT8_VECTOR:
        values = list(rng.integers(-100, 100, (N, DIM), dtype=np.int8))
    else:
        wide = rng.standard_normal((N, DIM)).astype(np.float32)
        values = list(wide.astype(np.float16 if dtype == DataType.FLOAT16_VECTOR else ml_dtypes.bfloat16))
    valid = {i: i % 3 != 0 for i in range(N)}
    schema = MilvusClient.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    if dtype == DataType.SPARSE_FLOAT_VECTOR:
        schema.add_field("v", dtype, nullable=True)
    else:
        schema.add_field("v", dtype, dim=DIM, nullable=True)
    index = milvus.prepare_index_params()
    index.add_index("v", index_type=index_type, metric_type=metric, params={"nlist": 4} if "IVF" in index_type else {})
    if milvus.has_collection(name):
        milvus.drop_collection(name)
    milvus.create_collection(name, schema=schema, index_params=index)
    try:
        rows = [{"id": i, "v": values[i] if valid[i] else None} for i in range(N)]
        milvus.insert(name, rows[:SEALED])
        milvus.flush(name)
        milvus.insert(name, rows[SEALED:])  # growing
        params = {"params": {"nprobe": 4}} if "IVF" in index_type else {}
        hits = milvus.search(name, data=[values[1], values[SEALED + 1]], anns_field="v", limit=N,
                             search_params=params, consistency_level="Strong")
        for found in hits:
            ids = {h["id"] for h in found}
            assert ids and all(valid[i] for i in ids), sorted(i for i in ids if not valid[i])
        got = milvus.query(name, filter="id in [0, 1, 120, 121]", output_fields=["v"], consistency_level="Strong")
        by_id = {r["id"]: r["v"] for r in got}
        assert by_id[0] is None and by_id[120] is None
        assert by_id[1] is not None and by_id[121] is not None
        if dtype == DataType.SPARSE_FLOAT_VECTOR:
            assert by_id[1] == {k: float(np.float32(x)) for k, x in sorted(values[1].items())}
        else:
            raw = by_id[1][0] if isinstance(by_id[1], list) else by_id[1]
            assert bytes(raw) == np.asarray(values[1]).tobytes()
    finally:
        milvus.drop_collection(name)
