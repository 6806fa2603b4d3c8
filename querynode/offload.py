"""Where a read's CPU work runs: on the event loop when it is small, in a thread otherwise.

A thread hand-off (``asyncio.to_thread``) costs tens of microseconds plus a
wake-up of the loop and a GIL hand-over; a single-vector HNSW search costs
about as much. Searches are therefore costed in rough multiply-adds and run
inline under ``INLINE_COST``: an HNSW walk at nq <= 8 and ef <= 64, or exact
search over a few thousand rows at nq=1. Larger work goes to a thread, so the
loop keeps serving other requests and two searches can use both cores.

A read in a thread may itself use several cores: an unfiltered HNSW walk
splits its queries among hnswlib threads, which run without the GIL.
``CoreShare`` hands each such read the cores no other offloaded read holds.
A batch of queries alone on the node (a one-shard collection, one client)
then uses every core, while reads side by side (a request's two shards,
concurrent clients) get one each, as they did.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import numpy as np

from querynode.index.base import SearchParams, VectorIndex
from querynode.index.spec import IndexKind

T = TypeVar("T")

INLINE_COST = 2_000_000  # multiply-adds; about 0.2 ms of numpy or hnswlib work
_HNSW_DEFAULT_EF = 64
_HNSW_VISITS_PER_EF = 32  # distance computations per candidate in the walk (about 2 M)
_FILTER_COST_PER_ROW = 16  # evaluating a filter expression over a row's column values
# A filter's constants are converted to Arrow once per segment (an `in` list's value set): about
# 50 ns each. A filter is sized by its characters plus its list parameters' elements.
_FILTER_COST_PER_CONSTANT = 500
#: Queries per hnswlib thread at least: starting a thread costs about one query's walk.
QUERIES_PER_THREAD = 8


def node_cores() -> int:
    """The cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


class CoreShare:
    """The node's cores, shared by the reads running in worker threads (event loop only)."""

    def __init__(self, cores: int | None = None) -> None:
        self.cores = node_cores() if cores is None else cores
        if self.cores < 1:
            raise ValueError(f"a node has at least one core, got {self.cores}")
        self.held = 0

    @contextmanager
    def take(self, want: int) -> Iterator[int]:
        """Up to ``want`` of the cores no other read holds, at least one, held until the block ends."""
        granted = max(1, min(want, self.cores - self.held))
        self.held += granted
        try:
            yield granted
        finally:
            self.held -= granted


def search_cost(
    num_rows: int, index: VectorIndex | None, queries: np.ndarray, params: SearchParams, *, filter_size: int
) -> int:
    """Rough multiply-adds of searching ``num_rows`` rows (exact when ``index`` is None or FLAT) with
    a filter of ``filter_size`` (``services.expr.asyncparse.filter_size``; 0: no filter)."""
    nq, dim = queries.shape  # (nq, dim), as every search takes them
    if index is not None and index.kind is IndexKind.HNSW:
        walk = nq * (params.ef or _HNSW_DEFAULT_EF) * _HNSW_VISITS_PER_EF * dim
    else:
        walk = nq * num_rows * dim
    if not filter_size:
        return walk
    return walk + num_rows * _FILTER_COST_PER_ROW + filter_size * _FILTER_COST_PER_CONSTANT


async def run_sized(
    fn: Callable[[int], T], costs: Iterable[int], *, parallel_queries: int = 0, share: CoreShare | None = None
) -> T:
    """``fn(threads)``: inline on one thread when the summed ``costs`` are small, else in a worker
    thread. There it holds the cores ``share`` grants: one per ``QUERIES_PER_THREAD`` of the
    ``parallel_queries`` it can split among threads, at least one (one thread without a share)."""
    if sum(costs) <= INLINE_COST:
        return fn(1)
    if share is None:
        return await asyncio.to_thread(fn, 1)
    with share.take(parallel_queries // QUERIES_PER_THREAD) as threads:
        return await asyncio.to_thread(fn, threads)
