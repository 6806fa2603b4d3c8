"""The bounds, in this process on the same vectors: hnswlib (the graph library Strata's query node uses)
and numpy brute force. No network and no service: the limit Strata's overhead is measured against."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any

import hnswlib
import numpy as np
import psutil
from compare_data import CompareSet
from compare_measure import LoopOptions, measure
from compare_servers import MIB, IndexOptions
from compare_targets import HnswlibTarget, NumpyTarget


def run_hnswlib(
    data: CompareSet, index: IndexOptions, loops: LoopOptions, seed: int, log: Callable[[str], None]
) -> dict[str, Any]:
    """One graph over every row with the servers' M and efConstruction, built and searched with every core."""
    me = psutil.Process()
    rss0 = me.memory_info().rss
    graph = hnswlib.Index(space="l2", dim=data.dim)
    graph.init_index(max_elements=data.rows, M=index.m, ef_construction=index.ef_construction, random_seed=seed)
    t0 = time.perf_counter()
    graph.add_items(data.vectors, np.arange(data.rows))
    build_s = time.perf_counter() - t0
    index_mib = (me.memory_info().rss - rss0) / MIB
    log(f"hnswlib built in {build_s:.1f}s")
    target = HnswlibTarget(graph, {f.expr: f.mask for f in data.filters}, threads=graph.num_threads)
    try:
        out = measure(target, data, loops, log)
    finally:
        del target, graph
        gc.collect()
    out["searchable_s"] = round(build_s, 2)
    out["threads"] = psutil.cpu_count()
    out["peak_rss_mib"] = {"index (in process)": round(index_mib, 1)}
    return out


def run_numpy(data: CompareSet, loops: LoopOptions, log: Callable[[str], None]) -> dict[str, Any]:
    """Exact search: recall is 1 by construction, so no ef sweep (ef means nothing here), and no
    concurrent clients (16 threads each running a 2-thread BLAS product on 2 cores measure the
    oversubscription: 50-70 QPS at 20,000 rows, a tenth of one thread's)."""
    out = measure(NumpyTarget(data), data, loops, log, sweep=False, concurrent=False)
    out.pop("ef")
    return out
