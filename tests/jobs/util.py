"""Segments on a real local object store for the job tests: written the way the flusher writes them."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from common.schema import TIMESTAMP_COLUMN, CollectionSchema, DataType, FieldSchema
from common.segment import SegmentLevel
from common.storage.layout import ALL_PARTITIONS
from common.storage.manifest import SegmentManifest
from common.storage.objectstore import ObjectStore
from common.storage.segment_io import SegmentReader, SegmentWriter
from jobs.plans import SegmentRef

COLLECTION = 7
PARTITION = 8
VCHANNEL = "strata-dml_0_7v0"
DIM = 4


def schema(*, auto_id: bool = False, dynamic: bool = False) -> CollectionSchema:
    fields = [
        FieldSchema(field_id=100, name="id", dtype=DataType.INT64, is_primary=True, auto_id=auto_id),
        FieldSchema(field_id=101, name="age", dtype=DataType.INT32, nullable=True),
        FieldSchema(field_id=102, name="name", dtype=DataType.VARCHAR, max_length=16, default_value="x"),
        FieldSchema(field_id=103, name="v", dtype=DataType.FLOAT_VECTOR, dim=DIM),
    ]
    if dynamic:
        fields.append(FieldSchema(field_id=104, name="$meta", dtype=DataType.JSON, is_dynamic=True))
    return CollectionSchema(name="c", fields=tuple(fields), enable_dynamic_field=dynamic)


def vectors(ids: Sequence[int]) -> np.ndarray:
    """Deterministic vectors: row ``i`` of key ``k`` is always the same."""
    return np.stack([np.random.default_rng(int(k)).standard_normal(DIM).astype(np.float32) for k in ids]) if len(
        ids
    ) else np.empty((0, DIM), np.float32)


def rows(ids: Sequence[int], ts: Sequence[int] | int, s: CollectionSchema | None = None) -> pa.Table:
    s = s or schema()
    n = len(ids)
    stamps = np.full(n, ts, dtype=np.uint64) if isinstance(ts, int) else np.asarray(ts, dtype=np.uint64)
    cols = {
        "id": pa.array(ids, pa.int64()),
        "age": pa.array([int(i) % 90 for i in ids], pa.int32()),
        "name": pa.array([f"n{i}" for i in ids], pa.string()),
        "v": pa.FixedSizeListArray.from_arrays(pa.array(vectors(ids).reshape(-1), pa.float32()), DIM),
    }
    if s.dynamic_field is not None:
        cols["$meta"] = pa.array(["{}"] * n, pa.string())
    cols[TIMESTAMP_COLUMN] = pa.array(stamps, pa.uint64())
    return pa.table(cols).cast(s.arrow_schema())


def write_l1(
    store: ObjectStore,
    segment_id: int,
    logs: Sequence[pa.Table],
    s: CollectionSchema | None = None,
    *,
    partition: int = PARTITION,
) -> SegmentRef:
    """An L1 segment of one insert log per table (each in ``_ts`` order)."""
    s = s or schema()
    writer = SegmentWriter(store, s)
    manifest = SegmentManifest(
        segment_id=segment_id, collection_id=COLLECTION, partition_id=partition, vchannel=VCHANNEL,
        level=SegmentLevel.L1,
    )
    for i, table in enumerate(logs):
        log, stats = writer.write_insert_log(
            collection_id=COLLECTION, partition_id=partition, segment_id=segment_id, log_id=segment_id * 100 + i,
            table=table,
        )
        manifest = manifest.with_insert_log(log, stats)
    path = writer.write_manifest(manifest)
    return SegmentRef(segment_id=segment_id, partition_id=partition, manifest=path, rows=manifest.rows)


def write_l0(
    store: ObjectStore, segment_id: int, pks: Sequence[int], ts: Sequence[int] | int, *, partition: int = ALL_PARTITIONS
) -> SegmentRef:
    """An L0 segment of deletes that name ``partition`` (``ALL_PARTITIONS``: every one)."""
    s = schema()
    writer = SegmentWriter(store, s)
    stamps = np.full(len(pks), ts, dtype=np.uint64) if isinstance(ts, int) else np.asarray(ts, dtype=np.uint64)
    delta = writer.write_delta_log(
        collection_id=COLLECTION, partition_id=partition, segment_id=segment_id, log_id=segment_id,
        pks=pa.array(pks, pa.int64()), ts=stamps,
    )
    manifest = SegmentManifest(
        segment_id=segment_id, collection_id=COLLECTION, partition_id=partition, vchannel=VCHANNEL,
        level=SegmentLevel.L0,
    ).with_delta_log(delta)
    return SegmentRef(segment_id=segment_id, partition_id=partition, manifest=writer.write_manifest(manifest))


def read_segment(store: ObjectStore, manifest: str, s: CollectionSchema | None = None) -> pa.Table:
    reader = SegmentReader(store, s or schema())
    return reader.read_inserts(reader.read_manifest(manifest))
