"""Hybrid search through pymilvus: RRF and weighted fusion checked against numpy brute force."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from pymilvus import (
    AnnSearchRequest,
    DataType,
    Function,
    FunctionType,
    MilvusClient,
    MilvusException,
    RRFRanker,
    WeightedRanker,
)
from pymilvus.client.abstract import BaseRanker

from tests.e2e.util import brute_force, unique_name

N = 400
NQ = 3
DIMS = {"dense": 16, "aux": 8}
TAGS = ("red", "green", "blue")


def _normalise(d: float, metric: str) -> float:
    """Milvus' mapping of a distance to a score in [0, 1] (WeightedRanker's norm_score)."""
    if metric == "L2":
        return 1 - 2 * math.atan(d) / math.pi
    if metric == "IP":
        return 0.5 + math.atan(d) / math.pi
    return (1 + d) / 2


class Data:
    def __init__(self, milvus: MilvusClient, metrics: dict[str, str]) -> None:
        rng = np.random.default_rng(11)
        self.metrics = metrics
        self.vectors = {f: rng.standard_normal((N, dim)).astype(np.float32) for f, dim in DIMS.items()}
        self.queries = {f: rng.standard_normal((NQ, dim)).astype(np.float32) for f, dim in DIMS.items()}
        self.rows = [
            {"id": i, "age": i % 50, "tag": TAGS[i % 3], **{f: v[i].tolist() for f, v in self.vectors.items()}}
            for i in range(N)
        ]
        self.name = unique_name("hybrid")
        schema = MilvusClient.create_schema(auto_id=False)
        schema.add_field("id", DataType.INT64, is_primary=True)
        schema.add_field("age", DataType.INT32)
        schema.add_field("tag", DataType.VARCHAR, max_length=8)
        for field, dim in DIMS.items():
            schema.add_field(field, DataType.FLOAT_VECTOR, dim=dim)
        index = milvus.prepare_index_params()
        for field, metric in metrics.items():
            index.add_index(field, index_type="FLAT", metric_type=metric)
        milvus.create_collection(self.name, schema=schema, index_params=index, num_shards=2)
        milvus.insert(self.name, self.rows[: N // 2])
        milvus.flush(self.name)  # half sealed, half growing
        milvus.insert(self.name, self.rows[N // 2 :])

    def request(self, field: str, limit: int, expr: str = "") -> AnnSearchRequest:
        return AnnSearchRequest(
            self.queries[field].tolist(), field, {"metric_type": self.metrics[field]}, limit, expr=expr
        )

    def sub_hits(self, field: str, limit: int, keep: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Per query: the ids and distances a sub search returns, best first."""
        idx = np.arange(N) if keep is None else np.flatnonzero(keep)
        order, dist = brute_force(self.vectors[field][idx], self.queries[field], self.metrics[field], limit)
        return idx[order], dist

    def expected(
        self, subs: list[tuple[str, int, np.ndarray | None]], ranker: str, param: Any, limit: int, offset: int = 0
    ) -> list[list[tuple[int, float]]]:
        """The fused ranking per query: (id, score), score larger first, ties by the smaller id."""
        hits = [(field, *self.sub_hits(field, k, keep)) for field, k, keep in subs]
        out = []
        for q in range(NQ):
            scores: dict[int, float] = defaultdict(float)
            for i, (field, ids, dist) in enumerate(hits):
                for rank, (key, d) in enumerate(zip(ids[q], dist[q], strict=True), start=1):
                    if ranker == "rrf":
                        scores[int(key)] += 1 / (param + rank)
                    elif ranker == "weighted":
                        scores[int(key)] += param[i] * _normalise(float(d), self.metrics[field])
                    else:  # weighted without norm_score, metrics of both directions: only L2 is mapped
                        raw = float(d) if self.metrics[field] != "L2" else _normalise(float(d), "L2")
                        scores[int(key)] += param[i] * raw
            ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
            out.append(ranked[offset : offset + limit])
        return out


@pytest.fixture(scope="module", params=[("L2", "IP"), ("COSINE", "L2")], ids=["L2+IP", "COSINE+L2"])
def data(request: pytest.FixtureRequest, standalone: Any) -> Iterator[Data]:
    milvus = MilvusClient(standalone.uri)
    d = Data(milvus, dict(zip(DIMS, request.param, strict=True)))
    try:
        yield d
    finally:
        milvus.drop_collection(d.name)
        milvus.close()


def _check(got: Any, expected: list[list[tuple[int, float]]]) -> None:
    assert len(got) == len(expected)
    for hits, want in zip(got, expected, strict=True):
        assert [h["id"] for h in hits] == [k for k, _ in want]
        np.testing.assert_allclose([h["distance"] for h in hits], [s for _, s in want], rtol=1e-5, atol=1e-6)


def test_rrf_matches_brute_force(milvus: MilvusClient, data: Data) -> None:
    reqs = [data.request("dense", 20), data.request("aux", 15)]
    got = milvus.hybrid_search(data.name, reqs, RRFRanker(), limit=10, consistency_level="Strong")
    _check(got, data.expected([("dense", 20, None), ("aux", 15, None)], "rrf", 60, 10))
    paged = milvus.hybrid_search(data.name, reqs, RRFRanker(k=5), limit=6, offset=4, consistency_level="Strong")
    _check(paged, data.expected([("dense", 20, None), ("aux", 15, None)], "rrf", 5, 6, offset=4))


def test_weighted_matches_brute_force(milvus: MilvusClient, data: Data) -> None:
    reqs = [data.request("dense", 12), data.request("aux", 25)]
    got = milvus.hybrid_search(data.name, reqs, WeightedRanker(0.7, 0.3), limit=8, consistency_level="Strong")
    _check(got, data.expected([("dense", 12, None), ("aux", 25, None)], "weighted", (0.7, 0.3), 8))


def test_weighted_without_norm_score(milvus: MilvusClient, data: Data) -> None:
    reqs = [data.request("dense", 12), data.request("aux", 12)]
    got = milvus.hybrid_search(
        data.name, reqs, WeightedRanker(0.4, 0.6, norm_score=False), limit=8, consistency_level="Strong"
    )
    _check(got, data.expected([("dense", 12, None), ("aux", 12, None)], "weighted_raw", (0.4, 0.6), 8))


def test_function_rankers_match_the_legacy_rankers(milvus: MilvusClient, data: Data) -> None:
    reqs = [data.request("dense", 10), data.request("aux", 10)]
    rrf = Function("rrf", FunctionType.RERANK, [], params={"reranker": "rrf", "k": 30})
    _check(
        milvus.hybrid_search(data.name, reqs, rrf, limit=5, consistency_level="Strong"),
        data.expected([("dense", 10, None), ("aux", 10, None)], "rrf", 30, 5),
    )
    weighted = Function(
        "w", FunctionType.RERANK, [], params={"reranker": "weighted", "weights": [0.2, 0.8], "norm_score": True}
    )
    _check(
        milvus.hybrid_search(data.name, reqs, weighted, limit=5, consistency_level="Strong"),
        data.expected([("dense", 10, None), ("aux", 10, None)], "weighted", (0.2, 0.8), 5),
    )


def test_filter_in_one_sub_request_and_output_fields(milvus: MilvusClient, data: Data) -> None:
    reqs = [data.request("dense", 15, expr='age < 20 and tag != "green"'), data.request("aux", 15)]
    got = milvus.hybrid_search(
        data.name, reqs, RRFRanker(), limit=10, output_fields=["tag", "age", "aux"], consistency_level="Strong"
    )
    keep = np.array([r["age"] < 20 and r["tag"] != "green" for r in data.rows])
    _check(got, data.expected([("dense", 15, keep), ("aux", 15, None)], "rrf", 60, 10))
    dense_ids, _ = data.sub_hits("dense", 15, keep)
    for q, hits in enumerate(got):
        for h in hits:
            row = data.rows[h["id"]]
            assert h["entity"]["tag"] == row["tag"]
            assert h["entity"]["age"] == row["age"]
            np.testing.assert_allclose(h["entity"]["aux"], row["aux"], rtol=1e-6)
        # Every key the filtered sub request found obeys its filter.
        assert all(keep[i] for i in dense_ids[q])


def test_round_decimal(milvus: MilvusClient, data: Data) -> None:
    reqs = [data.request("dense", 10), data.request("aux", 10)]
    got = milvus.hybrid_search(
        data.name, reqs, WeightedRanker(0.5, 0.5), limit=5, round_decimal=2, consistency_level="Strong"
    )
    for hits in got:
        for h in hits:
            assert h["distance"] == pytest.approx(round(h["distance"], 2), abs=1e-6)


class _Ranker(BaseRanker):
    def __init__(self, strategy: str, params: dict[str, Any]) -> None:
        self._d = {"strategy": strategy, "params": params}

    def dict(self) -> dict[str, Any]:
        return self._d


@pytest.mark.parametrize(
    ("ranker", "limit", "match"),
    [
        (
            WeightedRanker(0.5, 0.3, 0.2),
            5,
            r"number of weights \(3\) does not match the number of ann search requests \(2\)",
        ),
        (WeightedRanker(1.5, 0.5), 5, r"weight \[1.5\] is invalid, it should be in range \[0, 1\]"),
        (RRFRanker(k=0), 5, r"k \[0\] is invalid, it should be in range \(0, 16384\)"),
        (RRFRanker(k=20000), 5, r"k \[20000\] is invalid"),
        (RRFRanker(), 20000, r"limit \[20000\] is invalid"),
        (_Ranker("borda", {}), 5, r"unsupported rank strategy 'borda'"),
        (
            Function(
                "d",
                FunctionType.RERANK,
                ["age"],
                params={"reranker": "decay", "function": "gauss", "origin": 0, "scale": 5},
            ),
            5,
            r"reranker 'decay' is not supported",
        ),
    ],
)
def test_bad_ranker_is_a_clear_error_and_the_server_keeps_serving(
    milvus: MilvusClient, data: Data, ranker: Any, limit: int, match: str
) -> None:
    reqs = [data.request("dense", 5), data.request("aux", 5)]
    with pytest.raises(MilvusException, match=match):
        milvus.hybrid_search(data.name, reqs, ranker, limit=limit)
    got = milvus.hybrid_search(data.name, reqs, RRFRanker(), limit=3, consistency_level="Strong")
    assert [len(h) for h in got] == [3] * NQ


def test_bad_sub_requests_are_clear_errors(milvus: MilvusClient, data: Data) -> None:
    with pytest.raises(MilvusException, match="at least one ann search request"):
        milvus.hybrid_search(data.name, [], RRFRanker(), limit=3)
    bad_dim = AnnSearchRequest([[0.0] * 3], "aux", {}, 5)
    with pytest.raises(MilvusException, match=r"ann search request 1 \(aux\): .*dim"):
        milvus.hybrid_search(data.name, [data.request("dense", 5), bad_dim], RRFRanker(), limit=3)
    bad_filter = AnnSearchRequest(data.queries["aux"].tolist(), "aux", {}, 5, expr="nosuch > 1")
    with pytest.raises(MilvusException, match=r"ann search request 0 \(aux\)"):
        milvus.hybrid_search(data.name, [bad_filter], RRFRanker(), limit=3)
    wrong_metric = AnnSearchRequest(data.queries["dense"].tolist(), "dense", {"metric_type": "IP"}, 5)
    with pytest.raises(MilvusException, match=r"ann search request 1 \(dense\): metric type not match"):
        milvus.hybrid_search(data.name, [data.request("aux", 5), wrong_metric], RRFRanker(), limit=3)
    one_query = AnnSearchRequest(data.queries["aux"][:1].tolist(), "aux", {}, 5)
    with pytest.raises(MilvusException, match="same number of query vectors"):
        milvus.hybrid_search(data.name, [data.request("dense", 5), one_query], RRFRanker(), limit=3)
    with pytest.raises(MilvusException, match="nosuchfield"):
        milvus.hybrid_search(data.name, [data.request("dense", 5)], RRFRanker(), limit=3, output_fields=["nosuchfield"])
    assert len(milvus.hybrid_search(data.name, [data.request("dense", 5)], RRFRanker(), limit=3)) == NQ


def test_partition_names_limit_every_sub_search(milvus: MilvusClient) -> None:
    rng = np.random.default_rng(5)
    name = unique_name("hybrid_part")
    schema = MilvusClient.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    for field, dim in DIMS.items():
        schema.add_field(field, DataType.FLOAT_VECTOR, dim=dim)
    index = milvus.prepare_index_params()
    for field in DIMS:
        index.add_index(field, index_type="FLAT", metric_type="L2")
    milvus.create_collection(name, schema=schema, index_params=index)
    milvus.create_partition(name, "p1")
    vectors = {f: rng.standard_normal((60, dim)).astype(np.float32) for f, dim in DIMS.items()}
    rows = [{"id": i, **{f: v[i].tolist() for f, v in vectors.items()}} for i in range(60)]
    milvus.insert(name, rows[:30])
    milvus.insert(name, rows[30:], partition_name="p1")
    queries = {f: rng.standard_normal((1, dim)).astype(np.float32) for f, dim in DIMS.items()}
    reqs = [AnnSearchRequest(queries[f].tolist(), f, {}, 10) for f in DIMS]
    got = milvus.hybrid_search(name, reqs, RRFRanker(), limit=10, partition_names=["p1"], consistency_level="Strong")
    scores: dict[int, float] = defaultdict(float)
    for f in DIMS:
        order, _ = brute_force(vectors[f][30:], queries[f], "L2", 10)
        for rank, i in enumerate(order[0], start=1):
            scores[30 + int(i)] += 1 / (60 + rank)
    want = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:10]
    _check(got, [want])
    milvus.drop_collection(name)
