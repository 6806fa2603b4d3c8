"""One small flushed segment in an object store, as a worker loads it."""

from __future__ import annotations

import pyarrow as pa

from common.segment import SegmentLevel, SegmentMeta, SegmentState
from common.storage.manifest import SegmentManifest
from common.storage.objectstore import ObjectStore
from common.storage.segment_io import SegmentWriter
from tests.common.storage.segment_data import full_schema, rows_table

COLL, PART, SEG = 11, 22, 33


def flushed_segment(store: ObjectStore, rows: int = 20) -> tuple[SegmentMeta, pa.Table]:
    """Segment ``SEG`` of ``full_schema()`` with ``rows`` rows written at ts 100 on, and its rows."""
    schema = full_schema()
    table = rows_table(schema, start=0, rows=rows, ts0=100)
    writer = SegmentWriter(store, schema)
    manifest = SegmentManifest(
        segment_id=SEG, collection_id=COLL, partition_id=PART, vchannel="strata-dml_0_11v0", level=SegmentLevel.L1
    )
    log, stats = writer.write_insert_log(collection_id=COLL, partition_id=PART, segment_id=SEG, log_id=1, table=table)
    path = writer.write_manifest(manifest.with_insert_log(log, stats))
    meta = SegmentMeta(
        segment_id=SEG,
        collection_id=COLL,
        partition_id=PART,
        vchannel="strata-dml_0_11v0",
        state=SegmentState.FLUSHED,
        rows=rows,
        manifest=path,
    )
    return meta, table
