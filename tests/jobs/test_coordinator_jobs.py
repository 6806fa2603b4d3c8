"""The coordinator's side of offline jobs against a real etcd and a real local SparkSession.

The runner here runs the job's ``main.run`` in the test's SparkSession (the
same code ``spark-submit`` runs, minus the JVM start), so these tests cover
planning, the hidden outputs, the one-transaction commit, conflicts, failures
and a coordinator restart, each on real segment files.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from common.config import JobsConfig
from common.etcd.metastore import MetaStore
from common.position import Position
from common.segment import SegmentLevel, SegmentMeta, SegmentState
from common.storage.objectstore import ObjectStore
from common.storage.segment_io import SegmentReader
from common.tsoutil import TIMESTAMP_RANGE_MAX_AGE_S
from coordinator.catalog import Catalog, CollectionMeta, CollectionState
from coordinator.data.compaction import CompactionManager
from coordinator.data.datacoord import DataCoordinator
from coordinator.data.importer import ImportManager
from coordinator.data.jobs import JobKind, JobRecord, JobState
from coordinator.data.offline import OfflineJobs
from coordinator.idalloc import IDAllocator
from coordinator.tso import TimestampOracle
from jobs.main import run as run_job
from jobs.plans import JobResult
from tests.jobs.util import COLLECTION, PARTITION, VCHANNEL, rows, schema, vectors, write_l0, write_l1

pytestmark = pytest.mark.timeout(300)


class SessionRunner:
    """Runs a job spec in the test's SparkSession; ``before_result`` sees the coordinator mid-job."""

    def __init__(self, spark: Any) -> None:
        self.spark = spark
        self.before_result: Callable[[], Any] | None = None
        self.runs = 0

    async def run(self, spec_json: str, *, name: str, on_progress: Callable[[float], None] | None = None) -> JobResult:
        self.runs += 1
        result = JobResult.from_json(await asyncio.to_thread(run_job, self.spark, spec_json))
        if self.before_result is not None:
            outcome = self.before_result()
            if asyncio.iscoroutine(outcome):
                await outcome
        return result


class Clock:
    def __init__(self) -> None:
        self.now = 10_000.0

    def __call__(self) -> float:
        return self.now


class World:
    """A collection with segments on a local store, the coordinator's components on a real etcd."""

    def __init__(self, store: MetaStore, tmp_path: Path, spark: Any) -> None:
        self.store = store
        self.uri = (tmp_path / "storage").as_uri()
        self.files = ObjectStore.from_uri(self.uri)
        self.runner = SessionRunner(spark)
        self.clock = Clock()
        self.config = JobsConfig(compaction_interval_seconds=0, compaction_min_age_seconds=0, compaction_min_segments=2)
        self.loading = False  # what the query coordinator would say: collections still loading

    async def start(self) -> None:
        self.tso = TimestampOracle(self.store)
        await self.tso.start()
        self.ids = IDAllocator(self.store)
        await self.ids.start()
        self.catalog = Catalog(self.store)
        self.data = DataCoordinator(self.store, self.catalog, self.tso, None, clock=self.clock)  # type: ignore[arg-type]
        await self.data.start()
        self.jobs = OfflineJobs(self.store, self.data, self.catalog, self.ids, self.tso, storage_uri=self.uri,
                                config=self.config, runner=self.runner, loading=lambda: self.loading)
        await self.jobs.start()

    async def stop(self) -> None:
        await self.jobs.stop()

    @property
    def compaction(self) -> CompactionManager:
        return self.jobs.compaction

    @property
    def imports(self) -> ImportManager:
        return self.jobs.imports

    async def collection(self) -> CollectionMeta:
        meta = CollectionMeta(
            collection_id=COLLECTION, name="c", schema=schema(), vchannels=(VCHANNEL,), consistency_level=0,
            state=CollectionState.CREATED, default_partition_id=PARTITION,
        )
        await self.catalog.save_collection(meta)
        return meta

    async def flushed_l1(self, segment_id: int, ids: range, ts: int, partition: int = PARTITION) -> SegmentMeta:
        ref = write_l1(self.files, segment_id, [rows(ids, ts)], partition=partition)
        meta = SegmentMeta(segment_id=segment_id, collection_id=COLLECTION, partition_id=partition, vchannel=VCHANNEL,
                           state=SegmentState.GROWING, rows=ref.rows, manifest=ref.manifest,
                           start_position=Position(b"\x01", ts - 1), position=Position(b"\x02", ts))
        await self.data.save_binlog_paths(meta, flushed=True)
        return meta

    async def flushed_l0(self, segment_id: int, pks: list[int], ts: int) -> SegmentMeta:
        ref = write_l0(self.files, segment_id, pks, ts)
        meta = SegmentMeta(segment_id=segment_id, collection_id=COLLECTION, partition_id=-1, vchannel=VCHANNEL,
                           state=SegmentState.GROWING, level=SegmentLevel.L0, manifest=ref.manifest,
                           start_position=Position(b"\x03", ts - 1), position=Position(b"\x04", ts))
        await self.data.save_binlog_paths(meta, flushed=True)
        return meta

    def visible_ids(self) -> list[int]:
        """Every row readers would load now: visible L1 segments' rows minus their own and L0 deletes."""
        reader = SegmentReader(self.files, schema())
        segs = self.data.flushed_segments(collection_id=COLLECTION)
        deletes: dict[int, int] = {}
        for s in segs:
            d = reader.read_deltas(reader.read_manifest(s.manifest))
            for pk, ts in zip(d.column("pk").to_pylist(), d.column("ts").to_pylist(), strict=True):
                deletes[pk] = max(deletes.get(pk, 0), ts)
        out = []
        for s in segs:
            if s.level != SegmentLevel.L1:
                continue
            t = reader.read_inserts(reader.read_manifest(s.manifest), columns=["id", "_ts"])
            for pk, ts in zip(t.column("id").to_pylist(), t.column("_ts").to_pylist(), strict=True):
                if deletes.get(pk, 0) <= ts:
                    out.append(pk)
        return sorted(out)


@pytest.fixture()
async def world(etcd_endpoint: str, tmp_path: Path, spark: Any) -> AsyncIterator[World]:
    store = await MetaStore.connect(etcd_endpoint, f"jobs-{uuid.uuid4().hex}")
    w = World(store, tmp_path, spark)
    await w.start()
    try:
        yield w
    finally:
        await w.stop()
        await store.close()


async def _finished(w: World, request_id: int, timeout: float = 120) -> list[JobRecord]:
    deadline = time.monotonic() + timeout
    while True:
        req, jobs = w.compaction.state(request_id)
        if req.phase == "DONE":
            return jobs
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)


async def test_a_manual_compaction_switches_from_inputs_to_outputs_in_one_commit(world: World) -> None:
    meta = await world.collection()
    a = await world.flushed_l1(1, range(0, 100), 100)
    b = await world.flushed_l1(2, range(100, 200), 200)
    l0 = await world.flushed_l0(3, list(range(0, 200, 4)), 300)
    expected = world.visible_ids()
    assert len(expected) == 150
    seen_mid_job: list[set[int]] = []
    world.runner.before_result = lambda: seen_mid_job.append(
        {s.segment_id for s in world.data.flushed_segments(collection_id=COLLECTION)}
    )
    req = await world.compaction.request(meta)
    jobs = await _finished(world, req.request_id)
    # One plan folded the deletes and merged both segments: one Spark job.
    assert [(j.kind, j.state) for j in jobs] == [(JobKind.MIX, JobState.COMMITTED)] and world.runner.runs == 1
    assert seen_mid_job == [{1, 2, 3}]  # while it ran, readers had the inputs only
    [job] = jobs
    assert set(job.inputs) == {1, 2} and job.l0 == (3,) and job.revealed
    live = world.data.flushed_segments(collection_id=COLLECTION)
    assert [s.segment_id for s in live] == list(job.outputs) and all(s.job_id == 0 for s in live)
    for s in (a, b, l0):
        gone = world.data.segment(s.segment_id)
        assert gone is not None and gone.state == SegmentState.DROPPED and gone.compacted
    assert world.visible_ids() == expected
    stored = SegmentReader(world.files, schema()).read_inserts(
        SegmentReader(world.files, schema()).read_manifest(live[0].manifest))
    assert sorted(stored.column("id").to_pylist()) == expected  # the deleted rows are not in the file
    assert live[0].rows == 150 and live[0].position is not None and live[0].position.timetick == 200


async def test_a_compaction_waits_while_collections_load(world: World) -> None:
    """After a restart the loads come first: no Spark job runs beside them."""
    meta = await world.collection()
    await world.flushed_l1(1, range(0, 100), 100)
    await world.flushed_l1(2, range(100, 200), 200)
    world.loading = True
    req = await world.compaction.request(meta)
    await asyncio.sleep(2.5)  # LOAD_POLL_SECONDS twice over
    assert world.runner.runs == 0 and world.compaction.state(req.request_id)[0].phase != "DONE"
    world.loading = False
    jobs = await _finished(world, req.request_id)
    assert [(j.kind, j.state) for j in jobs] == [(JobKind.MIX, JobState.COMMITTED)] and world.runner.runs == 1


async def test_an_input_that_changes_while_the_job_runs_fails_the_plan_and_hides_its_outputs(world: World) -> None:
    meta = await world.collection()
    await world.flushed_l1(1, range(0, 50), 100)
    await world.flushed_l1(2, range(50, 100), 200)

    async def drop_partition() -> None:
        await world.data.partition_dropped(COLLECTION, PARTITION)

    world.runner.before_result = drop_partition
    req = await world.compaction.request(meta)
    [job] = await _finished(world, req.request_id)
    assert job.state == JobState.FAILED and "no longer a flushed segment" in job.error
    assert world.data.flushed_segments(collection_id=COLLECTION) == []
    # The outputs the job wrote are recorded DROPPED (their files go with garbage collection).
    hidden = [s for s in world.data.segments(collection_id=COLLECTION) if s.job_id == job.job_id]
    assert all(s.state == SegmentState.DROPPED for s in hidden)


async def test_l0_deletes_fold_into_targets_when_a_vchannel_spans_partitions(world: World) -> None:
    meta = await world.collection()
    await world.flushed_l1(1, range(0, 60), 100)
    await world.flushed_l1(2, range(60, 120), 100, partition=99)  # two partitions: L0 plan first
    await world.flushed_l0(3, [1, 2, 61], 200)
    await world.flushed_l0(4, [5], 50)  # older than the rows: deletes nothing
    expected = world.visible_ids()
    req = await world.compaction.request(meta, l0_only=True)
    [job] = await _finished(world, req.request_id)
    assert job.kind == JobKind.L0 and job.state == JobState.COMMITTED and set(job.inputs) == {3, 4}
    segs = {s.segment_id: s for s in world.data.flushed_segments(collection_id=COLLECTION)}
    assert sorted(segs) == [1, 2]  # the L0 segments are gone, the targets stay
    assert segs[1].deleted_rows == 2 and segs[2].deleted_rows == 1
    assert world.visible_ids() == expected == sorted(set(range(120)) - {1, 2, 61})
    # A full request now rewrites both segments with their deletes (a plan per partition).
    req = await world.compaction.request(meta)
    jobs = await _finished(world, req.request_id)
    assert sorted((j.kind, j.partition_id, j.state) for j in jobs) == [
        (JobKind.MIX, PARTITION, JobState.COMMITTED), (JobKind.MIX, 99, JobState.COMMITTED)]
    assert all(s.deleted_rows == 0 for s in world.data.flushed_segments(collection_id=COLLECTION))
    assert world.visible_ids() == expected


async def test_a_coordinator_restart_fails_an_unfinished_plan_and_keeps_the_inputs(world: World) -> None:
    await world.collection()
    await world.flushed_l1(1, range(0, 50), 100)
    job = JobRecord(job_id=500, kind=JobKind.MIX, collection_id=COLLECTION, state=JobState.RUNNING,
                    inputs=(1,), segment_id_base=501, segment_id_count=1)
    await world.data.save_job(job)
    hidden = SegmentMeta(segment_id=501, collection_id=COLLECTION, partition_id=PARTITION, vchannel=VCHANNEL,
                         state=SegmentState.FLUSHED, rows=50, manifest=write_l1(world.files, 501, [rows(range(50), 100)]).manifest)
    await world.data.add_job_segments(500, [hidden])
    assert [s.segment_id for s in world.data.flushed_segments(collection_id=COLLECTION)] == [1]
    assert world.data.reserved(501) and not world.data.reserved(502)
    await world.stop()
    await world.start()  # what a new leader does
    failed = world.data.job(500)
    assert failed is not None and failed.state == JobState.FAILED and failed.error == "coordinator restarted"
    assert [s.segment_id for s in world.data.flushed_segments(collection_id=COLLECTION)] == [1]
    assert world.data.segment(501).state == SegmentState.DROPPED  # type: ignore[union-attr]


async def test_an_import_becomes_visible_at_once_and_a_bad_file_leaves_nothing(world: World, tmp_path: Path) -> None:
    await world.collection()
    good = tmp_path / "good.parquet"
    pq.write_table(pa.table({"id": list(range(1000, 1400)), "v": vectors(list(range(1000, 1400))).tolist()}), good)
    bad = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"id": [1, 2], "age": ["x", "y"], "v": vectors([1, 2]).tolist()}), bad)
    meta = await world.catalog.get_collection(COLLECTION)
    assert meta is not None
    failing = await world.imports.submit(meta, partition_name="", files=[str(good), str(bad)], options={})
    ok = await world.imports.submit(meta, partition_name="", files=[str(good)], options={})
    deadline = time.monotonic() + 120
    while not (world.imports.job(ok.job_id).state.finished and world.imports.job(failing.job_id).state.finished):
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)
    f = world.imports.job(failing.job_id)
    assert f.state == JobState.FAILED and f.error.startswith(f"file {bad}, field age:")
    done = world.imports.job(ok.job_id)
    assert done.state == JobState.COMMITTED and done.rows == 400 and world.imports.progress(done) == 1.0
    assert done.import_ts > 0 and world.imports.floor(COLLECTION) is None
    assert world.visible_ids() == list(range(1000, 1400))
    segs = world.data.flushed_segments(collection_id=COLLECTION)
    assert len(segs) == 1 and segs[0].position is not None and segs[0].position.timetick == done.import_ts


async def test_an_import_commits_only_after_every_streaming_node_range_older_than_its_timestamp_expired(
    world: World, tmp_path: Path
) -> None:
    """A delete sent once imported rows are visible must be stamped above import_ts; streaming nodes stamp
    from TSO ranges at most TIMESTAMP_RANGE_MAX_AGE_S old, so the commit waits that long after the job."""
    meta = await world.collection()
    good = tmp_path / "good.parquet"
    pq.write_table(pa.table({"id": [1, 2, 3], "v": vectors([1, 2, 3]).tolist()}), good)
    marks: dict[str, float] = {}
    world.runner.before_result = lambda: marks.setdefault("job_done", time.monotonic())
    commit = world.data.commit_job

    async def timed_commit(*args: Any, **kwargs: Any) -> Any:
        marks["commit"] = time.monotonic()
        return await commit(*args, **kwargs)

    world.data.commit_job = timed_commit  # type: ignore[method-assign]
    job = await world.imports.submit(meta, partition_name="", files=[str(good)], options={})
    deadline = time.monotonic() + 120
    while not world.imports.job(job.job_id).state.finished:
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)
    assert world.imports.job(job.job_id).state == JobState.COMMITTED
    assert marks["commit"] - marks["job_done"] >= TIMESTAMP_RANGE_MAX_AGE_S


async def test_an_import_left_running_by_a_coordinator_runs_again_with_the_same_timestamp_and_ids(
    world: World, tmp_path: Path
) -> None:
    meta = await world.collection()
    good = tmp_path / "good.parquet"
    pq.write_table(pa.table({"id": list(range(10)), "v": vectors(list(range(10))).tolist()}), good)
    job = await world.imports.submit(meta, partition_name="", files=[str(good)], options={})
    deadline = time.monotonic() + 120
    while world.imports.job(job.job_id).state != JobState.COMMITTED:
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)
    done = world.imports.job(job.job_id)
    # What a coordinator killed after recording the segments (before the commit) leaves behind:
    # the record RUNNING with its timestamp and ids, its segments hidden.
    crashed = JobRecord(**{**{f: getattr(done, f) for f in ("job_id", "kind", "collection_id", "created_at", "files",
                                                            "import_ts", "auto_id_base", "segment_id_base",
                                                            "segment_id_count")},
                           "state": JobState.RUNNING, "job_id": done.job_id + 1_000_000,
                           "segment_id_base": done.segment_id_base + 1_000_000})
    await world.data.save_job(crashed)
    hidden = [SegmentMeta(**{**{f: getattr(s, f) for f in ("collection_id", "partition_id", "vchannel", "rows",
                                                              "manifest", "start_position", "position")},
                             "segment_id": s.segment_id + 1_000_000, "state": SegmentState.FLUSHED})
              for s in world.data.flushed_segments(collection_id=COLLECTION)]
    await world.data.add_job_segments(crashed.job_id, hidden)
    assert world.visible_ids() == list(range(10))  # hidden: nothing twice
    await world.stop()
    await world.start()
    deadline = time.monotonic() + 120
    while not world.imports.job(crashed.job_id).state.finished:
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)
    again = world.imports.job(crashed.job_id)
    assert again.state == JobState.COMMITTED, again.error
    assert again.import_ts == crashed.import_ts and again.segment_id_base == crashed.segment_id_base
    assert again.outputs == tuple(s.segment_id for s in hidden)  # the same segments, written again
    assert world.visible_ids() == sorted([*range(10), *range(10)])  # the same file imported twice: two versions
    ts = {s.position.timetick for s in world.data.flushed_segments(collection_id=COLLECTION) if s.position}
    assert ts == {done.import_ts}


async def test_an_automatic_round_merges_settled_small_segments_and_folds_piled_up_deletes(world: World) -> None:
    await world.collection()
    for i in range(3):
        await world.flushed_l1(i + 1, range(i * 10, (i + 1) * 10), 100 + i)
    world.clock.now += 5
    assert await world.compaction.round() != []  # min_segments=2, min_age=0: merged
    [merged] = world.data.flushed_segments(collection_id=COLLECTION)
    assert merged.rows == 30
    for i in range(world.config.l0_trigger_segments):
        await world.flushed_l0(100 + i, [i], 500 + i)
    [job] = await world.compaction.round()
    assert job.kind == JobKind.L0 and job.state == JobState.COMMITTED
    assert [s.segment_id for s in world.data.flushed_segments(collection_id=COLLECTION)] == [merged.segment_id]
    assert world.visible_ids() == list(range(world.config.l0_trigger_segments, 30))
    folded = world.data.segment(merged.segment_id)
    assert folded is not None and folded.deleted_rows == world.config.l0_trigger_segments
    # More than a fifth of its rows are deleted now: the next round rewrites it without them.
    [rewrite] = await world.compaction.round()
    assert rewrite.kind == JobKind.MIX and rewrite.rows == 30 - world.config.l0_trigger_segments
    assert world.visible_ids() == list(range(world.config.l0_trigger_segments, 30))
    assert await world.compaction.round() == []  # nothing left to do
