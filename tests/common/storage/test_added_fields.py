"""Segments written before a field was added to the collection (``AddCollectionField``) read with it.

An added scalar field is a column its old files lack, an added vector field a column group
their insert logs name no file for: the reader fills both with the field's default value, or
nulls; a log written after the change has the values. A missing column of a field the
collection was created with stays a corrupt file.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pyarrow as pa
import pytest

from common.errors import InvalidArgument
from common.schema import TIMESTAMP_COLUMN, CollectionSchema, DataType, FieldSchema
from common.storage import CorruptObject, ObjectStore, SegmentLevel, SegmentManifest, SegmentReader, SegmentWriter

COLL, PART, SEG = 1, 2, 3


def _schema() -> CollectionSchema:
    return CollectionSchema(
        name="c",
        fields=(
            FieldSchema(field_id=100, name="pk", dtype=DataType.INT64, is_primary=True),
            FieldSchema(field_id=101, name="vec", dtype=DataType.FLOAT_VECTOR, dim=2),
            FieldSchema(field_id=102, name="tag", dtype=DataType.VARCHAR, max_length=8, nullable=True),
        ),
    )


def _added(schema: CollectionSchema) -> CollectionSchema:
    """``schema`` with a nullable INT32, a defaulted VARCHAR and a nullable vector field added."""
    new = (
        FieldSchema(field_id=103, name="score", dtype=DataType.INT32, nullable=True, added=True),
        FieldSchema(field_id=104, name="label", dtype=DataType.VARCHAR, max_length=8, nullable=True,
                    default_value="none", added=True),
        FieldSchema(field_id=105, name="vec2", dtype=DataType.FLOAT_VECTOR, dim=3, nullable=True, added=True),
    )
    return dataclasses.replace(schema, fields=(*schema.fields, *new), version=3)


def _rows(schema: CollectionSchema, start: int, n: int) -> pa.Table:
    cols: dict[str, pa.Array] = {
        "pk": pa.array(range(start, start + n), pa.int64()),
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(np.arange(2 * n, dtype=np.float32)), 2),
        "tag": pa.array([f"t{i}" for i in range(n)], pa.string()),
    }
    if schema.has_field("score"):
        cols["score"] = pa.array([i if i % 2 else None for i in range(n)], pa.int32())
        cols["label"] = pa.array([f"l{i}" for i in range(n)], pa.string())
        cols["vec2"] = pa.FixedSizeListArray.from_arrays(pa.array(np.ones(3 * n, dtype=np.float32)), 3)
    cols[TIMESTAMP_COLUMN] = pa.array(range(10 + start, 10 + start + n), pa.uint64())
    return pa.table(cols).cast(schema.arrow_schema())


def _write(store: ObjectStore, manifest: SegmentManifest, schema: CollectionSchema, log_id: int,
           table: pa.Table) -> SegmentManifest:
    writer = SegmentWriter(store, schema)
    log, stats = writer.write_insert_log(collection_id=COLL, partition_id=PART, segment_id=SEG, log_id=log_id,
                                         table=table)
    return manifest.with_insert_log(log, stats)


def _empty_manifest() -> SegmentManifest:
    return SegmentManifest(segment_id=SEG, collection_id=COLL, partition_id=PART, vchannel="v", level=SegmentLevel.L1)


def test_logs_from_before_an_added_field_read_it_as_default_or_null(store: ObjectStore) -> None:
    old, new = _schema(), _added(_schema())
    manifest = _write(store, _empty_manifest(), old, 1, _rows(old, 0, 3))  # before the change
    manifest = _write(store, manifest, new, 2, _rows(new, 3, 2))  # after it: the same segment goes on
    table = SegmentReader(store, new).read_inserts(manifest)
    assert table.schema == new.arrow_schema()
    assert table.column("pk").to_pylist() == [0, 1, 2, 3, 4]
    assert table.column("score").to_pylist() == [None, None, None, None, 1]
    assert table.column("label").to_pylist() == ["none", "none", "none", "l0", "l1"]
    assert table.column("vec2").to_pylist() == [None, None, None, [1.0] * 3, [1.0] * 3]
    assert table.column("tag").to_pylist() == ["t0", "t1", "t2", "t0", "t1"]
    # A selection of only added columns reads (and fills) without the others.
    only = SegmentReader(store, new).read_inserts(manifest, columns=["label", "vec2"])
    assert only.column_names == ["label", "vec2"] and only.num_rows == 5


def test_a_writer_fills_buffered_rows_that_predate_an_added_field(store: ObjectStore) -> None:
    """The flusher may write rows buffered under the old schema with the new one."""
    old, new = _schema(), _added(_schema())
    manifest = _write(store, _empty_manifest(), new, 1, _rows(old, 0, 2))
    table = SegmentReader(store, new).read_inserts(manifest)
    assert table.column("label").to_pylist() == ["none", "none"]
    assert table.column("vec2").null_count == 2
    with pytest.raises(InvalidArgument, match="missing"):  # a column of an original field is still required
        _write(store, _empty_manifest(), new, 2, _rows(old, 0, 2).drop_columns(["tag"]))


def test_a_missing_column_of_an_original_field_stays_corrupt(store: ObjectStore) -> None:
    old = _schema()
    manifest = _write(store, _empty_manifest(), old, 1, _rows(old, 0, 3))
    group0 = manifest.insert_logs[0].files[0]
    store.write_parquet(group0, _rows(old, 0, 3).select(["pk", TIMESTAMP_COLUMN]))  # lost "tag"
    with pytest.raises(CorruptObject, match=group0):
        SegmentReader(store, old).read_inserts(manifest, columns=["tag"])
    # Marked added, a field whose id is below a column the file has cannot postdate the file.
    tagged = dataclasses.replace(old, fields=(*old.fields[:2], dataclasses.replace(old.fields[2], added=True)))
    rewritten = _rows(old, 0, 3).append_column("later", pa.array([1, 2, 3]))
    schema = pa.schema([*rewritten.schema][:-1] + [pa.field("later", pa.int64(), metadata={b"PARQUET:field_id": b"200"})])
    store.write_parquet(group0, rewritten.drop_columns(["tag"]).cast(
        pa.schema([f for f in schema if f.name != "tag"])))
    with pytest.raises(CorruptObject, match=group0):
        SegmentReader(store, tagged).read_inserts(manifest, columns=["tag"])
