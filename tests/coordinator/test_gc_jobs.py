"""Garbage collection and offline jobs: a running job's files stay; a compacted segment's metadata waits for its checkpoint."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from common.etcd.metastore import MetaStore
from common.position import Position
from common.segment import SegmentMeta, SegmentState
from common.storage.objectstore import ObjectStore
from coordinator.catalog import Catalog, CollectionMeta, CollectionState
from coordinator.data.datacoord import DataCoordinator
from coordinator.data.gc import MIN_ORPHAN_AGE_SECONDS, GarbageCollector
from coordinator.data.jobs import JobKind, JobRecord, JobState
from coordinator.tso import TimestampOracle
from tests.coordinator.gcutil import SCHEMA, Clock, write_segment


@pytest.fixture()
async def store(etcd_endpoint: str) -> AsyncIterator[MetaStore]:
    s = await MetaStore.connect(etcd_endpoint, f"gcjobs-{uuid.uuid4().hex}")
    try:
        yield s
    finally:
        await s.close()


async def test_files_of_a_running_job_stay_and_a_compacted_segment_waits_for_its_checkpoint(
    store: MetaStore, tmp_path: Path
) -> None:
    clock = Clock()
    tso, catalog = TimestampOracle(store), Catalog(store)
    await tso.start()
    data = DataCoordinator(store, catalog, tso, None, clock=clock)  # type: ignore[arg-type]
    await data.start()
    await catalog.save_collection(CollectionMeta(collection_id=1, name="c", schema=SCHEMA, vchannels=("v",),
                                                 consistency_level=0, state=CollectionState.CREATED))
    storage = ObjectStore.from_uri((tmp_path / "s").as_uri())
    manifest = write_segment(storage, 10, 10)
    await data.save_binlog_paths(
        SegmentMeta(segment_id=10, collection_id=1, partition_id=2, vchannel="v", state=SegmentState.GROWING, rows=2,
                    manifest=manifest, position=Position(b"\x01", 50)),
        flushed=True,
    )
    # A compaction of segment 10 is running and has written an output under its reserved id 20.
    job = JobRecord(job_id=30, kind=JobKind.MIX, collection_id=1, state=JobState.RUNNING, inputs=(10,),
                    segment_id_base=20, segment_id_count=1)
    await data.save_job(job)
    write_segment(storage, 20, 20)
    stray = write_segment(storage, 21, 21)  # not reserved by anyone: an orphan
    gc = GarbageCollector(data, storage, retention_seconds=0, interval_seconds=1, clock=clock)
    clock.now = time.time() + MIN_ORPHAN_AGE_SECONDS + 1
    await gc.collect()
    assert [f for f in storage.list("") if "/20/" in f.path], "a running job's files were collected"
    assert not storage.exists(stray)

    # It commits: 10 is DROPPED as compacted, 20 visible.
    await data.add_job_segments(30, [SegmentMeta(segment_id=20, collection_id=1, partition_id=2, vchannel="v",
                                                 state=SegmentState.FLUSHED, rows=2, manifest=manifest_path(20))])
    await data.commit_job(job.moved(JobState.COMMITTED, now=clock(), outputs=(20,)), drop={10: manifest})
    assert [s.segment_id for s in data.flushed_segments(collection_id=1)] == [20]
    dropped = data.segment(10)
    assert dropped is not None and dropped.compacted
    # It stays (record and files) while the checkpoint is behind its rows: a delegator starting
    # there must still be told to skip its inserts.
    await data.update_checkpoints([("v", Position(b"\x02", 40))])
    await gc.collect()
    assert data.segment(10) is not None
    await data.update_checkpoints([("v", Position(b"\x03", 60))])
    await gc.collect()
    assert data.segment(10) is None
    assert not [f for f in storage.list("") if "/10/" in f.path]
    assert [f for f in storage.list("") if "/20/" in f.path]


def manifest_path(segment_id: int) -> str:
    return f"manifests/1/2/{segment_id}/000000000001.json"
