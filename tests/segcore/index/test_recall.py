"""The recall proof: our HNSW loses nothing against hnswlib used directly, and is high on clustered data.

20k x 128 rows, 200 queries, M=16, efConstruction=200, ef=64, recall@10
against numpy brute force. Run with ``-s`` to see the measured recalls.
"""

from __future__ import annotations

import time

import hnswlib
import numpy as np
import pytest

from segcore.index.base import SearchParams
from segcore.index.factory import IndexSpec, build_index
from segcore.index.hnsw import HnswIndex
from segcore.segments.metric import Metric
from tests.segcore.index.reference import around, centres, gaussian, recall, reference_topk

ROWS, DIM, NQ, K, EF = 20_000, 128, 200, 10, 64
M, EF_CONSTRUCTION = 16, 200
#: Noise around each of the 100 centres (the centres are standard Gaussian: ~16 apart).
SPREAD = 0.1

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


def _ours(metric: Metric, base: np.ndarray) -> HnswIndex:
    spec = IndexSpec(index_type="HNSW", metric=metric.value, params={"M": M, "efConstruction": EF_CONSTRUCTION})
    index = build_index(spec, base)
    assert isinstance(index, HnswIndex)
    assert not index.searches_exactly(ROWS, K)  # the proof is about the graph walk
    return index


def _hnswlib_direct(space: str, base: np.ndarray, queries: np.ndarray) -> np.ndarray:
    ref = hnswlib.Index(space=space, dim=DIM)
    ref.init_index(max_elements=ROWS, M=M, ef_construction=EF_CONSTRUCTION)
    ref.add_items(base, np.arange(ROWS), num_threads=1)
    ref.set_ef(EF)
    labels, _ = ref.knn_query(queries, k=K, num_threads=1)
    return np.asarray(labels, dtype=np.int64)


@pytest.mark.parametrize("data", ["gaussian", "clustered"])
def test_recall_matches_hnswlib_used_directly(data: str) -> None:
    if data == "gaussian":
        base, queries = gaussian(ROWS, DIM, seed=1), gaussian(NQ, DIM, seed=2)
    else:
        middle = centres(100, DIM, seed=3)
        base, queries = around(middle, ROWS, spread=SPREAD, seed=4), around(middle, NQ, spread=SPREAD, seed=5)
    start = time.monotonic()
    truth, _ = reference_topk(Metric.L2, queries, base, K)
    ours = recall(_ours(Metric.L2, base).search(queries, K, params=SearchParams(ef=EF)).rows, truth)
    direct = recall(_hnswlib_direct("l2", base, queries), truth)
    print(f"\n{data} L2: recall@{K} ours {ours:.4f}, hnswlib {direct:.4f} (ef={EF}, {time.monotonic() - start:.1f} s)")
    assert abs(ours - direct) <= 0.01


@pytest.mark.parametrize("metric", [Metric.L2, Metric.IP, Metric.COSINE], ids=lambda m: m.value)
def test_recall_is_high_on_clustered_data(metric: Metric) -> None:
    middle = centres(100, DIM, seed=6)
    base, queries = around(middle, ROWS, spread=SPREAD, seed=7), around(middle, NQ, spread=SPREAD, seed=8)
    allowed = np.random.default_rng(9).random(ROWS) < 0.5
    start = time.monotonic()
    index = _ours(metric, base)
    truth, _ = reference_topk(metric, queries, base, K)
    plain = recall(index.search(queries, K, params=SearchParams(ef=EF)).rows, truth)
    truth, _ = reference_topk(metric, queries, base, K, allowed=allowed)
    # One query at a time: a filtered batch of 200 would be searched exactly (options.py).
    assert not index.searches_exactly(int(allowed.sum()), K, nq=1)
    walked = [index.search(q[None, :], K, allowed=allowed, params=SearchParams(ef=EF)).rows for q in queries]
    filtered = recall(np.concatenate(walked), truth)
    print(
        f"\nclustered {metric.value}: recall@{K} {plain:.4f}, with half the rows allowed {filtered:.4f} "
        f"(ef={EF}, {time.monotonic() - start:.1f} s)"
    )
    assert plain >= 0.95
    assert filtered >= 0.95
