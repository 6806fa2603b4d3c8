"""Segment files end to end, on both backends: write insert/delta/stats logs and manifests, read them back."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from common.errors import InvalidArgument, StrataError
from common.schema import TIMESTAMP_COLUMN, CollectionSchema, DataType, FieldSchema
from common.storage import (
    ALL_PARTITIONS,
    CorruptObject,
    ObjectNotFound,
    ObjectStore,
    SegmentLevel,
    SegmentManifest,
    SegmentReader,
    SegmentWriter,
    segment_prefixes,
)
from tests.common.storage.segment_data import full_schema, pk_array, rows_table

COLL, PART, SEG = 11, 22, 33


def _write_segment(
    store: ObjectStore, schema: CollectionSchema, batches: list[pa.Table]
) -> tuple[SegmentManifest, str]:
    writer = SegmentWriter(store, schema)
    manifest = SegmentManifest(
        segment_id=SEG, collection_id=COLL, partition_id=PART, vchannel="strata-dml_0_11v0", level=SegmentLevel.L1
    )
    for log_id, batch in enumerate(batches, start=1):
        log, stats_path = writer.write_insert_log(
            collection_id=COLL, partition_id=PART, segment_id=SEG, log_id=log_id, table=batch
        )
        manifest = manifest.with_insert_log(log, stats_path)
    return manifest, writer.write_manifest(manifest)


@pytest.mark.parametrize("pk_type", [DataType.INT64, DataType.VARCHAR])
def test_insert_logs_round_trip_every_type(store: ObjectStore, pk_type: DataType) -> None:
    schema = full_schema(pk_type=pk_type)
    batches = [
        rows_table(schema, start=0, rows=50, ts0=100),
        rows_table(schema, start=50, rows=7, ts0=200),
        rows_table(schema, start=57, rows=30, ts0=300),
    ]
    manifest, path = _write_segment(store, schema, batches)
    assert path == f"manifests/{COLL}/{PART}/{SEG}/000000000003.json"

    reader = SegmentReader(store, schema)
    loaded = reader.read_manifest(path)
    assert loaded == manifest and loaded.rows == 87
    table = reader.read_inserts(loaded)
    expected = pa.concat_tables(batches)
    assert table.schema == schema.arrow_schema()
    assert table.equals(expected)
    assert table.column("i16").null_count == 17 + 3 + 10 and table.column("$meta").null_count > 0

    log = loaded.insert_logs[1]
    assert (log.rows, log.min_ts, log.max_ts) == (7, 200, 206)
    assert sorted(log.files) == [0, 103, 111]
    assert reader.latest_manifest_path(COLL, PART, SEG) == path


def test_column_projection_reads_only_the_needed_groups(store: ObjectStore) -> None:
    schema = full_schema()
    batches = [rows_table(schema, start=0, rows=20), rows_table(schema, start=20, rows=5)]
    manifest, _ = _write_segment(store, schema, batches)
    reader = SegmentReader(store, schema)
    expected = pa.concat_tables(batches)

    scalars = reader.read_inserts(manifest, columns=["name", "pk"])
    assert scalars.column_names == ["pk", "name"]  # schema order
    assert scalars.equals(expected.select(["pk", "name"]))

    # Without the scalar group's files, vectors alone still read: group 0 is not touched.
    for log in manifest.insert_logs:
        store.delete(log.files[0])
    vectors = reader.read_inserts(manifest, columns=["vec2"])
    assert vectors.equals(expected.select(["vec2"]))
    with pytest.raises(InvalidArgument, match="nope"):
        reader.read_inserts(manifest, columns=["nope"])


def test_parquet_files_carry_field_ids(store: ObjectStore) -> None:
    schema = full_schema()
    manifest, _ = _write_segment(store, schema, [rows_table(schema, start=0, rows=3)])
    files = manifest.insert_logs[0].files
    group0 = pq.read_schema(pa.BufferReader(store.read_bytes(files[0])))
    ids = {f.name: int(f.metadata[b"PARQUET:field_id"]) for f in group0}
    assert ids == {
        "pk": 100,
        TIMESTAMP_COLUMN: 1,
        "flag": 101,
        "i8": 102,
        "i16": 104,
        "i32": 105,
        "i64": 106,
        "f32": 107,
        "f64": 108,
        "name": 109,
        "doc": 110,
        "tags": 113,
        "nums": 114,
        "$meta": 112,
    }
    vec = pq.read_schema(pa.BufferReader(store.read_bytes(files[103])))
    assert vec.names == ["vec"] and vec.field("vec").metadata[b"PARQUET:field_id"] == b"103"
    # The Parquet schema itself (what Spark sees) has the ids, not only the Arrow metadata.
    parquet_schema = pq.ParquetFile(pa.BufferReader(store.read_bytes(files[0]))).schema
    assert "field_id=100 pk" in str(parquet_schema) and "field_id=1 _ts" in str(parquet_schema)


def test_stats_logs_describe_each_insert_log(store: ObjectStore) -> None:
    schema = full_schema(pk_type=DataType.VARCHAR)
    batches = [rows_table(schema, start=0, rows=40), rows_table(schema, start=1000, rows=10)]
    manifest, _ = _write_segment(store, schema, batches)
    stats = SegmentReader(store, schema).read_stats(manifest)
    assert [s.rows for s in stats] == [40, 10]
    assert stats[1].min_pk == "pk-1000-ü" and stats[1].max_pk == "pk-1009-ü"
    assert stats[0].may_contain(pk_array(schema, 0, 40)).all()
    assert not stats[0].may_contain(pa.array(["zzz", "a"])).any()


def test_delta_logs_round_trip_in_an_l0_segment(store: ObjectStore) -> None:
    schema = full_schema()
    writer = SegmentWriter(store, schema)
    manifest = SegmentManifest(
        segment_id=SEG, collection_id=COLL, partition_id=ALL_PARTITIONS, vchannel="v", level=SegmentLevel.L0
    )
    batches = [
        (pa.array([5, 1, 5], pa.int32()), np.array([10, 11, 12], dtype=np.int64)),
        (pa.chunked_array([[7], [8]], pa.int64()), np.array([2**63 + 1, 2**63 + 2], dtype=np.uint64)),
    ]
    for log_id, (pks, ts) in enumerate(batches, start=1):
        log = writer.write_delta_log(
            collection_id=COLL, partition_id=ALL_PARTITIONS, segment_id=SEG, log_id=log_id, pks=pks, ts=ts
        )
        manifest = manifest.with_delta_log(log)
    path = writer.write_manifest(manifest)
    assert path == f"manifests/{COLL}/-1/{SEG}/000000000002.json"
    assert manifest.delta_logs[1].path == f"delta_log/{COLL}/-1/{SEG}/2.parquet"
    assert (manifest.delta_logs[1].min_ts, manifest.delta_logs[1].max_ts) == (2**63 + 1, 2**63 + 2)

    reader = SegmentReader(store, schema)
    deltas = reader.read_deltas(reader.read_manifest(path))
    assert deltas.schema.names == ["pk", "ts"]
    assert deltas.schema.field("pk").type == pa.int64() and deltas.schema.field("ts").type == pa.uint64()
    assert deltas.column("pk").to_pylist() == [5, 1, 5, 7, 8]
    assert deltas.column("ts").to_pylist() == [10, 11, 12, 2**63 + 1, 2**63 + 2]
    assert reader.read_inserts(manifest).num_rows == 0
    assert reader.read_stats(manifest) == []

    file_schema = pq.read_schema(pa.BufferReader(store.read_bytes(manifest.delta_logs[0].path)))
    assert [f.metadata[b"PARQUET:field_id"] for f in file_schema] == [b"100", b"1"]


def test_varchar_deltas(store: ObjectStore) -> None:
    schema = full_schema(pk_type=DataType.VARCHAR)
    log = SegmentWriter(store, schema).write_delta_log(
        collection_id=1, partition_id=2, segment_id=3, log_id=4, pks=pa.array(["a", "ü"]), ts=[3, 4]
    )
    manifest = SegmentManifest(segment_id=3, collection_id=1, partition_id=2, vchannel="v", level=SegmentLevel.L1)
    deltas = SegmentReader(store, schema).read_deltas(manifest.with_delta_log(log))
    assert deltas.column("pk").to_pylist() == ["a", "ü"]


def test_missing_files_raise_errors_naming_them(store: ObjectStore) -> None:
    schema = full_schema()
    manifest, path = _write_segment(store, schema, [rows_table(schema, start=0, rows=5)])
    reader = SegmentReader(store, schema)
    vec_file = manifest.insert_logs[0].files[103]
    store.delete(vec_file)
    with pytest.raises(ObjectNotFound, match=vec_file) as err:
        reader.read_inserts(manifest)
    assert isinstance(err.value, StrataError)
    reader.read_inserts(manifest, columns=["pk"])  # group 0 is still there

    store.delete(manifest.stats_logs[0])
    with pytest.raises(ObjectNotFound, match=manifest.stats_logs[0]):
        reader.read_stats(manifest)

    store.delete(path)
    with pytest.raises(ObjectNotFound, match=path):
        reader.read_manifest(path)


def test_inconsistent_files_are_corrupt(store: ObjectStore) -> None:
    schema = full_schema()
    manifest, path = _write_segment(store, schema, [rows_table(schema, start=0, rows=5)])
    reader = SegmentReader(store, schema)
    group0 = manifest.insert_logs[0].files[0]

    store.write_bytes(group0, b"not parquet at all")
    with pytest.raises(CorruptObject, match=group0):
        reader.read_inserts(manifest, columns=["pk"])
    store.write_parquet(group0, rows_table(schema, start=0, rows=4).select(["pk", TIMESTAMP_COLUMN]))
    with pytest.raises(CorruptObject, match="4 rows"):
        reader.read_inserts(manifest, columns=["pk"])
    with pytest.raises(CorruptObject, match=group0):
        reader.read_inserts(manifest, columns=["name"])  # the file lacks the column

    store.write_bytes(manifest.stats_logs[0], b"garbage")
    with pytest.raises(CorruptObject, match=manifest.stats_logs[0]):
        reader.read_stats(manifest)
    store.write_bytes(path, b"{}")
    with pytest.raises(CorruptObject, match=path):
        reader.read_manifest(path)


def test_bad_insert_tables_are_refused(store: ObjectStore) -> None:
    schema = full_schema()
    writer = SegmentWriter(store, schema)
    good = rows_table(schema, start=0, rows=4)
    ids = {"collection_id": 1, "partition_id": 2, "segment_id": 3, "log_id": 4}

    def write(table: pa.Table) -> None:
        writer.write_insert_log(**ids, table=table)

    with pytest.raises(InvalidArgument, match="missing"):
        write(good.drop_columns(["i8"]))
    with pytest.raises(InvalidArgument, match="unexpected"):
        write(good.append_column("extra", pa.array([1, 2, 3, 4])))
    with pytest.raises(InvalidArgument, match="_ts order"):
        write(
            good.set_column(
                good.schema.get_field_index(TIMESTAMP_COLUMN), TIMESTAMP_COLUMN, pa.array([4, 3, 2, 1], pa.uint64())
            )
        )
    with pytest.raises(InvalidArgument, match="null"):
        write(good.set_column(good.schema.get_field_index("pk"), "pk", pa.array([1, None, 3, 4], pa.int64())))
    with pytest.raises(InvalidArgument, match="at least one row"):
        write(good.slice(0, 0))
    with pytest.raises(InvalidArgument, match="schema"):
        write(good.set_column(good.schema.get_field_index("i32"), "i32", pa.array(["a", "b", "c", "d"])))
    assert store.list("") == []  # nothing written by refused calls

    # Columns in another order and castable types are accepted.
    shuffled = good.select(list(reversed(good.column_names)))
    shuffled = shuffled.set_column(shuffled.schema.get_field_index("i8"), "i8", pc.cast(good.column("i8"), pa.int64()))
    log, _ = writer.write_insert_log(**ids, table=shuffled)
    assert log.rows == 4


def test_bad_deltas_are_refused(store: ObjectStore) -> None:
    writer = SegmentWriter(store, full_schema())
    ids = {"collection_id": 1, "partition_id": 2, "segment_id": 3, "log_id": 4}
    with pytest.raises(InvalidArgument):
        writer.write_delta_log(**ids, pks=pa.array([1, 2]), ts=np.array([1]))
    with pytest.raises(InvalidArgument):
        writer.write_delta_log(**ids, pks=pa.array([], pa.int64()), ts=np.array([], dtype=np.uint64))
    with pytest.raises(InvalidArgument):
        writer.write_delta_log(**ids, pks=pa.array([1]), ts=np.array([-1]))
    with pytest.raises(InvalidArgument):
        writer.write_delta_log(**ids, pks=pa.array([1, None]), ts=np.array([1, 2]))
    with pytest.raises(InvalidArgument):
        writer.write_delta_log(**ids, pks=pa.array(["x"]), ts=np.array([1]))


def test_dropping_a_segment_removes_all_its_files(store: ObjectStore) -> None:
    schema = full_schema()
    _write_segment(store, schema, [rows_table(schema, start=0, rows=3)])
    assert {e.path.split("/")[0] for e in store.list("")} == {"insert_log", "stats_log", "manifests"}
    for prefix in segment_prefixes(COLL, PART, SEG):
        store.delete_prefix(prefix)
    assert store.list("") == []


def test_schema_without_vectors_or_dynamic_field(store: ObjectStore) -> None:
    schema = CollectionSchema(
        name="plain",
        fields=(
            FieldSchema(field_id=100, name="id", dtype=DataType.VARCHAR, is_primary=True, max_length=8),
            FieldSchema(field_id=101, name="n", dtype=DataType.INT64),
        ),
    )
    table = pa.table(
        {"id": ["b", "a"], "n": [1, 2], TIMESTAMP_COLUMN: pa.array([5, 5], pa.uint64())}, schema=schema.arrow_schema()
    )
    manifest, _ = _write_segment(store, schema, [table])
    assert list(manifest.insert_logs[0].files) == [0]
    assert SegmentReader(store, schema).read_inserts(manifest).equals(table)
