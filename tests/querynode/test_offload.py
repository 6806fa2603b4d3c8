"""Where a read's work runs, and how many of the node's cores a read in a thread may use."""

from __future__ import annotations

import asyncio
import threading

import numpy as np
import pyarrow as pa
import pytest

from querynode.offload import (
    INLINE_COST,
    QUERIES_PER_THREAD,
    SLICE_COST,
    CoreShare,
    concat_slices,
    query_slices,
    run_sized,
    run_sliced,
    search_cost,
)
from segcore.index.base import SearchParams
from segcore.index.factory import IndexSpec, build_index


def test_a_read_alone_gets_the_cores_its_queries_can_use() -> None:
    share = CoreShare(4)
    with share.take(3) as granted:
        assert granted == 3
        assert share.held == 3
    assert share.held == 0
    with share.take(10) as granted:
        assert granted == 4  # no more than the node has


def test_reads_side_by_side_split_the_cores_and_each_gets_at_least_one() -> None:
    share = CoreShare(2)
    with share.take(2) as first:
        with share.take(2) as second, share.take(0) as third:
            assert (first, second, third) == (2, 1, 1)
            assert share.held == 4
        assert share.held == 2
    assert share.held == 0


def test_cores_are_given_back_when_the_read_fails() -> None:
    share = CoreShare(2)
    with pytest.raises(RuntimeError), share.take(2):
        raise RuntimeError("the search failed")
    assert share.held == 0


def test_a_node_has_at_least_one_core() -> None:
    with pytest.raises(ValueError, match="at least one core"):
        CoreShare(0)
    assert CoreShare().cores >= 1  # this process's CPU affinity


async def test_small_work_runs_inline_on_one_thread() -> None:
    seen: list[tuple[int, threading.Thread]] = []
    share = CoreShare(2)

    def work(threads: int) -> str:
        seen.append((threads, threading.current_thread()))
        return "done"

    out = await run_sized(work, [INLINE_COST], parallel_queries=1000, share=share)
    assert out == "done"
    assert seen == [(1, threading.current_thread())]


async def test_large_work_runs_in_a_thread_holding_its_share_of_the_cores() -> None:
    share = CoreShare(2)
    seen: list[tuple[int, int, bool]] = []

    def work(threads: int) -> int:
        seen.append((threads, share.held, threading.current_thread() is threading.main_thread()))
        return threads

    assert await run_sized(work, [INLINE_COST + 1], parallel_queries=100, share=share) == 2
    assert seen == [(2, 2, False)]
    assert share.held == 0
    # Too few queries to split: one thread, still holding its core.
    assert await run_sized(work, [INLINE_COST + 1], parallel_queries=2 * QUERIES_PER_THREAD - 1, share=share) == 1
    assert seen[-1] == (1, 1, False)
    # No share: one thread.
    assert await run_sized(work, [INLINE_COST + 1], parallel_queries=100) == 1


async def test_a_read_started_while_another_holds_the_cores_gets_one() -> None:
    share = CoreShare(2)
    started, release = threading.Event(), threading.Event()

    def long(threads: int) -> int:
        started.set()
        release.wait(10)
        return threads

    first = asyncio.ensure_future(run_sized(long, [INLINE_COST + 1], parallel_queries=100, share=share))
    await asyncio.to_thread(started.wait, 10)
    second = await run_sized(lambda t: t, [INLINE_COST + 1], parallel_queries=100, share=share)
    release.set()
    assert (await first, second) == (2, 1)
    assert share.held == 0


def test_queries_are_sliced_by_cost_and_every_query_is_in_exactly_one_slice() -> None:
    assert query_slices(10, 10 * SLICE_COST) == [slice(i, i + 1) for i in range(10)]
    assert query_slices(10, SLICE_COST) == [slice(0, 10)]
    slices = query_slices(1000, 7 * SLICE_COST)
    assert len(slices) in (7, 8)
    assert [q for s in slices for q in range(s.start, s.stop)] == list(range(1000))
    assert query_slices(0, 0) == [slice(0, 0)]


async def test_a_sliced_search_lets_a_writer_in_between_its_slices() -> None:
    """The fairness the slices are for: a lock taken per slice, not for the whole search."""
    lock = asyncio.Lock()
    events: list[str] = []
    first_slice_done = asyncio.Event()

    def work(part: slice, threads: int) -> int:
        events.append(f"slice {part.start}")
        return part.stop - part.start

    async def search() -> tuple[list[slice], list[int]]:
        return await run_sliced(work, nq=4, cost=4 * SLICE_COST, guard=lambda: lock, parallel=False)

    async def writer() -> None:
        await first_slice_done.wait()
        async with lock:
            events.append("write")

    async def watch() -> None:
        while not events:
            await asyncio.sleep(0)
        first_slice_done.set()

    (slices, answers), _, _ = await asyncio.gather(search(), writer(), watch())
    assert answers == [1, 1, 1, 1]
    assert "write" in events[1:-1], events  # between two slices, not after the last


def test_slices_are_joined_with_their_queries_numbered_from_the_first() -> None:
    def hits(queries: list[int]) -> pa.Table:
        return pa.table({"query": pa.array(queries, pa.int32()), "pk": pa.array([7] * len(queries), pa.int64())})

    joined = concat_slices([hits([0, 0, 1]), hits([0, 1])], [slice(0, 2), slice(2, 4)])
    assert joined.column("query").to_pylist() == [0, 0, 1, 2, 3]
    assert joined.schema.field("query").type == pa.int32()
    assert concat_slices([hits([0])], [slice(0, 1)]).column("query").to_pylist() == [0]


def test_a_faiss_index_is_costed_by_the_lists_it_probes_or_the_graph_it_walks() -> None:
    vectors = np.random.default_rng(1).standard_normal((20_000, 16)).astype(np.float32)
    queries = vectors[:10]
    exact = search_cost(len(vectors), None, queries, SearchParams(), filter_size=0)
    ivf = build_index(IndexSpec(index_type="IVF_FLAT", metric="L2", params={"nlist": 256}), vectors)
    probed = search_cost(len(vectors), ivf, queries, SearchParams(nprobe=8), filter_size=0)
    # 256 centroids plus 8 of 256 lists of ~78 rows, instead of 20k rows.
    assert probed == 10 * (256 + 8 * 20_000 // 256) * 16
    assert probed < exact / 20
    assert search_cost(len(vectors), ivf, queries, SearchParams(nprobe=256), filter_size=0) > 8 * probed
    graph = build_index(IndexSpec(index_type="HNSW_SQ", metric="L2", params={"M": 8, "efConstruction": 16}), vectors)
    walked = search_cost(len(vectors), graph, queries, SearchParams(ef=32), filter_size=0)
    assert walked == 10 * 32 * 32 * 16
