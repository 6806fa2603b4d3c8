"""Segments in and out of Spark: read insert and delta logs into DataFrames, write output segments.

Reading goes through ``common.storage`` (pyarrow filesystems, local or S3) inside
``mapInArrow``: the driver lists one small descriptor per insert log (or delta
log) and each task reads its logs' column-group files by position, exactly as a
query node does. No Hadoop filesystem is involved, so Spark and the query nodes
read the same bytes with the same code.

Writing an output segment (``write_segment``) is what a flusher's final sync and
a worker's first load do together: one insert log (a Parquet file per column
group), its stats log, the manifest (version 1), and then each vector, scalar
and text-match index built and saved where the worker looks for it (``segcore/index/store.py``),
over the rows in the order the worker will load them. A worker that loads the
segment finds the index and does not build it. Every call blocks; they run in
Spark's Python workers.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from common.schema import TIMESTAMP_COLUMN, CollectionSchema, DataType
from common.segment import SegmentLevel
from common.storage.manifest import SegmentManifest
from common.storage.objectstore import ObjectStore
from common.storage.segment_io import DELTA_PK_COLUMN, DELTA_TS_COLUMN, SegmentReader, SegmentWriter
from jobs.plans import IndexRef, OutputSegment, SegmentRef
from jobs.sparktypes import rows_schema, spark_arrow_schema, spark_ddl, to_spark
from segcore.index.factory import build_index
from segcore.index.field_specs import index_spec, listed_index_specs
from segcore.index.scalar.index import build_scalar_index
from segcore.index.scalar.spec import ScalarIndexSpec
from segcore.index.scalar.store import save_scalar_index
from segcore.index.store import save_index
from segcore.index.text.store import build_text_index, save_text_index, text_fields
from segcore.segments.growing import GrowingStore

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

#: Columns of the deletes DataFrame: the primary key (the collection's PK type) and the delete timestamp.
DELETE_COLUMNS = (DELTA_PK_COLUMN, DELTA_TS_COLUMN)


def _log_descriptors(
    store: ObjectStore, schema: CollectionSchema, refs: Sequence[SegmentRef], *, deltas: bool
) -> list[tuple[str, int]]:
    reader = SegmentReader(store, schema)
    out: list[tuple[str, int]] = []
    for ref in refs:
        manifest = reader.read_manifest(ref.manifest)
        count = len(manifest.delta_logs) if deltas else len(manifest.insert_logs)
        out.extend((ref.manifest, i) for i in range(count))
    return out


def read_rows(
    spark: SparkSession,
    storage_uri: str,
    schema: CollectionSchema,
    refs: Sequence[SegmentRef],
    columns: Sequence[str] | None = None,
) -> DataFrame:
    """Every row of the segments ``refs`` (all columns of ``schema``'s stored rows, or ``columns``).

    Vectors arrive as ``array<float>``, binary vectors as ``binary``, ``_ts`` as ``bigint`` (``sparktypes``).
    """
    wanted = list(rows_schema(schema).names) if columns is None else list(columns)
    arrow = pa.schema([rows_schema(schema).field(n) for n in wanted])
    descriptors = _log_descriptors(ObjectStore.from_uri(storage_uri), schema, refs, deltas=False)
    schema_json = schema.to_json()

    def read(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        local = CollectionSchema.from_json(schema_json)
        store = ObjectStore.from_uri(storage_uri)
        reader = SegmentReader(store, local)
        for batch in batches:
            for path, index in zip(batch.column("manifest").to_pylist(), batch.column("log").to_pylist(), strict=True):
                manifest = reader.read_manifest(path)
                one = SegmentManifest(
                    segment_id=manifest.segment_id,
                    collection_id=manifest.collection_id,
                    partition_id=manifest.partition_id,
                    vchannel=manifest.vchannel,
                    level=manifest.level,
                    rows=manifest.insert_logs[index].rows,
                    insert_logs=(manifest.insert_logs[index],),
                )
                yield from to_spark(reader.read_inserts(one, columns=wanted), arrow).to_batches()

    return _descriptor_frame(spark, descriptors).mapInArrow(read, spark_ddl(arrow))


def read_deletes(spark: SparkSession, storage_uri: str, schema: CollectionSchema, refs: Sequence[SegmentRef]) -> DataFrame:
    """Every delete ``(pk, ts)`` of the delta logs of ``refs`` (``ts`` as ``bigint``)."""
    descriptors = _log_descriptors(ObjectStore.from_uri(storage_uri), schema, refs, deltas=True)
    arrow = pa.schema(
        [pa.field(DELTA_PK_COLUMN, schema.primary_field.arrow_type()), pa.field(DELTA_TS_COLUMN, pa.uint64())]
    )
    schema_json = schema.to_json()

    def read(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        local = CollectionSchema.from_json(schema_json)
        reader = SegmentReader(ObjectStore.from_uri(storage_uri), local)
        for batch in batches:
            for path, index in zip(batch.column("manifest").to_pylist(), batch.column("log").to_pylist(), strict=True):
                manifest = reader.read_manifest(path)
                one = SegmentManifest(
                    segment_id=manifest.segment_id,
                    collection_id=manifest.collection_id,
                    partition_id=manifest.partition_id,
                    vchannel=manifest.vchannel,
                    level=manifest.level,
                    delta_logs=(manifest.delta_logs[index],),
                )
                yield from to_spark(reader.read_deltas(one), arrow).to_batches()

    return _descriptor_frame(spark, descriptors).mapInArrow(read, spark_ddl(arrow))


def _descriptor_frame(spark: SparkSession, descriptors: list[tuple[str, int]]) -> DataFrame:
    """One row per log, spread over as many partitions as there are logs (at most 4x the cores)."""
    slices = max(1, min(len(descriptors), 4 * spark.sparkContext.defaultParallelism))
    rdd = spark.sparkContext.parallelize(descriptors, slices)
    return spark.createDataFrame(rdd, "manifest string, log int")


def write_segment(
    store: ObjectStore,
    schema: CollectionSchema,
    rows: pa.Table,
    *,
    collection_id: int,
    partition_id: int,
    segment_id: int,
    vchannel: str,
    indexes: Sequence[IndexRef] = (),
    plan_id: int = 0,
) -> OutputSegment:
    """Write ``rows`` (stored-row columns, any order) as a complete FLUSHED-ready L1 segment.

    Rows are ordered by ``(_ts, primary key)``: the segment format keeps rows in ``_ts``
    order (MVCC chains need it), and within one timestamp — every row of an import — they
    are sorted by key. Returns what the coordinator records; the segment is visible only
    once it does.
    """
    arrow = rows_schema(schema)
    table = rows.select(arrow.names).cast(arrow)
    pk = schema.primary_field.name
    table = table.take(pc.sort_indices(table, sort_keys=[(TIMESTAMP_COLUMN, "ascending"), (pk, "ascending")]))
    writer = SegmentWriter(store, schema)
    log, stats_path = writer.write_insert_log(
        collection_id=collection_id, partition_id=partition_id, segment_id=segment_id, log_id=segment_id, table=table
    )
    manifest = SegmentManifest(
        segment_id=segment_id,
        collection_id=collection_id,
        partition_id=partition_id,
        vchannel=vchannel,
        level=SegmentLevel.L1,
    ).with_insert_log(log, stats_path)
    _build_indexes(store, schema, table, collection_id=collection_id, segment_id=segment_id, indexes=indexes)
    path = writer.write_manifest(manifest)
    return OutputSegment(
        segment_id=segment_id,
        partition_id=partition_id,
        vchannel=vchannel,
        rows=table.num_rows,
        manifest=path,
        plan_id=plan_id,
        min_ts=log.min_ts,
        max_ts=log.max_ts,
    )


def _build_indexes(
    store: ObjectStore,
    schema: CollectionSchema,
    table: pa.Table,
    *,
    collection_id: int,
    segment_id: int,
    indexes: Sequence[IndexRef],
) -> None:
    """Build and save each index over the rows exactly as a worker will hold them: vector indexes over
    the vectors, scalar ones (``segcore/index/scalar``) and text-match ones (``segcore/index/text``, every
    ``enable_match`` field) over the columns."""
    vector_indexes = [
        i for i in indexes if schema.has_field(i.field_name) and schema.field(i.field_name).dtype.is_vector
    ]
    scalar_specs = [
        s for s in listed_index_specs(schema, indexes)
        if isinstance(s.spec, ScalarIndexSpec)
    ]
    texts = text_fields(schema)
    if not vector_indexes and not scalar_specs and not texts:
        return
    held = GrowingStore(schema)
    held.apply_insert(table)
    for text in texts:  # a compacted or imported segment gets a fresh text-match index (``segcore/index/text``)
        column = held.table().column(text.name)
        save_text_index(store, collection_id, segment_id, text, build_text_index(text, column.to_pylist()))
    for scalar in scalar_specs:
        assert isinstance(scalar.spec, ScalarIndexSpec)
        built = build_scalar_index(scalar.spec, held.table())
        field_id = schema.field(scalar.field_name).field_id
        save_scalar_index(store, collection_id, segment_id, scalar.index_id, field_id, built)
    for ref in vector_indexes:
        field = schema.field(ref.field_name)
        spec = index_spec(
            ref.params,
            binary=field.dtype.is_binary_vector,
            sparse=field.dtype.is_sparse_vector,
            int8=field.dtype == DataType.INT8_VECTOR,
        )
        vectors = held.vector_matrix(field.name)
        index = build_index(spec, vectors)
        save_index(store, collection_id, segment_id, ref.index_id, field.field_id, spec, index, vectors)


def output_ddl() -> str:
    """Spark schema of the rows writers return: one per output segment."""
    return (
        "segment_id bigint, partition_id bigint, vchannel string, rows bigint, manifest string, "
        "plan_id bigint, min_ts bigint, max_ts bigint"
    )


def output_batch(outputs: Sequence[OutputSegment]) -> pa.RecordBatch:
    """``outputs`` as one Arrow batch of ``output_ddl()``."""
    return pa.RecordBatch.from_pydict(
        {
            "segment_id": pa.array([o.segment_id for o in outputs], pa.int64()),
            "partition_id": pa.array([o.partition_id for o in outputs], pa.int64()),
            "vchannel": pa.array([o.vchannel for o in outputs], pa.string()),
            "rows": pa.array([o.rows for o in outputs], pa.int64()),
            "manifest": pa.array([o.manifest for o in outputs], pa.string()),
            "plan_id": pa.array([o.plan_id for o in outputs], pa.int64()),
            "min_ts": pa.array([o.min_ts for o in outputs], pa.int64()),
            "max_ts": pa.array([o.max_ts for o in outputs], pa.int64()),
        }
    )


def outputs_from_rows(rows: Sequence[object]) -> list[OutputSegment]:
    """Spark ``Row`` objects of ``output_ddl()`` back into ``OutputSegment`` values."""
    out = []
    for r in rows:
        d = r.asDict()  # type: ignore[attr-defined]  # pyspark.sql.Row
        out.append(
            OutputSegment(
                segment_id=int(d["segment_id"]),
                partition_id=int(d["partition_id"]),
                vchannel=str(d["vchannel"]),
                rows=int(d["rows"]),
                manifest=str(d["manifest"]),
                plan_id=int(d["plan_id"]),
                min_ts=int(d["min_ts"]),
                max_ts=int(d["max_ts"]),
            )
        )
    return sorted(out, key=lambda o: o.segment_id)


def as_numpy_ts(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    return np.asarray(column.to_numpy(zero_copy_only=False), dtype=np.uint64)


__all__ = [
    "DELETE_COLUMNS",
    "output_batch",
    "output_ddl",
    "outputs_from_rows",
    "read_deletes",
    "read_rows",
    "spark_arrow_schema",
    "write_segment",
]
