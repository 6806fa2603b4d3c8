"""The search benchmark's bounds, in this process: hnswlib on the same data and parameters, numpy brute force."""

from __future__ import annotations

import time
from typing import Any

import hnswlib
import numpy as np
import psutil
from search_data import Dataset, recall, sqnorms, time_requests, topk_l2

MIB = 1 << 20


def run_hnswlib(
    data: Dataset, truth: np.ndarray, *, m: int, ef_construction: int, ef: int, seed: int
) -> dict[str, Any]:
    """Build one graph over every row (hnswlib's default threads: all cores), search at ``ef``."""
    rows, dim = data.vectors.shape
    k = truth.shape[1]
    me = psutil.Process()
    rss0 = me.memory_info().rss
    index = hnswlib.Index(space="l2", dim=dim)
    index.init_index(max_elements=rows, M=m, ef_construction=ef_construction, random_seed=seed)
    t0 = time.perf_counter()
    index.add_items(data.vectors, np.arange(rows))
    build_s = time.perf_counter() - t0
    rss1 = me.memory_info().rss
    index.set_ef(ef)

    def call(q: np.ndarray) -> np.ndarray:
        return index.knn_query(q, k=k)[0]

    nq1, found = time_requests(data.queries, 1, call)
    nq100, found100 = time_requests(data.queries, 100, call)
    labels = np.concatenate(found)
    out = {
        "build_s": round(build_s, 2),
        "threads": index.num_threads,
        "index_rss_mib": round((rss1 - rss0) / MIB, 1),
        "nq1": nq1.summary(),
        "nq100": nq100.summary(),
        "recall": round(recall(labels, truth), 4),
        "recall_nq100": round(recall(np.concatenate(found100), truth), 4),
    }
    return out


def run_numpy(data: Dataset, truth: np.ndarray) -> dict[str, Any]:
    """Exact top-k by one float32 matrix product per request (``||x||^2 - 2 q.x``), norms precomputed."""
    k = truth.shape[1]
    norms = sqnorms(data.vectors)

    def call(q: np.ndarray) -> np.ndarray:
        return topk_l2(data.vectors, norms, q, k)

    nq1, _ = time_requests(data.queries, 1, call)
    nq100, found100 = time_requests(data.queries, 100, call)
    return {
        "nq1": nq1.summary(),
        "nq100": nq100.summary(),
        "recall": round(recall(np.concatenate(found100), truth), 4),
    }
