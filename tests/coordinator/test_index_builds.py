"""The coordinator's index builds: which segments it builds, where, one per node, retried with backoff.

Pure rules (``build_policy``) directly; the scheduler with fakes for the data
coordinator, the catalog, the query nodes and the builder, and a real object
store holding the saved index files.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import cast

import pytest

from common.errors import InvalidArgument, StrataError
from common.segment import SegmentLevel, SegmentMeta, SegmentState
from common.storage.layout import index_prefix
from common.storage.objectstore import ObjectStore
from coordinator.catalog import Catalog, CollectionMeta, CollectionState, IndexMeta
from coordinator.data.build_policy import Backoff, Build, IndexDef, assign, wanted_builds
from coordinator.data.datacoord import DataCoordinator
from coordinator.data.index_builds import IndexBuildScheduler
from coordinator.data.jobs import JobKind, JobRecord, JobState
from tests.coordinator.gcutil import SCHEMA, Clock

IVF = IndexDef(index_id=7, field_name="v", index_type="IVF_FLAT")


def _seg(sid: int, rows: int = 2000, **changes: object) -> SegmentMeta:
    seg = SegmentMeta(segment_id=sid, collection_id=1, partition_id=2, vchannel="v", state=SegmentState.FLUSHED,
                      rows=rows, manifest=f"m/{sid}")
    return replace(seg, **changes)  # type: ignore[arg-type]  # test data


def test_wanted_builds_are_flushed_l1_segments_that_need_one_and_have_none_saved() -> None:
    segments = [
        _seg(1),
        _seg(2, rows=1023),  # too small: needs no build
        _seg(3),  # saved already
        _seg(4),  # being compacted away
        _seg(5, level=SegmentLevel.L0),
        _seg(6, state=SegmentState.DROPPED),
        _seg(7, rows=1024),
    ]
    flat = IndexDef(index_id=8, field_name="w", index_type="flat")
    builds = wanted_builds(segments, [IVF, flat], saved={(3, 7)}, compacting={4})
    assert [b.key for b in builds] == [(1, 7), (7, 7)]


def test_assign_one_build_per_free_node_held_segments_to_their_worker_loaded_ones_wait() -> None:
    builds = [Build(segment=_seg(sid), index=IVF) for sid in (5, 1, 2, 3, 4)]
    chosen = assign(
        builds,
        nodes={10, 11, 12},
        busy={12},
        holders={(1, 3): 11, (1, 4): 12},  # 3 on node 11; 4 on node 12, which is busy
        loaded=lambda s: s.segment_id == 2,  # loaded partition, not placed yet: its worker builds it
    )
    # Oldest first: 1 takes the first free node; 3 goes to its holder; 5 finds no free node left.
    assert [(b.segment.segment_id, n) for b, n in chosen] == [(1, 10), (3, 11)]
    assert assign(builds, nodes=set(), busy=set(), holders={}, loaded=lambda s: False) == []


def test_backoff_doubles_up_to_the_cap_and_is_forgotten_on_success() -> None:
    backoff = Backoff(first=1.0, cap=5.0)
    key = (1, 7)
    assert backoff.ready(key, 0.0)
    assert [backoff.failed(key, 0.0) for _ in range(5)] == [1.0, 2.0, 4.0, 5.0, 5.0]
    assert not backoff.ready(key, 4.9) and backoff.ready(key, 5.0)
    backoff.succeeded(key)
    assert backoff.ready(key, 0.0) and backoff.failed(key, 0.0) == 1.0
    backoff.keep(set())
    assert backoff.ready(key, 0.0)


# -- the scheduler, with fakes ----------------------------------------------------------------------


@dataclass
class FakeData:
    segments: list[SegmentMeta]
    running_jobs: list[JobRecord] = field(default_factory=list)

    def flushed_segments(self) -> list[SegmentMeta]:
        return [s for s in self.segments if s.state == SegmentState.FLUSHED]

    def jobs(self) -> list[JobRecord]:
        return self.running_jobs


class FakeCatalog:
    def __init__(self, index_type: str = "IVF_FLAT") -> None:
        self.meta = CollectionMeta(collection_id=1, name="c", schema=SCHEMA, vchannels=("v",), consistency_level=0,
                                   state=CollectionState.CREATED)
        self.indexes = [IndexMeta(collection_id=1, field_name="v", index_name="v", index_id=7,
                                  params={"index_type": index_type, "metric_type": "L2"})]

    async def list_indexes(self, collection_id: int) -> list[IndexMeta]:
        return self.indexes if collection_id == 1 else []

    async def get_collection(self, collection_id: int) -> CollectionMeta | None:
        return self.meta if collection_id == 1 else None


@dataclass
class FakeNodes:
    addresses: dict[int, str] = field(default_factory=dict)
    held: dict[tuple[int, int], int] = field(default_factory=dict)
    loaded: set[int] = field(default_factory=set)  # loaded partitions

    def nodes(self) -> dict[int, str]:
        return dict(self.addresses)

    def holders(self) -> dict[tuple[int, int], int]:
        return dict(self.held)

    def is_partition_loaded(self, collection_id: int, partition_id: int) -> bool:
        return partition_id in self.loaded


class FakeBuilder:
    """Saves the index file as a node would, once ``release`` lets a build finish; fails while ``failing``
    (with ``error``: by default one that may pass, as a node short of memory)."""

    def __init__(self, storage: ObjectStore) -> None:
        self.storage = storage
        self.calls: list[tuple[str, int]] = []
        self.release = asyncio.Event()
        self.failing = False
        self.error: StrataError = StrataError("no memory for the build")

    async def build(self, address: str, *, collection: CollectionMeta, build: Build, params: dict[str, str]) -> bool:
        self.calls.append((address, build.segment.segment_id))
        assert params["index_type"] == "IVF_FLAT"
        await self.release.wait()
        if self.failing:
            raise self.error
        self.storage.write_bytes(f"{index_prefix(1, build.segment.segment_id)}/{build.index.index_id}/meta.json", b"{}")
        return True


def _scheduler(tmp_path: Path, data: FakeData, nodes: FakeNodes, catalog: FakeCatalog | None = None,
               clock: Clock | None = None) -> tuple[IndexBuildScheduler, FakeBuilder]:
    storage = ObjectStore.from_uri((tmp_path / "s").as_uri())
    builder = FakeBuilder(storage)
    scheduler = IndexBuildScheduler(
        cast(DataCoordinator, data), cast(Catalog, catalog or FakeCatalog()), storage, nodes, builder,
        clock=clock or Clock(),
    )
    return scheduler, builder


async def _settle(scheduler: IndexBuildScheduler) -> None:
    """Let the builds started run to their end."""
    for _ in range(20):
        await asyncio.sleep(0)


async def test_builds_each_segment_once_one_per_node_and_waits_without_nodes(tmp_path: Path) -> None:
    data = FakeData([_seg(1), _seg(2), _seg(3, rows=10)])
    nodes = FakeNodes()
    scheduler, builder = _scheduler(tmp_path, data, nodes)
    assert await scheduler.round() == []  # no query node: the segments wait, nothing fails
    nodes.addresses = {10: "node-a"}
    started = await scheduler.round()
    assert [(b.segment.segment_id, n) for b, n in started] == [(1, 10)]
    assert await scheduler.round() == []  # the node is busy with segment 1
    builder.release.set()
    await _settle(scheduler)
    assert [(b.segment.segment_id, n) for b, n in await scheduler.round()] == [(2, 10)]
    await _settle(scheduler)
    assert await scheduler.round() == []  # both saved; segment 3 is too small to need one
    assert builder.calls == [("node-a", 1), ("node-a", 2)]
    await scheduler.stop()


async def test_a_saved_index_a_loaded_partition_a_compaction_input_and_flat_are_not_built(tmp_path: Path) -> None:
    data = FakeData([_seg(1), _seg(2)], [JobRecord(job_id=5, kind=JobKind.MIX, collection_id=1, state=JobState.RUNNING,
                                                        inputs=(2,))])
    nodes = FakeNodes(addresses={10: "node-a"})
    scheduler, builder = _scheduler(tmp_path, data, nodes)
    builder.storage.write_bytes(f"{index_prefix(1, 1)}/7/meta.json", b"{}")
    data.segments.append(_seg(3, partition_id=4))  # loaded, not placed yet: the worker that loads it builds it
    nodes.loaded = {4}
    assert await scheduler.round() == []
    nodes.held = {(1, 3): 10}  # now held: its worker gets the build (it may have built it already)
    assert [(b.segment.segment_id, n) for b, n in await scheduler.round()] == [(3, 10)]
    builder.release.set()
    await _settle(scheduler)
    flat_scheduler, flat_builder = _scheduler(tmp_path / "flat", FakeData([_seg(1)]),
                                              FakeNodes(addresses={10: "node-a"}), FakeCatalog("FLAT"))
    assert await flat_scheduler.round() == []
    await scheduler.stop()


async def test_a_failed_build_is_retried_after_a_growing_backoff(tmp_path: Path) -> None:
    clock = Clock()
    data = FakeData([_seg(1)])
    scheduler, builder = _scheduler(tmp_path, data, FakeNodes(addresses={10: "node-a"}), clock=clock)
    builder.failing = True
    builder.release.set()
    assert len(await scheduler.round()) == 1
    await _settle(scheduler)
    assert await scheduler.round() == []  # waits 1 s
    clock.now += 1.0
    assert len(await scheduler.round()) == 1
    await _settle(scheduler)
    clock.now += 1.0
    assert await scheduler.round() == []  # the second failure in a row waits 2 s
    clock.now += 1.0
    builder.failing = False
    assert len(await scheduler.round()) == 1
    await _settle(scheduler)
    assert await scheduler.round() == []  # saved
    assert len(builder.calls) == 3
    await scheduler.stop()


async def test_a_build_the_node_refuses_for_good_is_not_retried_and_is_reported_until_the_index_goes(
    tmp_path: Path,
) -> None:
    clock = Clock()
    data = FakeData([_seg(1), _seg(2)])
    catalog = FakeCatalog()
    scheduler, builder = _scheduler(tmp_path, data, FakeNodes(addresses={10: "node-a"}), catalog, clock=clock)
    builder.failing, builder.error = True, InvalidArgument("invalid index params: M must be in [2, 2048], got 0")
    builder.release.set()
    for _ in range(2):
        assert len(await scheduler.round()) == 1
        await _settle(scheduler)
    assert scheduler.failures(1) == {(1, 7): "invalid index params: M must be in [2, 2048], got 0",
                                     (2, 7): "invalid index params: M must be in [2, 2048], got 0"}
    assert scheduler.failures(2) == {}
    clock.now += 600.0
    builder.failing = False
    assert await scheduler.round() == []  # not tried again, however long it waits
    data.segments = [_seg(2)]  # segment 1 dropped (compacted away): its failure goes with it
    await scheduler.round()
    assert list(scheduler.failures(1)) == [(2, 7)]
    catalog.indexes = []  # the index dropped: nothing of it is remembered
    await scheduler.round()
    assert scheduler.failures(1) == {}
    assert builder.calls == [("node-a", 1), ("node-a", 2)]
    await scheduler.stop()


@pytest.mark.timeout(10)
async def test_the_loop_builds_without_being_asked_and_stops(tmp_path: Path) -> None:
    data = FakeData([_seg(1), _seg(2)])
    scheduler, builder = _scheduler(tmp_path, data, FakeNodes(addresses={10: "node-a", 11: "node-b"}))
    builder.release.set()
    scheduler.start()
    while len(builder.calls) < 2:
        await asyncio.sleep(0.01)
    await scheduler.stop()
    assert sorted(builder.calls) == [("node-a", 1), ("node-b", 2)]
