"""What the garbage-collection tests share: a small schema, a settable clock, a one-log segment on storage."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from common.schema import CollectionSchema, DataType, FieldSchema
from common.segment import SegmentLevel
from common.storage.manifest import SegmentManifest
from common.storage.objectstore import ObjectStore
from common.storage.segment_io import SegmentWriter

SCHEMA = CollectionSchema(
    name="c",
    fields=(
        FieldSchema(field_id=100, name="id", dtype=DataType.INT64, is_primary=True),
        FieldSchema(field_id=101, name="v", dtype=DataType.FLOAT_VECTOR, dim=2),
    ),
)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def write_segment(storage: ObjectStore, segment_id: int, log_id: int) -> str:
    """A one-log segment's files and manifest (collection 1, partition 2, vchannel "v"); returns the manifest path."""
    writer = SegmentWriter(storage, SCHEMA)
    table = pa.table(
        {
            "id": pa.array([1, 2], pa.int64()),
            "v": pa.array([[0.0, 1.0]] * 2, pa.list_(pa.float32(), 2)),
            "_ts": pa.array(np.array([5, 6], dtype=np.uint64)),
        }
    )
    log, stats = writer.write_insert_log(collection_id=1, partition_id=2, segment_id=segment_id, log_id=log_id, table=table)
    manifest = SegmentManifest(
        segment_id=segment_id, collection_id=1, partition_id=2, vchannel="v", level=SegmentLevel.L1
    ).with_insert_log(log, stats)
    return writer.write_manifest(manifest)
