"""Bulk import on Spark: files in, complete segments out, nothing visible until the coordinator commits.

Steps of ``run_import``:

1. one descriptor per chunk (a Parquet row group, a slice of a NumPy set, a
   JSON file); a task per chunk reads it and validates it against the schema
   (``sources.read_chunk``) — a bad value fails the job with the file and field;
2. ``with_keys`` (pure): auto-id keys ``auto_id_base + id_offset + row``, and
   ``_ts`` = the import timestamp;
3. ``route`` (pure): each row's segment group from its key (shard, as the
   proxy routes inserts), its partition (the named one, or by partition key)
   and a bucket that splits a shard into target-size segments;
4. one ``applyInArrow`` call per group writes the segment with its stats and
   index (``segments.write_segment``).

Segment ids are ``segment_id_base + group``, so a job that runs again after a
crash writes the same files.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import structlog

from common.schema import TIMESTAMP_COLUMN, CollectionSchema, DataType
from common.storage.objectstore import ObjectStore
from jobs.plans import ImportFile, ImportSpec, JobResult
from jobs.routing import buckets_of, shards_of
from jobs.segments import output_batch, outputs_from_rows, write_segment
from jobs.sources import Chunk, file_chunks, read_chunk
from jobs.sparktypes import from_spark, spark_ddl, to_spark

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = structlog.get_logger().bind(component="import-job")

GROUP = "__group"
_ROW = "__row"  # row number within its file (auto ids)
_OFFSET = "__id_offset"


def chunk_frame(spark: SparkSession, spec: ImportSpec) -> tuple[DataFrame, list[Chunk]]:
    """One row per chunk of the spec's files, one chunk per partition."""
    chunks = file_chunks(spec.files, spec.storage_uri)
    rows = [(c.file_index, c.part, c.row_start, c.rows) for c in chunks]
    rdd = spark.sparkContext.parallelize(rows, max(1, len(rows)))
    return spark.createDataFrame(rdd, "file int, part int, row_start bigint, rows bigint"), chunks


def read_files(spark: SparkSession, spec: ImportSpec) -> DataFrame:
    """Every row of the spec's files, validated: insert columns plus ``__row`` and ``__id_offset``."""
    schema = spec.schema
    arrow = _read_schema(schema)
    frame, _ = chunk_frame(spark, spec)
    files, schema_json, uri = spec.files, spec.schema_json, spec.storage_uri

    def read(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        local = CollectionSchema.from_json(schema_json)
        for batch in batches:
            for i, part, start, n in zip(*(batch.column(c).to_pylist() for c in ("file", "part", "row_start", "rows")),
                                         strict=True):
                f: ImportFile = files[i]
                table = read_chunk(f, Chunk(file_index=i, part=part, row_start=start, rows=n), local, uri)
                table = table.append_column(_ROW, pa.array(np.arange(start, start + table.num_rows), pa.int64()))
                table = table.append_column(_OFFSET, pa.array(np.full(table.num_rows, f.id_offset), pa.int64()))
                yield from to_spark(table, arrow).to_batches()

    return frame.mapInArrow(read, spark_ddl(arrow))


def _read_schema(schema: CollectionSchema) -> pa.Schema:
    fields = list(schema.arrow_schema(with_timestamp=False))
    return pa.schema([*fields, pa.field(_ROW, pa.int64()), pa.field(_OFFSET, pa.int64())])


def with_keys(rows: DataFrame, schema: CollectionSchema, *, import_ts: int, auto_id_base: int) -> DataFrame:
    """Fill an auto-id primary key (``auto_id_base + __id_offset + __row``) and set ``_ts`` for every row."""
    from pyspark.sql import functions as F

    pk = schema.primary_field
    out = rows
    if pk.auto_id:
        ids = F.lit(auto_id_base) + F.col(_OFFSET) + F.col(_ROW)
        out = out.withColumn(pk.name, ids.cast("string") if pk.dtype == DataType.VARCHAR else ids)
    return out.withColumn(TIMESTAMP_COLUMN, F.lit(import_ts).cast("bigint")).drop(_ROW, _OFFSET)


def route(rows: DataFrame, spec: ImportSpec) -> DataFrame:
    """Add ``__group``: ``(shard * partitions + partition) * buckets + bucket`` of every row.

    Shards follow the proxy's routing of the primary key, partitions the named
    partition or the partition key's hash, buckets split a shard evenly by key.
    """
    schema = spec.schema
    arrow = pa.schema([*schema.arrow_schema(), pa.field(GROUP, pa.int64())])
    shards, buckets = len(spec.vchannels), spec.buckets
    key_parts = list(spec.key_partitions)
    pk_name = schema.primary_field.name
    key_field = next((f.name for f in schema.fields if f.is_partition_key), None)
    schema_json = spec.schema_json

    def assign(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        local = CollectionSchema.from_json(schema_json)
        for batch in batches:
            table = from_spark(batch, local.arrow_schema())
            pks = table.column(pk_name)
            shard = shards_of(pks, shards)
            bucket = buckets_of(pks, shards, buckets)
            if key_parts and key_field is not None:
                part = shards_of(table.column(key_field), len(key_parts))
                nparts = len(key_parts)
            else:
                part = np.zeros(table.num_rows, dtype=np.int64)
                nparts = 1
            group = (shard * nparts + part) * buckets + bucket
            yield from to_spark(table.append_column(GROUP, pa.array(group, pa.int64())), arrow).to_batches()

    return rows.mapInArrow(assign, spark_ddl(arrow))


def group_count(spec: ImportSpec) -> int:
    """How many segment groups ``route`` can produce (the segment ids the coordinator reserves)."""
    return len(spec.vchannels) * max(1, len(spec.key_partitions)) * spec.buckets


def run_import(spark: SparkSession, spec: ImportSpec) -> JobResult:
    schema = spec.schema
    rows = with_keys(read_files(spark, spec), schema, import_ts=spec.import_ts, auto_id_base=spec.auto_id_base)
    routed = route(rows, spec)
    if group_count(spec) > spec.segment_id_count:
        raise ValueError(f"import needs {group_count(spec)} segment ids, {spec.segment_id_count} reserved")
    write = _writer(spec)
    ddl = (
        "segment_id bigint, partition_id bigint, vchannel string, rows bigint, manifest string, "
        "plan_id bigint, min_ts bigint, max_ts bigint"
    )
    outputs = outputs_from_rows(routed.groupBy(GROUP).applyInArrow(write, ddl).collect())
    total = sum(o.rows for o in outputs)
    log.info("import written", job=spec.job_id, rows=total, segments=len(outputs))
    return JobResult(job_id=spec.job_id, rows=total, outputs=tuple(outputs))


def _writer(spec: ImportSpec) -> Callable[[pa.Table], pa.Table]:  # a closure Spark pickles
    schema_json, uri, indexes = spec.schema_json, spec.storage_uri, spec.indexes
    vchannels, buckets, base = spec.vchannels, spec.buckets, spec.segment_id_base
    key_parts = list(spec.key_partitions)
    nparts = max(1, len(key_parts))
    default_partition, collection_id = spec.partition_id, spec.collection_id

    def write(table: pa.Table) -> pa.Table:
        schema = CollectionSchema.from_json(schema_json)
        group = int(table.column(GROUP)[0].as_py())
        shard, rest = divmod(group, nparts * buckets)
        part = rest // buckets
        partition_id = key_parts[part] if key_parts else default_partition
        rows = from_spark(table, schema.arrow_schema())
        out = write_segment(
            ObjectStore.from_uri(uri),
            schema,
            rows,
            collection_id=collection_id,
            partition_id=partition_id,
            segment_id=base + group,
            vchannel=vchannels[shard],
            indexes=indexes,
        )
        return pa.Table.from_batches([output_batch([out])])

    return write


__all__ = ["GROUP", "group_count", "read_files", "route", "run_import", "with_keys"]
