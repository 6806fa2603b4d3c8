"""Garbage collection of object storage: files nothing live can ever read again.

Each round (every ``interval_seconds``, run by the active coordinator):

1. **Dropped segments.** A segment DROPPED (its collection dropped, or it
   stayed empty) for longer than ``retention_seconds`` loses every file under
   its segment prefixes (insert, delta and stats logs, all manifest versions)
   and its index files, then its metadata. The retention lets readers that still hold it finish.
   A segment a compaction replaced keeps its metadata until its vchannel's
   checkpoint passes its last row: a delegator that consumes the WAL from an
   older checkpoint must still be told to skip its inserts (they are in the
   compaction's outputs).
2. **Orphans.** A file under the segment roots that no live segment's current
   manifest names (nor is that manifest) is deleted once it is older than both
   ``retention_seconds`` and ``MIN_ORPHAN_AGE_SECONDS``. Orphans are what a
   crash leaves between "files written" and "SaveBinlogPaths", and older
   manifest versions. The age floor keeps a sync that is writing its files
   right now safe: its files are young until its report makes them named.
   Files under a segment id an unfinished offline job reserved are kept: a
   Spark job may run longer than the floor before its segments are recorded.

A file a live segment names is never deleted. The file list is taken before
the set of named files, so a segment reported in between is named already.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass

import structlog

from common.segment import SegmentMeta, SegmentState
from common.storage.errors import ObjectNotFound
from common.storage.layout import index_prefix, segment_prefixes
from common.storage.manifest import SegmentManifest
from common.storage.objectstore import ObjectStore
from common.tasks import BackgroundTasks
from coordinator.data.datacoord import DataCoordinator

MIN_ORPHAN_AGE_SECONDS = 600.0
ROOTS = ("insert_log/", "delta_log/", "stats_log/", "manifests/")


@dataclass(frozen=True, slots=True)
class GCReport:
    segments_removed: int
    orphans_removed: int


class GarbageCollector:
    def __init__(
        self,
        data: DataCoordinator,
        storage: ObjectStore,
        *,
        retention_seconds: float,
        interval_seconds: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._data = data
        self._storage = storage
        self._retention = retention_seconds
        self._interval = interval_seconds
        self._clock = clock
        self._log = structlog.get_logger().bind(component="gc")
        self._tasks = BackgroundTasks("gc")

    def start(self) -> None:
        self._tasks.start(self._loop(), name="storage-gc")

    async def stop(self) -> None:
        await self._tasks.stop()

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self._interval)
            try:
                await self.collect()
            except asyncio.CancelledError:
                raise
            except Exception as err:  # task boundary: the next round tries again
                self._log.warning("garbage collection failed", error=str(err))

    async def collect(self) -> GCReport:
        now = self._clock()
        expired = [
            s
            for s in self._data.segments()
            if s.state == SegmentState.DROPPED and now - s.dropped_at >= self._retention and self._replayed(s)
        ]
        for seg in expired:
            prefixes = [*segment_prefixes(seg.collection_id, seg.partition_id, seg.segment_id),
                        index_prefix(seg.collection_id, seg.segment_id)]
            for prefix in prefixes:
                await asyncio.to_thread(self._storage.delete_prefix, prefix)
        await self._data.forget_segments([s.segment_id for s in expired])

        listed = []
        for root in ROOTS:
            listed.extend(await asyncio.to_thread(self._storage.list, root))
        named = await self._named_files()
        min_age = max(self._retention, MIN_ORPHAN_AGE_SECONDS)
        orphans = [
            f.path
            for f in listed
            if f.path not in named and now - f.mtime.timestamp() >= min_age and not self._reserved(f.path)
        ]
        for path in orphans:
            await asyncio.to_thread(self._storage.delete, path)
        if expired or orphans:
            self._log.info("garbage collected", segments=len(expired), orphans=len(orphans))
        return GCReport(segments_removed=len(expired), orphans_removed=len(orphans))

    def _replayed(self, seg: SegmentMeta) -> bool:
        """A compacted segment's inserts are all behind its vchannel's checkpoint (no reader replays them)."""
        if not seg.compacted or seg.position is None:
            return True
        cp = self._data.checkpoint(seg.vchannel)
        return cp is None or cp.covers(seg.position.timetick)

    def _reserved(self, path: str) -> bool:
        """The file is under a segment id an unfinished job may still record (``kind/coll/part/seg/...``)."""
        parts = path.split("/")
        if len(parts) < 4 or not parts[3].isdigit():
            return False
        return self._data.reserved(int(parts[3]))

    async def _named_files(self) -> set[str]:
        named: set[str] = set()
        for seg in self._data.segments():
            if not seg.is_live or not seg.manifest:
                continue
            named.add(seg.manifest)
            try:
                raw = await asyncio.to_thread(self._storage.read_bytes, seg.manifest)
            except ObjectNotFound:
                self._log.error("manifest of a live segment is missing", segment=seg.segment_id, path=seg.manifest)
                continue
            named.update(SegmentManifest.from_json(raw).files())
        return named
