"""Carrying out one sync: files first, then the segment metadata; the checkpoint moves later.

A segment sync takes the rows its pipeline buffered, writes them as a new
insert log (a Parquet file per column group plus a stats log), writes the
segment's next manifest version, and reports it with ``SaveBinlogPaths``
(``flushed`` for the final sync, which makes the segment FLUSHED). A delete
sync writes the vchannel's buffered deletes as new L0 segments, one per
partition the deletes name (``ALL_PARTITIONS`` for a delete of every
partition; one delta log and a manifest each), and reports them FLUSHED.

Only after the report returns does the pipeline forget the rows; the flusher
moves the checkpoint after that. A crash in between leaves files no manifest
recorded by the coordinator names (removed by garbage collection) or a
FLUSHED segment the replay skips; never rows in two places.

Encoding and writing run in a worker thread (STYLE rule 12).
"""

from __future__ import annotations

import asyncio

import numpy as np
import pyarrow as pa
import structlog

from common.failpoints import failpoint
from common.segment import SegmentLevel, SegmentMeta, SegmentState
from common.storage.manifest import SegmentManifest
from common.storage.objectstore import ObjectStore
from common.storage.segment_io import SegmentReader, SegmentWriter
from common.tracing import traced
from streamingnode.flusher.dataclient import DataClient
from streamingnode.flusher.pipeline import ChannelPipeline, DeleteBatch, SyncDeletes, SyncSegment


class Syncer:
    """Writes and reports syncs for the pipelines of one pchannel."""

    def __init__(self, store: ObjectStore, client: DataClient) -> None:
        self._store = store
        self._client = client
        self._manifests: dict[int, SegmentManifest] = {}  # last reported version per segment
        self.synced = 0  # syncs reported since start (for tests and the checkpoint failpoint)
        self._log = structlog.get_logger().bind(component="flush-sync")

    @traced("flusher.sync_segment")
    async def sync_segment(self, pipeline: ChannelPipeline, work: SyncSegment) -> None:
        batch = pipeline.take_segment_batch(work.segment_id)
        if batch is None:
            return
        if work.final:
            await self._client.update_state(work.segment_id, SegmentState.FLUSHING)
        manifest = await self._manifest(pipeline, batch.segment_id, batch.partition_id, batch.manifest)
        path = batch.manifest
        if batch.table.num_rows:
            log_id = await self._client.allocate_ids(1)
            writer = SegmentWriter(self._store, pipeline.schema)

            def write() -> tuple[SegmentManifest, str]:
                log, stats = writer.write_insert_log(
                    collection_id=pipeline.collection_id,
                    partition_id=batch.partition_id,
                    segment_id=batch.segment_id,
                    log_id=log_id,
                    table=batch.table,
                )
                nxt = manifest.with_insert_log(log, stats)
                return nxt, writer.write_manifest(nxt)

            manifest, path = await asyncio.to_thread(write)
            failpoint("flusher.after_files")
        meta = SegmentMeta(
            segment_id=batch.segment_id,
            collection_id=pipeline.collection_id,
            partition_id=batch.partition_id,
            vchannel=pipeline.vchannel,
            state=SegmentState.GROWING,
            level=SegmentLevel.L1,
            rows=manifest.rows,
            manifest=path,
            start_position=batch.start,
            position=batch.upto,
        )
        await self._client.save_binlog_paths(meta, flushed=work.final)
        failpoint("flusher.after_metadata")
        self._manifests[batch.segment_id] = manifest
        pipeline.segment_synced(batch, manifest=path, final=work.final)
        if work.final:
            self._manifests.pop(batch.segment_id, None)
        self.synced += 1
        self._log.info(
            "segment synced",
            vchannel=pipeline.vchannel,
            segment=batch.segment_id,
            rows=batch.table.num_rows,
            total_rows=manifest.rows,
            final=work.final,
            reason=work.reason,
        )

    @traced("flusher.sync_deletes")
    async def sync_deletes(self, pipeline: ChannelPipeline, work: SyncDeletes) -> None:
        """Write the buffered deletes as L0 segments, one per partition they name (``ALL_PARTITIONS``
        for deletes of every partition), then let the checkpoint pass them. A crash between two of
        them replays the batch: deletes applied twice change nothing."""
        batch = pipeline.take_deletes()
        if batch is None:
            return
        segments = [await self._write_l0(pipeline, batch, part, pks, ts) for part, pks, ts in batch.by_partition()]
        pipeline.deletes_synced(batch)
        self.synced += 1
        self._log.info(
            "deletes synced", vchannel=pipeline.vchannel, segments=segments, deletes=len(batch.pks), reason=work.reason
        )

    async def _write_l0(
        self, pipeline: ChannelPipeline, batch: DeleteBatch, partition_id: int, pks: pa.Array, ts: np.ndarray
    ) -> int:
        """Write and report one L0 segment of ``partition_id``'s deletes; its id."""
        first_id = await self._client.allocate_ids(2)
        segment_id, log_id = first_id, first_id + 1
        writer = SegmentWriter(self._store, pipeline.schema)

        def write() -> str:
            delta = writer.write_delta_log(
                collection_id=pipeline.collection_id,
                partition_id=partition_id,
                segment_id=segment_id,
                log_id=log_id,
                pks=pks,
                ts=ts,
            )
            manifest = SegmentManifest(
                segment_id=segment_id,
                collection_id=pipeline.collection_id,
                partition_id=partition_id,
                vchannel=pipeline.vchannel,
                level=SegmentLevel.L0,
            ).with_delta_log(delta)
            return writer.write_manifest(manifest)

        path = await asyncio.to_thread(write)
        failpoint("flusher.after_files")
        meta = SegmentMeta(
            segment_id=segment_id,
            collection_id=pipeline.collection_id,
            partition_id=partition_id,
            vchannel=pipeline.vchannel,
            state=SegmentState.GROWING,
            level=SegmentLevel.L0,
            rows=0,
            manifest=path,
            start_position=batch.first,
            position=batch.last,
        )
        await self._client.save_binlog_paths(meta, flushed=True)
        failpoint("flusher.after_metadata")
        return segment_id

    async def _manifest(
        self, pipeline: ChannelPipeline, segment_id: int, partition_id: int, path: str
    ) -> SegmentManifest:
        """The segment's manifest as last reported (read back from storage after a restart)."""
        cached = self._manifests.get(segment_id)
        if cached is not None:
            return cached
        if path:
            reader = SegmentReader(self._store, pipeline.schema)
            return await asyncio.to_thread(reader.read_manifest, path)
        return SegmentManifest(
            segment_id=segment_id,
            collection_id=pipeline.collection_id,
            partition_id=partition_id,
            vchannel=pipeline.vchannel,
            level=SegmentLevel.L1,
        )

    def forget(self, segment_ids: set[int]) -> None:
        for sid in segment_ids:
            self._manifests.pop(sid, None)
