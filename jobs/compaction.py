"""Compaction on Spark: mix compaction (merge segments, drop deleted and expired rows) and L0 delete folding.

The transformations are pure (``DataFrame -> DataFrame``, no I/O) and tested on
a local session:

* ``survivors(rows, deletes, pk=..., expire_before=...)``: rows no delete removes
  (a delete of the key with a larger timestamp), not expired (``_ts`` at least
  ``expire_before``), and only the newest version of each key (every row of it when
  one insert named the key twice);
* ``range_outputs(rows, n, pk=...)``: ``n`` partitions of contiguous key ranges, one
  output segment each;
* ``l0_hits(keys, deletes, pk=...)``: for each target segment, the newest delete of
  each of its keys that removes at least one of its rows, and how many rows it removes.

Deletes are partition-scoped as in Milvus: an L0 segment's partition is the one its
deletes named (``ALL_PARTITIONS``: every one), and a target gets only the deletes of
its partition and of every partition; a mix plan (one partition) is given only those
L0 segments by the coordinator.

``run_compaction`` wires them to ``segments`` (reading inputs, writing outputs)
for every plan of a ``CompactionSpec``; ``jobs/main.py`` is the
``spark-submit`` entry point. The job never touches metadata: the coordinator
commits what it returns.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import structlog

from common.schema import TIMESTAMP_COLUMN, CollectionSchema
from common.storage.layout import ALL_PARTITIONS
from common.storage.objectstore import ObjectStore
from common.storage.segment_io import DELTA_PK_COLUMN, DELTA_TS_COLUMN, SegmentReader, SegmentWriter
from jobs.plans import CompactionSpec, JobResult, L0Plan, MixPlan, OutputSegment, SegmentRef, TargetUpdate
from jobs.segments import (
    output_batch,
    output_ddl,
    outputs_from_rows,
    read_deletes,
    read_rows,
    write_segment,
)
from jobs.sparktypes import from_spark, rows_schema

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = structlog.get_logger().bind(component="compaction-job")

_DEL_PK = "__del_pk"
_DEL_TS = "__del_ts"
_RANK = "__rank"


def latest_deletes(deletes: DataFrame) -> DataFrame:
    """The newest delete of each key (``__del_pk``, ``__del_ts``): it removes every older row of the key."""
    from pyspark.sql import functions as F

    return deletes.groupBy(DELTA_PK_COLUMN).agg(F.max(DELTA_TS_COLUMN).alias(_DEL_TS)).withColumnRenamed(
        DELTA_PK_COLUMN, _DEL_PK
    )


def survivors(rows: DataFrame, deletes: DataFrame, *, pk: str, expire_before: int = 0) -> DataFrame:
    """The rows of ``rows`` a reader could still see once every delete and the TTL apply.

    A row goes when a delete of its key has a larger timestamp (a delete at ``T`` hides
    rows inserted before ``T``, never at ``T``), when its ``_ts`` is below
    ``expire_before`` (0: no TTL), or when a newer version of its key is in ``rows``
    (``rows`` are of one partition). Rows of a key with the same ``_ts`` (one insert
    naming the key twice) all stay: Milvus's compaction does not merge them either, and
    ``count(*)`` keeps counting them. The columns are those of ``rows``.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    latest = latest_deletes(deletes)
    joined = rows.join(latest, rows[pk] == latest[_DEL_PK], "left")
    kept = joined.where(F.col(_DEL_TS).isNull() | (F.col(_DEL_TS) <= F.col(TIMESTAMP_COLUMN)))
    if expire_before:
        kept = kept.where(F.col(TIMESTAMP_COLUMN) >= F.lit(expire_before))
    newest_first = Window.partitionBy(pk).orderBy(F.col(TIMESTAMP_COLUMN).desc())
    ranked = kept.withColumn(_RANK, F.rank().over(newest_first))
    return ranked.where(F.col(_RANK) == 1).select(*rows.columns)


def range_outputs(rows: DataFrame, n: int, *, pk: str) -> DataFrame:
    """``rows`` in ``n`` partitions of contiguous primary-key ranges (partition ``i`` = output ``i``)."""
    return rows.repartitionByRange(max(1, n), pk)


def l0_hits(keys: DataFrame, deletes: DataFrame, *, pk: str) -> DataFrame:
    """Deletes that remove rows of each target: ``segment_id``, ``pk``, ``ts``, ``rows``.

    ``keys`` has ``segment_id``, the key column ``pk`` and ``_ts`` of every target row.
    One result row per (segment, key) that loses at least one row: the newest delete
    of the key (it removes every older row) and how many rows of the segment it removes.
    """
    from pyspark.sql import functions as F

    latest = latest_deletes(deletes)
    hit = keys.join(latest, keys[pk] == latest[_DEL_PK], "inner").where(F.col(_DEL_TS) > F.col(TIMESTAMP_COLUMN))
    return hit.groupBy("segment_id", _DEL_PK).agg(
        F.max(_DEL_TS).alias(DELTA_TS_COLUMN), F.count(F.lit(1)).alias("rows")
    ).withColumnRenamed(_DEL_PK, DELTA_PK_COLUMN)


# -- running the plans of a spec ------------------------------------------------------------------


def run_compaction(spark: SparkSession, spec: CompactionSpec) -> JobResult:
    """Carry out every plan of ``spec`` (L0 plans first); the outputs are complete when this returns."""
    outputs: list[OutputSegment] = []
    targets: list[TargetUpdate] = []
    rows = 0
    for l0 in spec.l0:
        targets.extend(run_l0(spark, spec, l0))
    for mix in spec.mix:
        done = run_mix(spark, spec, mix)
        outputs.extend(done)
        rows += sum(o.rows for o in done)
    return JobResult(job_id=spec.job_id, rows=rows, outputs=tuple(outputs), targets=tuple(targets))


def run_mix(spark: SparkSession, spec: CompactionSpec, plan: MixPlan) -> list[OutputSegment]:
    schema = spec.schema
    pk = schema.primary_field.name
    rows = read_rows(spark, spec.storage_uri, schema, plan.inputs)
    deletes = read_deletes(spark, spec.storage_uri, schema, (*plan.inputs, *plan.deletes))
    kept = survivors(rows, deletes, pk=pk, expire_before=plan.expire_before)
    # Sized by the input rows (no extra pass to count the survivors): at most one output per
    # target size of input, fewer when deletes emptied key ranges.
    total = sum(ref.rows for ref in plan.inputs) or kept.count()
    n = min(plan.segment_id_count, max(1, math.ceil(total / max(1, plan.target_rows))))
    parts = range_outputs(kept, n, pk=pk)
    write = _mix_writer(spec, plan)
    written = outputs_from_rows(parts.mapInArrow(write, output_ddl()).collect())
    log.info("mix plan written", plan=plan.plan_id, inputs=len(plan.inputs), rows=sum(o.rows for o in written),
             outputs=[o.segment_id for o in written])
    return written


def _mix_writer(
    spec: CompactionSpec, plan: MixPlan
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:  # a closure Spark pickles
    schema_json, uri, indexes = spec.schema_json, spec.storage_uri, spec.indexes
    collection_id = spec.collection_id

    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        schema = CollectionSchema.from_json(schema_json)
        arrow = rows_schema(schema)
        parts = [from_spark(b, arrow) for b in batches if b.num_rows]
        if not parts:
            return
        context = TaskContext.get()
        index = context.partitionId() if context is not None else 0
        if index >= plan.segment_id_count:
            raise RuntimeError(f"output {index} is beyond the {plan.segment_id_count} segment ids of the plan")
        out = write_segment(
            ObjectStore.from_uri(uri),
            schema,
            pa.concat_tables(parts),
            collection_id=collection_id,
            partition_id=plan.partition_id,
            segment_id=plan.segment_id_base + index,
            vchannel=plan.vchannel,
            indexes=indexes,
            plan_id=plan.plan_id,
        )
        yield output_batch([out])

    return write


def run_l0(spark: SparkSession, spec: CompactionSpec, plan: L0Plan) -> list[TargetUpdate]:
    """Fold the L0 deletes into the targets: each target gets the deletes of its partition and of
    every partition (an L0 segment's partition is the one its deletes named)."""
    updates: list[TargetUpdate] = []
    partitions = sorted({ref.partition_id for ref in plan.targets})
    for partition in partitions:
        l0 = [ref for ref in plan.l0 if ref.partition_id in (partition, ALL_PARTITIONS)]
        targets = [ref for ref in plan.targets if ref.partition_id == partition]
        if l0:
            updates.extend(_run_l0_partition(spark, spec, plan, l0, targets))
    log.info("l0 plan written", plan=plan.plan_id, l0=len(plan.l0), targets=len(plan.targets),
             touched=sorted(u.segment_id for u in updates))
    return sorted(updates, key=lambda u: u.segment_id)


def _run_l0_partition(
    spark: SparkSession, spec: CompactionSpec, plan: L0Plan, l0: list[SegmentRef], targets: list[SegmentRef]
) -> list[TargetUpdate]:
    from pyspark.sql import functions as F

    schema = spec.schema
    pk = schema.primary_field.name
    keyed = [
        read_rows(spark, spec.storage_uri, schema, [ref], columns=[pk, TIMESTAMP_COLUMN]).withColumn(
            "segment_id", F.lit(ref.segment_id).cast("bigint")
        )
        for ref in targets
    ]
    keys = keyed[0]
    for more in keyed[1:]:
        keys = keys.unionByName(more)
    hits = l0_hits(keys, read_deletes(spark, spec.storage_uri, schema, l0), pk=pk)
    ddl = "plan_id bigint, segment_id bigint, manifest string, deleted_rows bigint"
    rows = hits.groupBy("segment_id").applyInArrow(_l0_writer(spec, plan), ddl).collect()
    return [
        TargetUpdate(
            plan_id=int(r["plan_id"]),
            segment_id=int(r["segment_id"]),
            manifest=str(r["manifest"]),
            deleted_rows=int(r["deleted_rows"]),
        )
        for r in rows
    ]


def _l0_writer(spec: CompactionSpec, plan: L0Plan) -> Callable[[pa.Table], pa.Table]:  # a closure Spark pickles
    schema_json, uri, collection_id = spec.schema_json, spec.storage_uri, spec.collection_id
    position = {ref.segment_id: i for i, ref in enumerate(plan.targets)}
    refs = {ref.segment_id: ref for ref in plan.targets}

    def write(table: pa.Table) -> pa.Table:
        schema = CollectionSchema.from_json(schema_json)
        store = ObjectStore.from_uri(uri)
        segment_id = int(table.column("segment_id")[0].as_py())
        ref = refs[segment_id]
        current = SegmentReader(store, schema).read_manifest(ref.manifest)
        delta = SegmentWriter(store, schema).write_delta_log(
            collection_id=collection_id,
            partition_id=ref.partition_id,
            segment_id=segment_id,
            log_id=plan.log_id_base + position[segment_id],
            pks=table.column(DELTA_PK_COLUMN),
            ts=np.asarray(table.column(DELTA_TS_COLUMN).to_numpy(), dtype=np.uint64),
        )
        path = SegmentWriter(store, schema).write_manifest(current.with_delta_log(delta))
        return pa.table(
            {
                "plan_id": pa.array([plan.plan_id], pa.int64()),
                "segment_id": pa.array([segment_id], pa.int64()),
                "manifest": pa.array([path], pa.string()),
                "deleted_rows": pa.array([int(pc.sum(table.column("rows")).as_py() or 0)], pa.int64()),
            }
        )

    return write


__all__ = ["l0_hits", "latest_deletes", "range_outputs", "run_compaction", "survivors"]
