"""Compaction on a real local SparkSession: the pure transformations, then whole plans over real segment files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from common.storage.objectstore import ObjectStore
from common.storage.segment_io import SegmentReader
from jobs.compaction import l0_hits, range_outputs, run_compaction, survivors
from jobs.plans import CompactionSpec, IndexRef, L0Plan, MixPlan
from segcore.index.diskann_index import DiskannIndex
from segcore.index.faiss_index import FaissIndex
from segcore.index.field_specs import field_index_spec
from segcore.index.spec import IndexKind
from segcore.index.store import load_index
from tests.jobs.util import COLLECTION, PARTITION, VCHANNEL, read_segment, rows, schema, vectors, write_l0, write_l1

pytestmark = pytest.mark.timeout(300)


def _rows_df(spark: Any, data: list[tuple[int, int]]) -> Any:
    return spark.createDataFrame(data, "id bigint, _ts bigint")


def _deletes_df(spark: Any, data: list[tuple[int, int]]) -> Any:
    return spark.createDataFrame(data, "pk bigint, ts bigint")


def test_a_delete_removes_older_rows_of_its_key_only(spark: Any) -> None:
    rows_ = _rows_df(spark, [(1, 10), (2, 10), (3, 10), (4, 30)])
    deletes = _deletes_df(spark, [(1, 20), (2, 10), (3, 5), (4, 20), (9, 50)])
    got = sorted(tuple(r) for r in survivors(rows_, deletes, pk="id").collect())
    # 1: deleted after it was written; 2: a delete at the row's own ts hides nothing (upsert);
    # 3: deleted before it was written; 4: written again after its delete.
    assert got == [(2, 10), (3, 10), (4, 30)]


def test_only_the_newest_version_of_a_key_survives_and_ttl_drops_old_rows(spark: Any) -> None:
    rows_ = _rows_df(spark, [(1, 10), (1, 40), (2, 15), (3, 50)])
    got = sorted(tuple(r) for r in survivors(rows_, _deletes_df(spark, []), pk="id").collect())
    assert got == [(1, 40), (2, 15), (3, 50)]
    got = sorted(tuple(r) for r in survivors(rows_, _deletes_df(spark, []), pk="id", expire_before=20).collect())
    assert got == [(1, 40), (3, 50)]
    # A delete between the two versions removes the old one only; after both, the key is gone.
    got = sorted(tuple(r) for r in survivors(rows_, _deletes_df(spark, [(1, 20)]), pk="id").collect())
    assert got == [(1, 40), (2, 15), (3, 50)]
    got = sorted(tuple(r) for r in survivors(rows_, _deletes_df(spark, [(1, 41)]), pk="id").collect())
    assert got == [(2, 15), (3, 50)]


def test_rows_of_a_key_inserted_together_all_survive(spark: Any) -> None:
    # One insert naming key 1 twice: Milvus's compaction keeps both rows (count(*) keeps counting them).
    rows_ = _rows_df(spark, [(1, 10), (1, 40), (1, 40), (2, 15), (2, 15)])
    got = sorted(tuple(r) for r in survivors(rows_, _deletes_df(spark, []), pk="id").collect())
    assert got == [(1, 40), (1, 40), (2, 15), (2, 15)]
    got = sorted(tuple(r) for r in survivors(rows_, _deletes_df(spark, [(2, 20)]), pk="id").collect())
    assert got == [(1, 40), (1, 40)]


def test_range_outputs_are_disjoint_key_ranges(spark: Any) -> None:
    data = [(int(k), 1) for k in np.random.default_rng(3).permutation(1000)]
    parts = range_outputs(_rows_df(spark, data), 4, pk="id").rdd.glom().collect()
    assert len(parts) == 4 and sum(len(p) for p in parts) == 1000
    bounds = [(min(r[0] for r in p), max(r[0] for r in p)) for p in parts if p]
    assert all(hi < lo for (_, hi), (lo, _) in zip(bounds, bounds[1:], strict=False))
    assert all(150 < len(p) < 350 for p in parts), [len(p) for p in parts]


def test_l0_hits_keeps_the_newest_delete_per_key_and_counts_removed_rows(spark: Any) -> None:
    keys = spark.createDataFrame(
        [(1, 5, 10), (1, 6, 30), (2, 5, 10), (2, 5, 25), (3, 6, 10)], "segment_id bigint, id bigint, _ts bigint"
    )
    deletes = _deletes_df(spark, [(5, 20), (5, 28), (6, 20), (7, 99)])
    got = sorted(tuple(r) for r in l0_hits(keys, deletes, pk="id").select("segment_id", "pk", "ts", "rows").collect())
    # Segment 1: key 5 (ts 10) goes, key 6 (ts 30) is newer than every delete of it.
    # Segment 2: both versions of key 5 go. Key 7 is in no segment.
    assert got == [(1, 5, 28, 1), (2, 5, 28, 2), (3, 6, 20, 1)]


def _spec(tmp_path: Path, **kw: Any) -> CompactionSpec:
    return CompactionSpec(
        job_id=1, storage_uri=(tmp_path / "store").as_uri(), collection_id=COLLECTION, schema_json=schema().to_json(),
        **kw,
    )


def test_a_mix_plan_merges_segments_without_deleted_rows_and_builds_their_index(spark: Any, tmp_path: Path) -> None:
    store = ObjectStore.from_uri((tmp_path / "store").as_uri())
    a = write_l1(store, 1, [rows(range(0, 300), 100), rows(range(300, 600), 200)])
    b = write_l1(store, 2, [rows(range(600, 900), 300)])
    l0 = write_l0(store, 3, list(range(0, 900, 3)), 400)  # deletes a third of every segment
    late = write_l0(store, 4, [1, 2], 150)  # deletes rows 1, 2 (ts 100) only
    index = IndexRef(field_name="v", index_id=55, params={"index_type": "HNSW", "metric_type": "L2",
                                                           "params": '{"M": 8, "efConstruction": 40}'})
    plan = MixPlan(plan_id=9, vchannel=VCHANNEL, partition_id=PARTITION, inputs=(a, b), deletes=(l0, late),
                   target_rows=250, segment_id_base=1000, segment_id_count=4)
    result = run_compaction(spark, _spec(tmp_path, mix=(plan,), indexes=(index,)))
    assert not result.error
    expected = sorted(set(range(900)) - set(range(0, 900, 3)) - {1, 2})
    assert result.rows == len(expected) == sum(o.rows for o in result.outputs)
    assert 2 <= len(result.outputs) <= 4 and all(1000 <= o.segment_id < 1004 for o in result.outputs)
    got: list[int] = []
    previous_max = -1
    for out in result.outputs:
        assert out.plan_id == 9 and out.partition_id == PARTITION and out.vchannel == VCHANNEL
        table = read_segment(store, out.manifest)
        ids = table.column("id").to_pylist()
        assert min(ids) > previous_max  # outputs cover disjoint, increasing key ranges
        previous_max = max(ids)
        ts = table.column("_ts").to_numpy()
        assert (np.diff(ts.astype(np.int64)) >= 0).all()  # the segment format keeps rows in _ts order
        np.testing.assert_array_equal(np.stack(table.column("v").to_numpy(zero_copy_only=False)), vectors(ids))
        got.extend(ids)
        # The index a worker would build is there already, over the rows in stored order.
        spec = field_index_spec("v", 55, index.params).spec
        matrix = np.stack(table.column("v").to_numpy(zero_copy_only=False)).astype(np.float32)
        assert load_index(store, COLLECTION, out.segment_id, 55, 103, spec, matrix) is not None
    assert sorted(got) == expected


def test_compaction_outputs_get_a_faiss_index_from_the_same_factory(spark: Any, tmp_path: Path) -> None:
    store = ObjectStore.from_uri((tmp_path / "store").as_uri())
    a = write_l1(store, 1, [rows(range(0, 400), 100)])
    index = IndexRef(field_name="v", index_id=56, params={"index_type": "IVF_SQ8", "metric_type": "COSINE",
                                                           "params": '{"nlist": 64}'})
    plan = MixPlan(plan_id=3, vchannel=VCHANNEL, partition_id=PARTITION, inputs=(a,), deletes=(),
                   target_rows=400, segment_id_base=2000, segment_id_count=1)
    result = run_compaction(spark, _spec(tmp_path, mix=(plan,), indexes=(index,)))
    assert not result.error and len(result.outputs) == 1
    out = result.outputs[0]
    table = read_segment(store, out.manifest)
    matrix = np.stack(table.column("v").to_numpy(zero_copy_only=False)).astype(np.float32)
    spec = field_index_spec("v", 56, index.params).spec
    loaded = load_index(store, COLLECTION, out.segment_id, 56, 103, spec, matrix)
    assert isinstance(loaded, FaissIndex) and loaded.kind is IndexKind.IVF_SQ8
    assert loaded.structure is not None and loaded.structure.nlist == 400 // 39  # knowhere's nlist for 400 rows


def test_compaction_outputs_get_a_diskann_index_from_the_same_factory(spark: Any, tmp_path: Path) -> None:
    store = ObjectStore.from_uri((tmp_path / "store").as_uri())
    a = write_l1(store, 1, [rows(range(0, 400), 100)])
    index = IndexRef(field_name="v", index_id=57, params={"index_type": "DISKANN", "metric_type": "L2",
                                                           "params": '{"max_degree": 16}'})
    plan = MixPlan(plan_id=4, vchannel=VCHANNEL, partition_id=PARTITION, inputs=(a,), deletes=(),
                   target_rows=400, segment_id_base=2100, segment_id_count=1)
    result = run_compaction(spark, _spec(tmp_path, mix=(plan,), indexes=(index,)))
    assert not result.error and len(result.outputs) == 1
    out = result.outputs[0]
    table = read_segment(store, out.manifest)
    matrix = np.stack(table.column("v").to_numpy(zero_copy_only=False)).astype(np.float32)
    spec = field_index_spec("v", 57, index.params).spec
    loaded = load_index(store, COLLECTION, out.segment_id, 57, 103, spec, matrix)
    assert isinstance(loaded, DiskannIndex) and loaded.kind is IndexKind.DISKANN
    assert loaded.directory  # a disk index, not the exact search of a segment too small for one


def test_a_mix_plan_whose_rows_are_all_deleted_or_expired_writes_nothing(spark: Any, tmp_path: Path) -> None:
    store = ObjectStore.from_uri((tmp_path / "store").as_uri())
    a = write_l1(store, 1, [rows(range(0, 50), 100)])
    b = write_l1(store, 2, [rows(range(50, 100), 300)])
    l0 = write_l0(store, 3, list(range(0, 50)), 200)
    plan = MixPlan(plan_id=1, vchannel=VCHANNEL, partition_id=PARTITION, inputs=(a, b), deletes=(l0,),
                   expire_before=301, target_rows=100, segment_id_base=50, segment_id_count=2)
    result = run_compaction(spark, _spec(tmp_path, mix=(plan,)))
    assert not result.error and result.outputs == () and result.rows == 0


def test_an_l0_plan_writes_each_target_the_deletes_that_remove_its_rows(spark: Any, tmp_path: Path) -> None:
    store = ObjectStore.from_uri((tmp_path / "store").as_uri())
    a = write_l1(store, 1, [rows(range(0, 100), 100)])
    b = write_l1(store, 2, [rows(range(100, 200), 100), rows([5], 500)])  # key 5 again, written after the deletes
    c = write_l1(store, 3, [rows(range(200, 300), 100)])
    l0a = write_l0(store, 10, [5, 6, 150, 999], 300)
    l0b = write_l0(store, 11, [6, 151], [350, 50])  # 151's delete is older than its row
    plan = L0Plan(plan_id=4, vchannel=VCHANNEL, l0=(l0a, l0b), targets=(a, b, c), log_id_base=700)
    result = run_compaction(spark, _spec(tmp_path, l0=(plan,)))
    assert not result.error
    by_segment = {t.segment_id: t for t in result.targets}
    assert sorted(by_segment) == [1, 2]  # segment 3 loses nothing: no new delta log
    reader = SegmentReader(store, schema())
    m1 = reader.read_manifest(by_segment[1].manifest)
    assert m1.version == 2 and [d.log_id for d in m1.delta_logs] == [700]
    d1 = reader.read_deltas(m1)
    assert sorted(zip(d1.column("pk").to_pylist(), d1.column("ts").to_pylist(), strict=True)) == [(5, 300), (6, 350)]
    assert by_segment[1].deleted_rows == 2
    m2 = reader.read_manifest(by_segment[2].manifest)
    d2 = reader.read_deltas(m2)
    assert d2.column("pk").to_pylist() == [150] and m2.delta_logs[0].log_id == 701
    assert by_segment[2].deleted_rows == 1
    assert m2.rows == 101  # the rows are unchanged: deletes are applied by readers and by mix compaction


def test_an_l0_plan_gives_each_target_only_the_deletes_of_its_partition(spark: Any, tmp_path: Path) -> None:
    # As in Milvus: a delete naming a partition removes the key's rows there only.
    store = ObjectStore.from_uri((tmp_path / "store").as_uri())
    a = write_l1(store, 1, [rows(range(0, 10), 100)], partition=PARTITION)
    b = write_l1(store, 2, [rows(range(0, 10), 100)], partition=PARTITION + 1)
    here = write_l0(store, 10, [1, 2], 300, partition=PARTITION)
    there = write_l0(store, 11, [3], 300, partition=PARTITION + 1)
    everywhere = write_l0(store, 12, [4], 300)
    plan = L0Plan(plan_id=4, vchannel=VCHANNEL, l0=(here, there, everywhere), targets=(a, b), log_id_base=700)
    result = run_compaction(spark, _spec(tmp_path, l0=(plan,)))
    assert not result.error
    reader = SegmentReader(store, schema())
    deleted = {
        t.segment_id: sorted(reader.read_deltas(reader.read_manifest(t.manifest)).column("pk").to_pylist())
        for t in result.targets
    }
    assert deleted == {1: [1, 2, 4], 2: [3, 4]}


def test_rows_of_a_table_round_trip_through_spark_types(spark: Any) -> None:
    from jobs.sparktypes import from_spark, spark_ddl, to_spark

    table = rows(range(5), 1 << 60)
    df = spark.createDataFrame(to_spark(table).to_pylist(), spark_ddl(table.schema))
    back = from_spark(pa.Table.from_pylist([r.asDict() for r in df.collect()]), table.schema)
    assert back.equals(table)
