"""Where a read's CPU work runs: on the event loop when it is small, in a thread otherwise.

A thread hand-off (``asyncio.to_thread``) costs tens of microseconds plus a
wake-up of the loop and a GIL hand-over; a single-vector HNSW search costs
about as much. Searches are therefore costed in rough multiply-adds and run
inline under ``INLINE_COST``: an HNSW walk at nq <= 8 and ef <= 64, or exact
search over a few thousand rows at nq=1. Larger work goes to a thread, so the
loop keeps serving other requests and two searches can use both cores.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import TypeVar

import numpy as np

from querynode.index.base import SearchParams, VectorIndex
from querynode.index.spec import IndexKind

T = TypeVar("T")

INLINE_COST = 2_000_000  # multiply-adds; about 0.2 ms of numpy or hnswlib work
_HNSW_DEFAULT_EF = 64
_HNSW_VISITS_PER_EF = 32  # distance computations per candidate in the walk (about 2 M)
_FILTER_COST_PER_ROW = 16  # evaluating a filter expression over a row's column values


def search_cost(
    num_rows: int, index: VectorIndex | None, queries: np.ndarray, params: SearchParams, *, filtered: bool
) -> int:
    """Rough multiply-adds of searching ``num_rows`` rows (exact when ``index`` is None or FLAT)."""
    nq, dim = queries.shape  # (nq, dim), as every search takes them
    if index is not None and index.kind is IndexKind.HNSW:
        walk = nq * (params.ef or _HNSW_DEFAULT_EF) * _HNSW_VISITS_PER_EF * dim
    else:
        walk = nq * num_rows * dim
    return walk + (num_rows * _FILTER_COST_PER_ROW if filtered else 0)


async def run_sized(fn: Callable[[], T], costs: Iterable[int]) -> T:
    """``fn()`` inline when the summed ``costs`` are small, else in a worker thread."""
    if sum(costs) <= INLINE_COST:
        return fn()
    return await asyncio.to_thread(fn)
