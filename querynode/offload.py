"""Where a read's CPU work runs: on the event loop when it is small, in a thread otherwise.

A thread hand-off (``asyncio.to_thread``) costs tens of microseconds plus a
wake-up of the loop and a GIL hand-over; a single-vector HNSW search costs
about as much. Searches are therefore costed in rough multiply-adds and run
inline under ``INLINE_COST``: an HNSW walk at nq <= 8 and ef <= 64, or exact
search over a few thousand rows at nq=1. Larger work goes to a thread, so the
loop keeps serving other requests and two searches can use both cores.

A long search is cut into slices of its queries (``run_sliced``), each costing
about ``SLICE_COST`` and run under its caller's lock on its own: a search never
holds a store's lock, nor a worker thread, much longer than one slice, so the
WAL's deletes and the reads queued behind it take turns with it instead of
waiting for all of it.

A read in a thread may itself use several cores: an unfiltered HNSW walk
splits its queries among hnswlib threads, which run without the GIL.
``CoreShare`` hands each such read the cores no other offloaded read holds.
A batch of queries alone on the node (a one-shard collection, one client)
then uses every core, while reads side by side (a request's two shards,
concurrent clients) get one each, as they did.
"""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractAsyncContextManager, contextmanager
from typing import TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from segcore.index.base import SearchParams, VectorIndex
from segcore.index.diskann_index import DiskannIndex
from segcore.index.faiss_index import FaissIndex
from segcore.index.spec import IndexKind
from segcore.segments.growing import QUERY_COLUMN

T = TypeVar("T")

INLINE_COST = 2_000_000  # multiply-adds; about 0.2 ms of numpy or hnswlib work
SLICE_COST = 100 * INLINE_COST  # about 20 ms: the longest a search holds a lock or a thread at once
_HNSW_DEFAULT_EF = 64
_HNSW_VISITS_PER_EF = 32  # distance computations per candidate in the walk (about 2 M)
# Exact search: each (query, row) pair also costs writing its distance and ranking it, about
# 50 multiply-adds' time whatever the dimension (measured: 5 ns a pair at dim 8).
_EXACT_PAIR_OVERHEAD = 48
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
    a filter of ``filter_size`` (``common.expr.asyncparse.filter_size``; 0: no filter)."""
    nq, dim = queries.shape  # (nq, dim), as every search takes them
    if index is not None and index.kind is IndexKind.HNSW:
        walk = nq * (params.ef or _HNSW_DEFAULT_EF) * _HNSW_VISITS_PER_EF * dim
    elif isinstance(index, FaissIndex | DiskannIndex):  # lists probed or a graph walked, by the kind's own estimate
        walk = index.search_work(nq, params)
    else:
        walk = nq * num_rows * (dim + _EXACT_PAIR_OVERHEAD)
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


def query_slices(nq: int, cost: int) -> list[slice]:
    """Consecutive slices of ``nq`` queries whose work (``cost`` in all) is about ``SLICE_COST`` each."""
    if nq <= 0:
        return [slice(0, 0)]
    per_query = max(1, cost // nq)
    size = max(1, SLICE_COST // per_query)
    return [slice(start, min(start + size, nq)) for start in range(0, nq, size)]


async def run_sliced(
    fn: Callable[[slice, int], T],
    *,
    nq: int,
    cost: int,
    guard: Callable[[], AbstractAsyncContextManager[object]],
    parallel: bool,
    share: CoreShare | None = None,
) -> tuple[list[slice], list[T]]:
    """``fn(queries, threads)`` for each of ``query_slices(nq, cost)`` in turn, each under a fresh
    ``guard()`` (the caller's lock) and sized by ``run_sized``; returns the slices and their answers.

    ``parallel``: a slice's queries may be split among threads (one per ``QUERIES_PER_THREAD``).
    The stores read must give the same answer at the read's timestamp whatever happens between
    slices (MVCC: what a writer does between two slices is later than the read).
    """
    slices = query_slices(nq, cost)
    out: list[T] = []
    for part in slices:
        queries = part.stop - part.start
        slice_cost = cost * queries // nq if nq else cost
        async with guard():
            out.append(
                await run_sized(
                    functools.partial(fn, part),
                    [slice_cost],
                    parallel_queries=queries if parallel else 0,
                    share=share,
                )
            )
    return slices, out


def concat_slices(tables: Sequence[pa.Table], slices: Sequence[slice]) -> pa.Table:
    """The hits of consecutive query slices as one table, ``query`` counted from the first slice."""
    if len(tables) == 1 and slices[0].start == 0:
        return tables[0]
    shifted = []
    for table, part in zip(tables, slices, strict=True):
        if part.start:
            i = table.schema.get_field_index(QUERY_COLUMN)
            moved = pc.add(table.column(i), pa.scalar(part.start, pa.int32()))
            table = table.set_column(i, table.schema.field(i), moved)
        shifted.append(table)
    return pa.concat_tables(shifted)
