"""Every faiss index family through pymilvus, as Milvus users create them, and a restart.

One collection per index type (3000 x 16 clustered rows, one shard, a metric
each): ``create_index`` with Milvus' names and parameters, insert, flush,
load, wait for the background build, then search with the family's search
parameters (``nprobe``, ``ef``, ``refine_k``, ``reorder_k``,
``rbq_query_bits``), filter, and range-search. IVF_FLAT probing one list
misses neighbours that probing all of them finds (the parameter reaches
faiss), and the quantized kinds without re-scoring return their own, not
exact, distances (the index answers, not a brute-force fallback). Bad
combinations are refused with Milvus' code 1100 and nothing is created.
After a restart every collection loads its saved index files (no build runs)
and answers as before.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pymilvus import DataType, MilvusClient, MilvusException

from segcore.segments.metric import Metric
from tests.harness import Standalone, dump_logs_on_failure
from tests.segcore.index.reference import around, centres, recall, reference_topk

ROWS, DIM, NQ, K = 3000, 16, 20, 10

#: name -> (index_type, metric, build params, search params, recall floor, exact distances?)
FAMILIES: dict[str, tuple[str, str, dict[str, Any], dict[str, Any], float, bool]] = {
    "ivf_flat": ("IVF_FLAT", "L2", {"nlist": 16}, {"nprobe": 16}, 1.0, True),
    "ivf_sq8": ("IVF_SQ8", "IP", {"nlist": 16}, {"nprobe": 8}, 0.8, False),
    "ivf_pq": ("IVF_PQ", "COSINE", {"nlist": 16, "m": 8, "nbits": 8}, {"nprobe": 8}, 0.4, False),
    "ivf_rabitq": ("IVF_RABITQ", "L2", {"nlist": 16, "refine": True, "refine_type": "FP32"},
                   {"nprobe": 8, "rbq_query_bits": 0, "refine_k": 4}, 0.8, True),
    "scann": ("SCANN", "COSINE", {"nlist": 16, "with_raw_data": True}, {"nprobe": 8, "reorder_k": 50}, 0.6, True),
    "hnsw_sq": ("HNSW_SQ", "L2", {"M": 16, "efConstruction": 100, "sq_type": "SQ8"}, {"ef": 64}, 0.8, False),
    "hnsw_pq": ("HNSW_PQ", "IP", {"M": 16, "efConstruction": 100, "m": 8, "refine": True, "refine_type": "SQ8"},
                {"ef": 64, "refine_k": 3}, 0.6, False),
    "hnsw_prq": ("HNSW_PRQ", "COSINE", {"M": 16, "efConstruction": 100, "m": 4, "nrq": 2, "nbits": 6,
                                        "refine": True, "refine_type": "SQ6"}, {"ef": 64, "refine_k": 4}, 0.6, False),
}


def _data() -> tuple[np.ndarray, np.ndarray]:
    middle = centres(30, DIM, seed=41)
    return around(middle, ROWS, spread=0.3, seed=42), around(middle, NQ, spread=0.3, seed=43)


def _create(client: MilvusClient, name: str, vectors: np.ndarray) -> None:
    index_type, metric, build, _, _, _ = FAMILIES[name]
    schema = MilvusClient.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("v", DataType.FLOAT_VECTOR, dim=DIM)
    index = client.prepare_index_params()
    index.add_index("v", index_type=index_type, metric_type=metric, params=build)
    client.create_collection(name, schema=schema, index_params=index, num_shards=1)
    client.insert(name, [{"id": i, "v": vectors[i].tolist()} for i in range(ROWS)])
    client.flush(name)


def _wait_built(client: MilvusClient, name: str) -> None:
    deadline = time.monotonic() + 60
    while (desc := client.describe_index(name, "v"))["state"] != "Finished":
        assert time.monotonic() < deadline, f"{name}: the index was not built: {desc}"
        time.sleep(0.2)


def _search(client: MilvusClient, name: str, queries: np.ndarray, params: dict[str, Any], **kw: Any) -> list[Any]:
    metric = FAMILIES[name][1]
    return client.search(  # type: ignore[no-any-return]
        name, data=queries.tolist(), limit=K, search_params={"metric_type": metric, "params": params},
        consistency_level="Strong", **kw,
    )


def _ids(hits: list[Any]) -> np.ndarray:
    return np.array([[h["id"] for h in q] + [-1] * (K - len(q)) for q in hits], dtype=np.int64)


def _builds(s: Standalone) -> int:
    return sum(f.read_text(errors="replace").count("index built") for f in (s.data_dir / "logs").glob("*.log"))


def _check_refused(client: MilvusClient, vectors: np.ndarray) -> None:
    """Bad index combinations get code 1100 naming the parameter, and nothing is created."""
    schema = MilvusClient.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("v", DataType.FLOAT_VECTOR, dim=DIM)
    client.create_collection("refused", schema=schema, num_shards=1)
    for index_type, params, words in [
        ("IVF_PQ", {"nlist": 16, "m": 7}, "multiple of the number of subquantizers (m). Dimension: 16, m: 7"),
        ("IVF_FLAT", {"nlist": 0}, "nlist must be in [1, 65536], got 0"),
        ("HNSW_SQ", {"sq_type": "SQ4"}, "sq_type must be one of SQ6, SQ8, FP16, BF16"),
        ("SCANN", {"sub_dim": 3}, "multiple of sub_dim. Dimension: 16, sub_dim: 3"),
        ("IVF_RABITQ", {"refine": True, "refine_type": "INT4"}, "refine_type must be one of"),
    ]:
        index = client.prepare_index_params()
        index.add_index("v", index_type=index_type, metric_type="L2", params=params)
        with pytest.raises(MilvusException) as err:
            client.create_index("refused", index)
        assert err.value.code == 1100 and words in err.value.message, (index_type, err.value)
        assert client.list_indexes("refused") == []
    client.drop_collection("refused")


@pytest.mark.timeout(240)
def test_every_index_family_builds_searches_and_survives_a_restart(tmp_path: Path) -> None:
    vectors, queries = _data()
    s = Standalone(tmp_path / "data")
    s.start()
    answers: dict[str, np.ndarray] = {}
    try:
        with dump_logs_on_failure(s):
            client = MilvusClient(s.uri)
            _check_refused(client, vectors)
            for name in FAMILIES:
                _create(client, name, vectors)
            for name, (index_type, metric, _, params, floor, exact) in FAMILIES.items():
                _wait_built(client, name)
                desc = client.describe_index(name, "v")
                assert desc["index_type"] == index_type and desc["metric_type"] == metric
                hits = _search(client, name, queries, params)
                truth, want = reference_topk(Metric(metric), queries, vectors, K)
                got = _ids(hits)
                assert recall(got, truth) >= floor, (name, recall(got, truth))
                dist = np.array([h["distance"] for h in hits[0]])
                exact_d = np.array([want[0][list(truth[0]).index(i)] for i in got[0] if i in truth[0]])
                same = np.isin(got[0], truth[0])
                close = np.allclose(dist[same], exact_d, rtol=1e-3, atol=1e-3)
                assert close == exact, (name, dist[same], exact_d)  # the index's own distances
                answers[name] = got
                # Filters are applied during the search.
                filtered = _search(client, name, queries[:5], params, filter="id < 1000")
                assert all(h["id"] < 1000 for q in filtered for h in q) and all(len(q) for q in filtered)
            # nprobe reaches faiss: for queries between the clusters, one of 16 lists misses
            # neighbours that all 16 find.
            between = np.random.default_rng(44).standard_normal((NQ, DIM)).astype(np.float32)
            truth = reference_topk(Metric.L2, between, vectors, K)[0]
            assert recall(_ids(_search(client, "ivf_flat", between, {"nprobe": 16})), truth) == 1.0
            assert recall(_ids(_search(client, "ivf_flat", between, {"nprobe": 1})), truth) < 0.9
            # A range search keeps exactly the band, for an index of each sort.
            for name, radius, range_filter in [("ivf_flat", 4.0, 0.5), ("hnsw_sq", 4.0, 0.5), ("scann", 0.8, 0.99)]:
                params = {**FAMILIES[name][3], "radius": radius, "range_filter": range_filter}
                hits = _search(client, name, queries[:5], params)
                d = np.array([h["distance"] for q in hits for h in q])
                assert len(d) and (((d < radius) & (d >= range_filter)) if radius > range_filter
                                   else ((d > radius) & (d <= range_filter))).all(), (name, d)
            # SCANN refuses a reorder_k below the limit, as Milvus does.
            with pytest.raises(MilvusException, match=r"reorder_k\(5\) should be larger than k\(10\)"):
                _search(client, "scann", queries[:1], {"reorder_k": 5})
            with pytest.raises(MilvusException, match=r"param 'nprobe' \(0\) should be an integer"):
                _search(client, "ivf_flat", queries[:1], {"nprobe": 0})
            builds = _builds(s)
            assert builds >= len(FAMILIES)
            files = sorted(p.name for p in (s.data_dir).rglob("faiss-*.bin"))
            assert len(files) == len(FAMILIES), files
            client.close()
    finally:
        assert s.stop() == 0

    s.start()
    try:
        with dump_logs_on_failure(s):
            client = MilvusClient(s.uri)
            for name in FAMILIES:
                client.load_collection(name, timeout=60)
                _wait_built(client, name)
                got = _ids(_search(client, name, queries, FAMILIES[name][3]))
                np.testing.assert_array_equal(got, answers[name], err_msg=name)
            assert _builds(s) == builds  # every index was loaded from its files, none built again
            assert sorted(p.name for p in (s.data_dir).rglob("faiss-*.bin")) == files
            client.close()
    finally:
        assert s.stop() == 0
