"""DISKANN through pymilvus on a real standalone, as Milvus users create it, and a restart.

One collection per metric (3000 x 16 clustered rows, one shard):
``create_index`` DISKANN with Milvus' build parameters, insert, flush, load,
wait for the background build; search with ``search_list`` (recall against
the exact answer, exact distances), a filter that leaves too many rows for
the exact fallback (the graph is walked and only allowed rows come back), a
range. ``search_list`` below topk is refused with knowhere's words; bad build
parameters and DISKANN on a binary vector field with Milvus' code 1100, and
nothing is created. After a restart each collection loads its stored disk
index (no build runs) and answers as before.
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
BUILD = {"max_degree": 32, "search_list_size": 80, "pq_code_budget_gb_ratio": 0.2}
METRICS = {"diskann_l2": "L2", "diskann_ip": "IP", "diskann_cos": "COSINE"}


def _data() -> tuple[np.ndarray, np.ndarray]:
    middle = centres(30, DIM, seed=51)
    return around(middle, ROWS, spread=0.3, seed=52), around(middle, NQ, spread=0.3, seed=53)


def _create(client: MilvusClient, name: str, vectors: np.ndarray) -> None:
    schema = MilvusClient.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("v", DataType.FLOAT_VECTOR, dim=DIM)
    index = client.prepare_index_params()
    index.add_index("v", index_type="DISKANN", metric_type=METRICS[name], params=BUILD)
    client.create_collection(name, schema=schema, index_params=index, num_shards=1)
    client.insert(name, [{"id": i, "v": vectors[i].tolist()} for i in range(ROWS)])
    client.flush(name)


def _wait_built(client: MilvusClient, name: str) -> None:
    deadline = time.monotonic() + 120
    while (desc := client.describe_index(name, "v"))["state"] != "Finished":
        assert time.monotonic() < deadline, f"{name}: the index was not built: {desc}"
        time.sleep(0.2)


def _search(client: MilvusClient, name: str, queries: np.ndarray, params: dict[str, Any], **kw: Any) -> list[Any]:
    return client.search(  # type: ignore[no-any-return]
        name, data=queries.tolist(), limit=K, search_params={"metric_type": METRICS[name], "params": params},
        consistency_level="Strong", **kw,
    )


def _ids(hits: list[Any]) -> np.ndarray:
    return np.array([[h["id"] for h in q] + [-1] * (K - len(q)) for q in hits], dtype=np.int64)


def _builds(s: Standalone) -> int:
    return sum(f.read_text(errors="replace").count("index built") for f in (s.data_dir / "logs").glob("*.log"))


def _check_refused(client: MilvusClient) -> None:
    """Bad DISKANN definitions get code 1100 naming the parameter, and nothing is created."""
    schema = MilvusClient.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("v", DataType.FLOAT_VECTOR, dim=DIM)
    schema.add_field("b", DataType.BINARY_VECTOR, dim=64)
    client.create_collection("refused", schema=schema, num_shards=1)
    for field, metric, params, words in [
        ("v", "L2", {"max_degree": 0}, "max_degree must be in [1, 512], got 0"),
        ("v", "L2", {"pq_code_budget_gb_ratio": 0.5}, "pq_code_budget_gb_ratio must be in (0, 0.25]"),
        ("v", "IP", {"search_cache_budget_gb_ratio": 0.3}, "search_cache_budget_gb_ratio must be in [0, 0.3)"),
        ("v", "HAMMING", {}, "float vector index does not support metric type: HAMMING"),
        ("b", "HAMMING", {}, "data type BinaryVector can't build with this index DISKANN"),
    ]:
        index = client.prepare_index_params()
        index.add_index(field, index_type="DISKANN", metric_type=metric, params=params)
        with pytest.raises(MilvusException) as err:
            client.create_index("refused", index)
        assert err.value.code == 1100 and words in err.value.message, (params, err.value)
        assert client.list_indexes("refused") == []
    client.drop_collection("refused")


@pytest.mark.timeout(300)
def test_diskann_builds_searches_filters_and_survives_a_restart(tmp_path: Path) -> None:
    vectors, queries = _data()
    s = Standalone(tmp_path / "data")
    s.start()
    answers: dict[str, np.ndarray] = {}
    try:
        with dump_logs_on_failure(s):
            client = MilvusClient(s.uri)
            _check_refused(client)
            for name in METRICS:
                _create(client, name, vectors)
            for name, metric in METRICS.items():
                _wait_built(client, name)
                desc = client.describe_index(name, "v")
                assert desc["index_type"] == "DISKANN" and desc["metric_type"] == metric
                hits = _search(client, name, queries, {"search_list": 40})
                truth, want = reference_topk(Metric(metric), queries, vectors, K)
                got = _ids(hits)
                assert recall(got, truth) >= 0.9, (name, recall(got, truth))
                same = np.isin(got[0], truth[0])
                dist = np.array([h["distance"] for h in hits[0]])[same]
                exact = np.array([want[0][list(truth[0]).index(i)] for i in got[0][same]])
                np.testing.assert_allclose(dist, exact, rtol=1e-3, atol=1e-3)
                answers[name] = got
                # 2500 allowed rows of 3000: above the exact-search threshold, so the graph is walked.
                filtered = _search(client, name, queries, {"search_list": 40}, filter="id >= 500")
                assert all(h["id"] >= 500 for q in filtered for h in q) and all(len(q) == K for q in filtered)
                allowed = np.arange(ROWS) >= 500
                ftruth, _ = reference_topk(Metric(metric), queries, vectors[allowed], K)
                assert recall(_ids(filtered), ftruth + 500) >= 0.9
            # A range keeps exactly the band.
            hits = _search(client, "diskann_l2", queries[:5], {"search_list": 40, "radius": 4.0, "range_filter": 0.5})
            d = np.array([h["distance"] for q in hits for h in q])
            assert len(d) and ((d < 4.0) & (d >= 0.5)).all(), d
            with pytest.raises(MilvusException, match=r"search_list_size\(5\) should be larger than k\(10\)"):
                _search(client, "diskann_l2", queries[:1], {"search_list": 5})
            with pytest.raises(MilvusException, match=r"param 'search_list' \(0\) should be an integer"):
                _search(client, "diskann_l2", queries[:1], {"search_list": 0})
            builds = _builds(s)
            assert builds >= len(METRICS)
            files = sorted(p.name for p in s.data_dir.rglob("diskann-*.bin"))
            assert len(files) == len(METRICS), files
            client.close()
    finally:
        assert s.stop() == 0

    s.start()
    try:
        with dump_logs_on_failure(s):
            client = MilvusClient(s.uri)
            for name in METRICS:
                client.load_collection(name, timeout=60)
                _wait_built(client, name)
                np.testing.assert_array_equal(_ids(_search(client, name, queries, {"search_list": 40})),
                                              answers[name], err_msg=name)
            assert _builds(s) == builds  # every index was loaded from its files, none built again
            assert sorted(p.name for p in s.data_dir.rglob("diskann-*.bin")) == files
            client.close()
    finally:
        assert s.stop() == 0
