"""Versioned distribution: pinned snapshots keep what they promised until released."""

from __future__ import annotations

import asyncio

import numpy as np
import pyarrow as pa
import pytest

from querynode.delegator.cutlog import CutLog
from querynode.delegator.distribution import Distribution, Placement

A, B = Placement(1, "a:1"), Placement(2, "b:2")
P1, P2 = 101, 102  # partitions


async def test_a_release_waits_for_reads_pinned_before_it() -> None:
    dist = Distribution()
    dist.update(add={10: A, 11: B})
    released = asyncio.Event()
    with dist.pinned() as snap:
        newer = dist.update(remove=[10])
        assert 10 in snap.sealed and 10 not in dist.current.sealed  # the pinned view is unchanged

        async def release() -> None:
            await dist.drained(newer.version)
            released.set()

        task = asyncio.create_task(release())
        await asyncio.sleep(0.05)
        assert not released.is_set()
    await asyncio.wait_for(task, 1)
    assert released.is_set()


async def test_reads_pinned_after_the_change_do_not_hold_it_up() -> None:
    dist = Distribution()
    dist.update(add={10: A})
    newer = dist.update(remove=[10])
    with dist.pinned():
        await asyncio.wait_for(dist.drained(newer.version), 1)


def test_by_worker_groups_segments() -> None:
    dist = Distribution()
    snap = dist.update(add={10: A, 12: A, 11: B})
    assert snap.by_worker() == {A: [10, 12], B: [11]}


def test_cut_log_gives_a_segment_deletes_and_other_segments_versions() -> None:
    log = CutLog(pa.int64())
    log.add_versions(7, P1, pa.array([1, 2], pa.int64()), np.array([10, 10], dtype=np.uint64))
    log.add_versions(8, P1, pa.array([1], pa.int64()), np.array([20], dtype=np.uint64))
    log.add_deletes(pa.array([2, 3], pa.int64()), np.array([30, 30], dtype=np.uint64))
    everything = lambda pks: np.ones(len(pks), dtype=bool)  # noqa: E731
    pks, ts = log.cuts_for(7, P1, everything)
    assert sorted(zip(pks.to_pylist(), ts.tolist(), strict=True)) == [(1, 20), (2, 30), (3, 30)]
    mark = log.mark()
    log.add_deletes(pa.array([9], pa.int64()), np.array([40], dtype=np.uint64))
    pks, ts = log.cuts_for(7, P1, everything, since=mark)
    assert pks.to_pylist() == [9]
    only_ones = lambda pks: np.asarray(pks.to_numpy()) == 1  # noqa: E731
    assert log.cuts_for(7, P1, only_ones)[0].to_pylist() == [1]
    log.set_versions(8, P1, pa.array([5], pa.int64()), np.array([50], dtype=np.uint64))
    pks, ts = log.cuts_for(7, P1, everything)
    assert set(zip(pks.to_pylist(), ts.tolist(), strict=True)) == {(5, 50), (2, 30), (3, 30), (9, 40)}


def test_cut_log_keeps_partitions_apart() -> None:
    # Milvus: a delete naming a partition removes the key's rows there only, and rows of one
    # key in two partitions are two rows (neither supersedes the other).
    log = CutLog(pa.int64())
    log.add_versions(7, P1, pa.array([1], pa.int64()), np.array([10], dtype=np.uint64))
    log.add_versions(8, P2, pa.array([1], pa.int64()), np.array([20], dtype=np.uint64))
    log.add_deletes(pa.array([2], pa.int64()), np.array([30], dtype=np.uint64), partition=P2)
    log.add_deletes(pa.array([3], pa.int64()), np.array([40], dtype=np.uint64))  # every partition
    everything = lambda pks: np.ones(len(pks), dtype=bool)  # noqa: E731
    assert log.cuts_for(9, P1, everything)[0].to_pylist() == [1, 3]  # segment 7's version, the global delete
    assert log.cuts_for(9, P2, everything)[0].to_pylist() == [1, 2, 3]


@pytest.mark.parametrize("n", [0, 1])
def test_an_empty_cut_log(n: int) -> None:
    log = CutLog(pa.int64())
    if n:
        log.add_versions(7, P1, pa.array([1], pa.int64()), np.array([5], dtype=np.uint64))
    pks, ts = log.cuts_for(7, P1, lambda p: np.ones(len(p), dtype=bool))
    assert len(pks) == 0 and len(ts) == 0
