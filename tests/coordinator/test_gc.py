"""Garbage collection of object storage: dropped segments after retention, old orphans, never named files."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from common.etcd.metastore import MetaStore
from common.segment import SegmentMeta, SegmentState
from common.storage.layout import index_prefix, manifest_path
from common.storage.objectstore import ObjectStore
from coordinator.catalog import Catalog, CollectionMeta, CollectionState
from coordinator.data.datacoord import DataCoordinator
from coordinator.data.gc import MIN_ORPHAN_AGE_SECONDS, GarbageCollector
from coordinator.tso import TimestampOracle
from tests.coordinator.gcutil import SCHEMA, Clock, write_segment


@pytest.fixture()
async def store(etcd_endpoint: str) -> AsyncIterator[MetaStore]:
    s = await MetaStore.connect(etcd_endpoint, f"gc-{uuid.uuid4().hex}")
    try:
        yield s
    finally:
        await s.close()


async def test_dropped_segments_and_old_orphans_go_named_files_stay(store: MetaStore, tmp_path: Path) -> None:
    clock = Clock()
    tso, catalog = TimestampOracle(store), Catalog(store)
    await tso.start()
    data = DataCoordinator(store, catalog, tso, None, clock=clock)  # type: ignore[arg-type]
    await data.start()
    await catalog.save_collection(
        CollectionMeta(collection_id=1, name="c", schema=SCHEMA, vchannels=("v",), consistency_level=0,
                       state=CollectionState.CREATED)
    )
    storage = ObjectStore.from_uri((tmp_path / "s").as_uri())
    live_manifest = write_segment(storage, 10, 100)
    dropped_manifest = write_segment(storage, 11, 101)
    for sid, path in ((10, live_manifest), (11, dropped_manifest)):
        await data.alloc_segment(SegmentMeta(segment_id=sid, collection_id=1, partition_id=2, vchannel="v",
                                             state=SegmentState.GROWING))
        await data.save_binlog_paths(
            SegmentMeta(segment_id=sid, collection_id=1, partition_id=2, vchannel="v", state=SegmentState.GROWING,
                        rows=2, manifest=path),
            flushed=True,
        )
    await data.update_state(11, SegmentState.DROPPED)
    # An orphan: files of a sync that crashed before its report (segment 10's next version).
    for sid in (10, 11):  # index files built for both segments
        storage.write_bytes(f"{index_prefix(1, sid)}/5/meta.json", b"{}")
    orphan_manifest = manifest_path(1, 2, 10, 7)
    storage.write_bytes(orphan_manifest, b"{}")
    live_files = {f.path for f in storage.list("")} - {orphan_manifest}

    gc = GarbageCollector(data, storage, retention_seconds=60, interval_seconds=1, clock=clock)
    first = await gc.collect()
    assert (first.segments_removed, first.orphans_removed) == (0, 0)
    assert data.segment(11) is not None  # dropped, but within retention
    assert {f.path for f in storage.list("")} >= live_files | {orphan_manifest}

    clock.now = 1_000 + 61  # past the retention, not past the orphan age floor
    report = await gc.collect()
    assert report.segments_removed == 1 and report.orphans_removed == 0
    assert data.segment(11) is None
    assert not [f for f in storage.list("") if "/11/" in f.path]  # its logs, manifests and index files
    assert storage.exists(f"{index_prefix(1, 10)}/5/meta.json")
    assert storage.exists(orphan_manifest)

    clock.now = time.time() + MIN_ORPHAN_AGE_SECONDS + 1
    report = await gc.collect()
    assert report.orphans_removed == 1
    assert not storage.exists(orphan_manifest)
    remaining = {f.path for f in storage.list("")}
    assert remaining == {p for p in live_files if "/11/" not in p}  # everything segment 10 names is still there
