"""The workload's searches: an exact search of ``v`` or ``sp`` (by vectors or keys, with filters, partitions,
offsets, grouping) and a hybrid search of two, fused by RRF or a weighted ranker, each with the model's ranking.

Each operation is a function ``(Workload) -> list[Step]`` listed in ``workload.READS``.
"""

from __future__ import annotations

import functools
import itertools
import math
import random
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pymilvus import AnnSearchRequest, RRFRanker, WeightedRanker

from tests.differential.data import Row
from tests.differential.differences import Feature, skipped, with_feature
from tests.differential.model import drop_smallest, search_projection
from tests.differential.steps import SearchExpectation, Shape, Step, scoped, strong

if TYPE_CHECKING:
    from tests.differential.workload import Workload


def search(w: Workload) -> list[Step]:
    """An exact search of ``v`` or ``sp``: by vectors or (model only) by keys, with a filter, partitions, offset,
    grouping, output fields; on ``sp`` now and then with ``drop_ratio_search`` (model only)."""
    rng = w.rng
    field = w.vector_field()
    metric = w.spec.metric_of(field)
    partitions = w.read_partitions()
    drop_ratio = rng.choice((0.2, 0.5)) if field == "sp" and rng.random() < 0.2 else 0.0
    vectors = w.query_vectors(field, rng.randint(1, 3), distinct=drop_ratio > 0)
    keys = _search_keys(w, field, partitions, len(vectors)) if rng.random() < 0.15 else None
    if keys is not None:
        vectors = [w.model.rows[pk][field] for pk in keys]
        if any(len(set(q.values())) != len(q) for q in vectors if isinstance(q, dict)):
            drop_ratio = 0.0  # which of two equal weights is dropped would be the server's choice
    limit = rng.randint(1, 10)
    offset = 0 if rng.random() < 0.7 else rng.randint(1, 5)
    f = w.maybe_filter(0.6)
    fields = w.output_fields()
    features = with_feature(f.features if f else frozenset(), Feature.SEARCH_DEFAULT_OUTPUT, fields is None)
    if skipped(features):
        fields = ["id"]
        features = f.features if f else frozenset()
    matching = w.model.matching(f, partitions)
    features = with_feature(features, Feature.NULL_VECTOR, w.null_vectors(matching, searched=field == "v",
                                                                   projected=fields or []))  # fmt: skip
    features = with_feature(features, Feature.SEARCH_BY_IDS, keys is not None)
    features = with_feature(features, Feature.SPARSE_DROP_RATIO, drop_ratio > 0)
    queries = [drop_smallest(q, drop_ratio) for q in vectors] if drop_ratio else vectors
    ranked = [w.model.ranked(q, f, metric, partitions, field) for q in queries]
    group = rng.choice(("i", "b")) if rng.random() < 0.2 else None
    if group is not None:
        winners = [_group_winners(r, w.model.rows, group) for r in ranked]
        if all(g is not None for g in winners):
            ranked, offset = [g for g in winners if g is not None], 0
        else:
            group = None
    expect = SearchExpectation(
        ranked=tuple(tuple(r) for r in ranked),
        entities={row["id"]: search_projection(row, fields) for row in matching},
        limit=limit,
        offset=offset,
        metric=metric,
    )
    kwargs = scoped(strong(collection_name=w.target(), anns_field=field, limit=limit, filter=f.text if f else ""),
                    partitions)  # fmt: skip
    if keys is not None:
        kwargs["ids"] = keys
    else:
        kwargs["data"] = vectors
    if drop_ratio:
        kwargs["search_params"] = {"metric_type": "IP", "params": {"drop_ratio_search": drop_ratio}}
    if group is not None:
        kwargs["group_by_field"] = group
    if offset:
        kwargs["offset"] = offset
    if fields is not None:
        kwargs["output_fields"] = fields
    return [w.step("search", "search", shape=Shape.SEARCH, read=True, expect=expect, features=features, **kwargs)]


def _search_keys(w: Workload, field: str, partitions: list[str] | None, n: int) -> list[int] | None:
    """Keys to search by: live rows in the searched partitions whose ``field`` is not null (Milvus refuses any
    other); None when there are none."""
    pool = [row["id"] for row in w.model.matching(None, partitions) if row[field] is not None]
    return w.rng.sample(pool, min(n, len(pool))) if pool else None


def _group_winners(
    ranked: Sequence[tuple[int, float]], rows: Mapping[int, Row], field: str
) -> list[tuple[int, float]] | None:
    """A grouping search's hits (group size 1): the best row of each value of ``field``, best first; None when a
    group's best two rows tie (which one wins would be the server's choice)."""
    winners: dict[Any, tuple[int, float]] = {}
    runner_up: dict[Any, float] = {}
    for pk, d in ranked:
        value = rows[pk][field]
        if value not in winners:
            winners[value] = (pk, d)
        elif value not in runner_up:
            runner_up[value] = d
    if any(_close(winners[v][1], d) for v, d in runner_up.items()):
        return None
    return list(winners.values())


def _sub_limit(rng: random.Random, ranked: Sequence[Sequence[tuple[int, float]]]) -> int | None:
    """A sub search's limit (1..10) that cuts no query vector's ranking inside a tie (which key made the cut would
    be arbitrary, and so would the fused scores); None when every limit does."""
    fits = [
        n for n in range(1, 11)
        if all(len(r) <= n or not _close(r[n - 1][1], r[n][1]) for r in ranked)
    ]  # fmt: skip
    return rng.choice(fits) if fits else None


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-6)


def _tied(hits: Sequence[tuple[int, float]]) -> bool:
    return any(_close(a[1], b[1]) for a, b in itertools.pairwise(hits))


def _normalised(metric: str, distance: float) -> float:
    """A distance mapped to [0, 1], larger better, as a weighted ranker with ``norm_score`` does."""
    if metric == "L2":
        return 1 - 2 * math.atan(distance) / math.pi
    return 0.5 + math.atan(distance) / math.pi


def _weighted(metric: str, weight: float, _rank: int, distance: float) -> float:
    return weight * _normalised(metric, distance)


def hybrid_search(w: Workload) -> list[Step]:
    """Two ANN searches, each on ``v`` or ``sp`` (their own vectors, filters and limits), fused by RRF or a weighted
    ranker."""
    rng = w.rng
    nq = rng.randint(1, 2)
    partitions = w.read_partitions()
    subs = []
    features: frozenset[Feature] = frozenset()
    for _ in range(2):
        field = w.vector_field()
        vectors = w.query_vectors(field, nq)
        f = w.maybe_filter(0.5)
        ranked = [w.model.ranked(q, f, w.spec.metric_of(field), partitions, field) for q in vectors]
        sub_limit = _sub_limit(rng, ranked)
        if sub_limit is None:
            return search(w)
        subs.append((field, vectors, f, [r[:sub_limit] for r in ranked], sub_limit))
        features |= f.features if f else frozenset()
        features = with_feature(features, Feature.NULL_VECTOR,
                         field == "v" and w.null_vectors(w.model.matching(f, partitions), searched=True))  # fmt: skip
    weigh: list[Callable[[int, float], float]]
    # RRF scores ranks, and the order of equal distances is arbitrary: only without ties inside a sub search's hits.
    if rng.random() < 0.5 and not any(_tied(hits) for _, _, _, ranked, _ in subs for hits in ranked):
        k = rng.choice((10, 60))
        ranker: Any = RRFRanker(k)
        weigh = [lambda rank, _d: 1 / (k + rank)] * 2
    else:
        weights = [rng.choice((0.2, 0.5, 1.0)) for _ in subs]
        ranker = WeightedRanker(*weights)
        weigh = [functools.partial(_weighted, w.spec.metric_of(field), wt)
                 for wt, (field, *_) in zip(weights, subs, strict=True)]  # fmt: skip
    fused = []
    for j in range(nq):
        scores: dict[int, float] = {}
        for (_, _, _, ranked, _), score in zip(subs, weigh, strict=True):
            for rank, (pk, d) in enumerate(ranked[j], start=1):
                scores[pk] = scores.get(pk, 0.0) + score(rank, d)
        fused.append(tuple(sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))))
    fields = w.output_fields() or ["id"]
    visible = w.model.matching(None, partitions)
    features = with_feature(features, Feature.NULL_VECTOR, w.null_vectors(visible, projected=fields))
    limit = rng.randint(1, 10)
    offset = 0 if rng.random() < 0.7 else rng.randint(1, 3)
    expect = SearchExpectation(
        ranked=tuple(fused),
        entities={row["id"]: search_projection(row, fields) for row in visible},
        limit=limit,
        offset=offset,
        metric="IP",  # fused scores: larger is better
    )
    reqs = [
        AnnSearchRequest(data=vectors, anns_field=field, param={"metric_type": w.spec.metric_of(field)},
                         limit=sub_limit, expr=f.text if f else "")
        for field, vectors, f, _, sub_limit in subs
    ]  # fmt: skip
    kwargs = scoped(strong(collection_name=w.target(), reqs=reqs, ranker=ranker, limit=limit,
                             output_fields=fields), partitions)  # fmt: skip
    if offset:
        kwargs["offset"] = offset
    return [w.step("hybrid search", "hybrid_search", shape=Shape.SEARCH, read=True, expect=expect, features=features,
                   **kwargs)]  # fmt: skip
