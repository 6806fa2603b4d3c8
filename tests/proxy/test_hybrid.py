"""Hybrid search: rank params as pymilvus sends them, and the fusion math (no cluster)."""

from __future__ import annotations

import asyncio
import math
from collections import defaultdict
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from pymilvus import Function, FunctionType, RRFRanker, WeightedRanker
from pymilvus.client.abstract import BaseRanker
from pymilvus.client.prepare import Prepare
from pymilvus.grpc_gen import schema_pb2

from common.errors import InvalidArgument, NotSupported
from proxy import hybrid, hybrid_rank
from proxy.hybrid_fusion import SubResult, fuse, normalize_distances
from proxy.hybrid_rank import HybridRank, parse_rank

PK = "pk"


def _rank(ranker: Any, *, limit: int = 10, sub_requests: int = 2, **kwargs: Any) -> HybridRank:
    """Build the HybridSearchRequest exactly as pymilvus does, then parse its rank params."""
    request = Prepare.hybrid_search_request_with_ranker("c", [], ranker, limit, None, None, **kwargs)
    function_score = request.function_score if request.HasField("function_score") else None
    return parse_rank({p.key: p.value for p in request.rank_params}, function_score, sub_requests=sub_requests)


def _hits(queries: list[int], ids: list[Any], distances: list[float], **fields: list[Any]) -> pa.Table:
    pk_type = pa.string() if ids and isinstance(ids[0], str) else pa.int64()
    return pa.table(
        {
            "query": pa.array(queries, type=pa.int32()),
            PK: pa.array(ids, type=pk_type),
            "distance": pa.array(distances, type=pa.float32()),
            **{name: pa.array(values) for name, values in fields.items()},
        }
    )


def _fused(table: pa.Table) -> list[tuple[int, Any, float]]:
    columns = (table.column(name).to_pylist() for name in ("query", PK, "distance"))
    return list(zip(*columns, strict=True))


# ---------------------------------------------------------------------------------- rank params


def test_rrf_ranker_params() -> None:
    rank = _rank(RRFRanker(30), limit=7, offset=3, round_decimal=2)
    assert rank == HybridRank(ranker=hybrid_rank.RRFRanker(k=30), limit=7, offset=3, round_decimal=2)
    assert _rank(RRFRanker()).ranker == hybrid_rank.RRFRanker(k=60)


def test_weighted_ranker_params() -> None:
    rank = _rank(WeightedRanker(0.25, 1))
    assert rank.ranker == hybrid_rank.WeightedRanker(weights=(0.25, 1.0), norm_score=True)
    assert (rank.limit, rank.offset, rank.round_decimal) == (10, 0, -1)
    assert _rank(WeightedRanker(0.5, 0.5, norm_score=False)).ranker == hybrid_rank.WeightedRanker(
        weights=(0.5, 0.5), norm_score=False
    )


def test_function_rankers_match_the_legacy_ones() -> None:
    rrf = Function("r", FunctionType.RERANK, [], params={"reranker": "rrf", "k": 25})
    assert _rank(rrf).ranker == hybrid_rank.RRFRanker(k=25)
    assert _rank(Function("r", FunctionType.RERANK, [], params={"reranker": "rrf"})).ranker == hybrid_rank.RRFRanker()
    weighted = Function(
        "w", FunctionType.RERANK, [], params={"reranker": "weighted", "weights": [0.1, 0.9], "norm_score": True}
    )
    assert _rank(weighted).ranker == hybrid_rank.WeightedRanker(weights=(0.1, 0.9), norm_score=True)


def test_no_strategy_means_rrf_with_k_60() -> None:
    assert parse_rank({"limit": "3"}, None, sub_requests=2).ranker == hybrid_rank.RRFRanker(k=60)


class _Bogus(BaseRanker):
    def __init__(self, strategy: str, params: Any) -> None:
        self._d = {"strategy": strategy, "params": params}

    def dict(self) -> dict[str, Any]:
        return self._d


@pytest.mark.parametrize(
    ("ranker", "kwargs", "match"),
    [
        (RRFRanker(0), {}, r"k \[0\] is invalid, it should be in range \(0, 16384\)"),
        (RRFRanker(-5), {}, r"k \[-5\] is invalid"),
        (RRFRanker(16384), {}, r"k \[16384\] is invalid"),
        (
            WeightedRanker(0.5, 0.3, 0.2),
            {},
            r"number of weights \(3\) does not match the number of ann search requests \(2\)",
        ),
        (WeightedRanker(0.5), {}, r"number of weights \(1\)"),
        (WeightedRanker(1.5, 0.2), {}, r"weight \[1.5\] is invalid, it should be in range \[0, 1\]"),
        (WeightedRanker(0.5, -0.1), {}, r"weight \[-0.1\] is invalid"),
        (_Bogus("bogus", {}), {}, r"unsupported rank strategy 'bogus'"),
        (_Bogus("rrf", {"k": "sixty"}), {}, r"k \[sixty\] is invalid, it should be a number"),
        (_Bogus("weighted", {"weights": 0.5}), {}, r"weights \[0.5\] should be a list"),
        (_Bogus("weighted", {}), {}, r"weights not found"),
        (RRFRanker(), {"limit": 0}, r"limit \[0\] is invalid, it should be in range \[1, 16384\]"),
        (RRFRanker(), {"limit": 16385}, r"limit \[16385\] is invalid"),
        (RRFRanker(), {"limit": 16000, "offset": 1000}, r"limit\+offset \[17000\] is invalid"),
        (RRFRanker(), {"offset": -1}, r"offset \[-1\] is invalid"),
        (RRFRanker(), {"round_decimal": 7}, r"round_decimal 7 is invalid"),
    ],
)
def test_bad_rank_params_are_invalid_arguments(ranker: Any, kwargs: dict[str, Any], match: str) -> None:
    limit = kwargs.pop("limit", 10)
    with pytest.raises(InvalidArgument, match=match):
        _rank(ranker, limit=limit, **kwargs)


def test_malformed_rank_params() -> None:
    with pytest.raises(InvalidArgument, match="params not found"):
        parse_rank({"strategy": "rrf", "limit": "3"}, None, sub_requests=1)
    with pytest.raises(InvalidArgument, match="not valid JSON"):
        parse_rank({"strategy": "rrf", "params": "{k:", "limit": "3"}, None, sub_requests=1)
    with pytest.raises(InvalidArgument, match="limit not found"):
        parse_rank({"strategy": "rrf", "params": "{}"}, None, sub_requests=1)
    with pytest.raises(InvalidArgument, match=r"limit \[ten\] is invalid, it should be an integer"):
        parse_rank({"limit": "ten"}, None, sub_requests=1)
    with pytest.raises(InvalidArgument, match="norm_score"):
        parse_rank(
            {"strategy": "weighted", "params": '{"weights": [1], "norm_score": 1}', "limit": "3"}, None, sub_requests=1
        )


def test_unsupported_rerankers_and_grouping() -> None:
    decay = Function(
        "d", FunctionType.RERANK, ["age"], params={"reranker": "decay", "function": "gauss", "origin": 0, "scale": 1}
    )
    with pytest.raises(NotSupported, match="reranker 'decay' is not supported in hybrid search"):
        _rank(decay)
    with pytest.raises(NotSupported, match="group_by_field"):
        _rank(RRFRanker(), group_by_field="tag")
    with_inputs = Function("r", FunctionType.RERANK, ["age"], params={"reranker": "rrf"})
    with pytest.raises(InvalidArgument, match="takes no input fields"):
        _rank(with_inputs)
    two = schema_pb2.FunctionScore(functions=[schema_pb2.FunctionSchema(type=schema_pb2.FunctionType.Rerank)] * 2)
    with pytest.raises(InvalidArgument, match="one rerank function, got 2"):
        parse_rank({"limit": "1"}, two, sub_requests=1)


# ---------------------------------------------------------------------------------- fusion


def test_normalisation_matches_milvus() -> None:
    d = np.array([0.0, 1.0, 3.0])
    np.testing.assert_allclose(normalize_distances(d, "L2"), 1 - 2 * np.arctan(d) / np.pi)
    np.testing.assert_allclose(normalize_distances(d, "ip"), 0.5 + np.arctan(d) / np.pi)
    np.testing.assert_allclose(normalize_distances(np.array([-1.0, 0.0, 1.0]), "COSINE"), [0.0, 0.5, 1.0])
    assert normalize_distances(np.array([0.0]), "L2")[0] == 1.0


def test_rrf_sums_reciprocal_ranks_from_one() -> None:
    a = SubResult(hits=_hits([0, 0, 0], [1, 2, 3], [0.1, 0.2, 0.3]), metric="L2")
    b = SubResult(hits=_hits([0, 0], [3, 4], [0.9, 0.8]), metric="IP")
    fused = fuse([a, b], ranker=hybrid_rank.RRFRanker(k=60), limit=10, offset=0, pk_field=PK)
    # 3: ranks 3 and 1; 1: rank 1; 2 and 4 tie at rank 2 (the smaller key first).
    assert _fused(fused) == [
        (0, 3, pytest.approx(1 / 63 + 1 / 61)),
        (0, 1, pytest.approx(1 / 61)),
        (0, 2, pytest.approx(1 / 62)),
        (0, 4, pytest.approx(1 / 62)),
    ]
    page = fuse([a, b], ranker=hybrid_rank.RRFRanker(k=1), limit=2, offset=1, pk_field=PK)
    assert [k for _, k, _ in _fused(page)] == [1, 2]


def test_fusion_is_per_query_with_varchar_keys() -> None:
    a = SubResult(hits=_hits([0, 0, 1, 1], ["x", "y", "y", "z"], [1, 2, 1, 2]), metric="L2")
    b = SubResult(hits=_hits([0, 1], ["y", "x"], [5, 4]), metric="L2")
    fused = fuse([a, b], ranker=hybrid_rank.RRFRanker(k=10), limit=2, offset=0, pk_field=PK)
    # Query 1: x and y tie at rank 1 (the smaller key first); z is cut by the limit.
    assert _fused(fused) == [
        (0, "y", pytest.approx(1 / 12 + 1 / 11)),
        (0, "x", pytest.approx(1 / 11)),
        (1, "x", pytest.approx(1 / 11)),
        (1, "y", pytest.approx(1 / 11)),
    ]


def test_weighted_normalised_scores() -> None:
    a = SubResult(hits=_hits([0, 0], [1, 2], [0.5, 2.0]), metric="L2")
    b = SubResult(hits=_hits([0, 0], [2, 3], [4.0, -1.0]), metric="IP")
    fused = fuse(
        [a, b], ranker=hybrid_rank.WeightedRanker(weights=(0.8, 0.2), norm_score=True), limit=5, offset=0, pk_field=PK
    )

    def l2(d: float) -> float:
        return 1 - 2 * math.atan(d) / math.pi

    def ip(d: float) -> float:
        return 0.5 + math.atan(d) / math.pi

    expected = {1: 0.8 * l2(0.5), 2: 0.8 * l2(2.0) + 0.2 * ip(4.0), 3: 0.2 * ip(-1.0)}
    ranked = sorted(expected, key=lambda k: (-expected[k], k))
    assert _fused(fused) == [(0, k, pytest.approx(expected[k], rel=1e-6)) for k in ranked]


def test_weighted_raw_scores_keep_the_metric_direction() -> None:
    a = SubResult(hits=_hits([0, 0], [1, 2], [1.0, 3.0]), metric="L2")
    b = SubResult(hits=_hits([0, 0], [2, 3], [0.5, 2.5]), metric="L2")
    raw = hybrid_rank.WeightedRanker(weights=(1.0, 1.0), norm_score=False)
    fused = fuse([a, b], ranker=raw, limit=5, offset=0, pk_field=PK)
    # All L2 and unmapped: the smaller weighted sum ranks first.
    assert _fused(fused) == [(0, 1, 1.0), (0, 3, 2.5), (0, 2, 3.5)]
    # Mixed directions: L2 is mapped so larger is better everywhere, IP stays raw.
    c = SubResult(hits=_hits([0, 0], [2, 3], [0.5, 2.5]), metric="IP")
    mixed = fuse([a, c], ranker=raw, limit=5, offset=0, pk_field=PK)
    l2 = lambda d: 1 - 2 * math.atan(d) / math.pi  # noqa: E731
    expected = {1: l2(1.0), 2: l2(3.0) + 0.5, 3: 2.5}
    assert _fused(mixed) == [(0, k, pytest.approx(expected[k])) for k in sorted(expected, key=lambda k: -expected[k])]


def test_output_fields_come_from_the_first_sub_search_that_found_the_key() -> None:
    a = _hits([0], [7], [0.1], tag=["from a"]).append_column("_ts", pa.array([5], type=pa.uint64()))
    b = _hits([0, 0], [8, 7], [0.1, 0.2], tag=["from b", "stale b"]).append_column("_ts", pa.array([5, 6], pa.uint64()))
    fused = fuse(
        [SubResult(hits=a, metric="L2"), SubResult(hits=b, metric="L2")],
        ranker=hybrid_rank.RRFRanker(),
        limit=5,
        offset=0,
        pk_field=PK,
    )
    assert fused.column_names == ["query", PK, "tag", "distance"]
    assert fused.column(PK).to_pylist() == [7, 8]
    assert fused.column("tag").to_pylist() == ["from a", "from b"]


def test_no_hits_fuse_to_an_empty_table() -> None:
    empty = SubResult(hits=_hits([], [], [], tag=pa.array([], pa.string())), metric="L2")
    fused = fuse([empty, empty], ranker=hybrid_rank.WeightedRanker(weights=(0.5, 0.5)), limit=3, offset=0, pk_field=PK)
    assert fused.num_rows == 0
    assert set(fused.column_names) == {"query", PK, "tag", "distance"}


def test_fuse_refuses_inputs_it_cannot_rank() -> None:
    sub = SubResult(hits=_hits([1, 0], [1, 2], [0.1, 0.2]), metric="L2")
    with pytest.raises(ValueError, match="not sorted by query"):
        fuse([sub], ranker=hybrid_rank.RRFRanker(), limit=1, offset=0, pk_field=PK)
    with pytest.raises(ValueError, match="2 weights for 1"):
        fuse([sub], ranker=hybrid_rank.WeightedRanker(weights=(1, 1)), limit=1, offset=0, pk_field=PK)
    with pytest.raises(ValueError, match="no sub search results"):
        fuse([], ranker=hybrid_rank.RRFRanker(), limit=1, offset=0, pk_field=PK)


def _reference(
    subs: list[tuple[list[int], list[int], list[float], str]], ranker: Any, limit: int, offset: int
) -> list[tuple[int, int, float]]:
    """Fusion the slow, obvious way: dictionaries per query."""
    scores: dict[int, dict[int, float]] = defaultdict(lambda: defaultdict(float))
    for i, (queries, ids, distances, metric) in enumerate(subs):
        rank: dict[int, int] = defaultdict(int)
        for q, key, d in zip(queries, ids, distances, strict=True):
            rank[q] += 1
            if isinstance(ranker, hybrid_rank.RRFRanker):
                scores[q][key] += 1 / (ranker.k + rank[q])
            else:
                scores[q][key] += ranker.weights[i] * float(normalize_distances(np.array([d]), metric)[0])
    out = []
    for q in sorted(scores):
        ranked = sorted(scores[q].items(), key=lambda kv: (-kv[1], kv[0]))[offset : offset + limit]
        out += [(q, key, s) for key, s in ranked]
    return out


@pytest.mark.parametrize("seed", range(20))
def test_fusion_matches_a_reference(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_subs, nq = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    metrics = [str(rng.choice(["L2", "IP", "COSINE"])) for _ in range(n_subs)]
    raw = []
    for metric in metrics:
        queries: list[int] = []
        ids: list[int] = []
        distances: list[float] = []
        for q in range(nq):
            k = int(rng.integers(0, 12))
            keys = rng.choice(30, size=k, replace=False).tolist()
            d = np.sort(rng.uniform(-1, 1, size=k) if metric != "L2" else rng.uniform(0, 5, size=k))
            if metric != "L2":
                d = d[::-1]
            queries += [q] * k
            ids += keys
            distances += d.astype(np.float32).tolist()
        raw.append((queries, ids, distances, metric))
    subs = [SubResult(hits=_hits(q, i, d), metric=m) for q, i, d, m in raw]
    limit, offset = int(rng.integers(1, 8)), int(rng.integers(0, 4))
    rankers: list[hybrid_rank.Ranker] = [
        hybrid_rank.RRFRanker(k=float(rng.uniform(1, 100))),
        hybrid_rank.WeightedRanker(weights=tuple(rng.uniform(0, 1, n_subs)), norm_score=True),
    ]
    for ranker in rankers:
        got = fuse(subs, ranker=ranker, limit=limit, offset=offset, pk_field=PK)
        expected = _reference(raw, ranker, limit, offset)
        assert [(q, k) for q, k, _ in _fused(got)] == [(q, k) for q, k, _ in expected]
        np.testing.assert_allclose([s for *_, s in _fused(got)], [s for *_, s in expected], rtol=1e-9)


# ---------------------------------------------------------------------------------- concurrency


async def test_a_failing_sub_search_cancels_the_others_and_raises_itself() -> None:
    cancelled = asyncio.Event()

    async def slow() -> int:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return 1

    async def bad() -> int:
        await asyncio.sleep(0)
        raise InvalidArgument("sub search failed")

    with pytest.raises(InvalidArgument, match="sub search failed"):
        await hybrid._all([slow(), bad()])
    assert cancelled.is_set()
    assert await hybrid._all([asyncio.sleep(0, result=i) for i in range(3)]) == [0, 1, 2]


async def test_a_non_strata_failure_is_raised_as_itself() -> None:
    async def boom() -> int:
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        await hybrid._all([boom()])
