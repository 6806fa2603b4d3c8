"""Binary vectors through the offline jobs: import (Parquet, JSON, NumPy) validated and stored bit-exact, and a
mix compaction that keeps them and builds their BIN_IVF_FLAT index where a worker finds it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from common.schema import TIMESTAMP_COLUMN, CollectionSchema, DataType, FieldSchema
from common.storage.objectstore import ObjectStore
from jobs.bulk_import import run_import
from jobs.compaction import run_compaction
from jobs.conform import ImportFileError, conform
from jobs.plans import CompactionSpec, ImportSpec, IndexRef, MixPlan
from jobs.sources import describe_files
from jobs.sparktypes import from_spark, spark_ddl, to_spark
from segcore.index.field_specs import field_index_spec
from segcore.index.spec import IndexKind
from segcore.index.store import load_index
from tests.jobs.util import COLLECTION, PARTITION, VCHANNEL, read_segment, write_l0, write_l1

pytestmark = pytest.mark.timeout(300)
DIM = 32  # 4 bytes
SCHEMA = CollectionSchema(
    name="b",
    fields=(
        FieldSchema(field_id=100, name="id", dtype=DataType.INT64, is_primary=True),
        FieldSchema(field_id=101, name="bits", dtype=DataType.BINARY_VECTOR, dim=DIM),
        FieldSchema(field_id=102, name="v", dtype=DataType.FLOAT_VECTOR, dim=2),
    ),
)
BIN_IVF = IndexRef(field_name="bits", index_id=21, params={"index_type": "BIN_IVF_FLAT", "metric_type": "JACCARD",
                                                           "params": '{"nlist": 4}'})


def codes(ids: Any) -> np.ndarray:
    """Deterministic codes: key ``k`` always has the same 4 bytes."""
    return np.stack([np.random.default_rng(int(k)).integers(0, 256, DIM // 8, dtype=np.uint8) for k in ids])


def stored(ids: range, ts: int) -> pa.Table:
    n = len(ids)
    return pa.table(
        {
            "id": pa.array(list(ids), pa.int64()),
            "bits": pa.array([c.tobytes() for c in codes(ids)], pa.binary(DIM // 8)),
            "v": pa.FixedSizeListArray.from_arrays(pa.array(np.zeros(2 * n, np.float32)), 2),
            TIMESTAMP_COLUMN: pa.array([ts] * n, pa.uint64()),
        }
    )


def test_conform_takes_bytes_and_lists_of_byte_values_and_names_bad_rows() -> None:
    ids = range(3)
    want = [c.tobytes() for c in codes(ids)]
    v = pa.array([[0.0, 0.0]] * 3, pa.list_(pa.float32()))
    for column in (
        pa.array(want, pa.binary()),
        pa.array(want, pa.binary(4)),
        pa.array([list(c) for c in codes(ids)], pa.list_(pa.uint8())),
        pa.array([list(c) for c in codes(ids)], pa.list_(pa.int64())),
    ):
        table = conform({"id": pa.array(list(ids)), "bits": column, "v": v}, 3, SCHEMA, file="f")
        assert table.schema.field("bits").type == pa.binary(4)
        assert table.column("bits").to_pylist() == want
    with pytest.raises(ImportFileError, match="file f, field bits: binary vector at row 1 has 3 bytes"):
        conform({"id": pa.array(list(ids)), "bits": pa.array([b"abcd", b"abc", b"abcd"]), "v": v}, 3, SCHEMA, file="f")
    with pytest.raises(ImportFileError, match="row 2 holds a byte value outside"):
        cells = [[1, 2, 3, 4], [0, 0, 0, 0], [1, 2, 300, 4]]
        conform({"id": pa.array(list(ids)), "bits": pa.array(cells), "v": v}, 3, SCHEMA, file="f")
    with pytest.raises(ImportFileError, match="a column of type list<item: double> cannot hold BINARY_VECTOR"):
        conform({"id": pa.array(list(ids)), "bits": pa.array([[0.5] * 4] * 3), "v": v}, 3, SCHEMA, file="f")


def test_rows_round_trip_through_spark_types(spark: Any) -> None:
    table = stored(range(5), 1 << 40)
    df = spark.createDataFrame(to_spark(table).to_pylist(), spark_ddl(table.schema))
    back = from_spark(pa.Table.from_pylist([r.asDict() for r in df.collect()]), SCHEMA.arrow_schema())
    assert back.equals(table.cast(SCHEMA.arrow_schema()))


def _import(spark: Any, root: Path, files: list[str]) -> dict[int, int]:
    uri = (root / "store").as_uri()
    spec = ImportSpec(
        job_id=1, storage_uri=uri, collection_id=COLLECTION, schema_json=SCHEMA.to_json(), vchannels=(VCHANNEL,),
        partition_id=PARTITION, files=tuple(describe_files(files, SCHEMA, uri)), import_ts=9 << 18,
        auto_id_base=0, buckets=1, segment_id_base=300, segment_id_count=1, indexes=(BIN_IVF,),
    )
    result = run_import(spark, spec)
    assert not result.error, result.error
    store = ObjectStore.from_uri(uri)
    got: dict[int, bytes] = {}
    for out in result.outputs:
        table = read_segment(store, out.manifest, SCHEMA)
        got.update(zip(table.column("id").to_pylist(), table.column("bits").to_pylist(), strict=True))
        matrix = np.frombuffer(b"".join(table.column("bits").to_pylist()), np.uint8).reshape(-1, DIM // 8)
        spec_ = field_index_spec("bits", 21, BIN_IVF.params, binary=True).spec
        assert load_index(store, COLLECTION, out.segment_id, 21, 101, spec_, matrix) is not None
    assert got == {i: codes([i])[0].tobytes() for i in got}
    return {i: len(b) for i, b in got.items()}


def test_parquet_json_and_numpy_imports_store_the_codes(spark: Any, tmp_path: Path) -> None:
    parquet = tmp_path / "p.parquet"
    pq.write_table(
        pa.table({
            "id": pa.array(range(0, 40), pa.int64()),
            "bits": pa.array([list(c) for c in codes(range(0, 40))], pa.list_(pa.uint8())),
            "v": pa.array([[0.0, 1.0]] * 40, pa.list_(pa.float32())),
        }),
        parquet,
    )
    raw = tmp_path / "raw.parquet"
    pq.write_table(pa.table({"id": pa.array([40, 41], pa.int64()),
                             "bits": pa.array([c.tobytes() for c in codes([40, 41])], pa.binary()),
                             "v": pa.array([[0.0, 1.0]] * 2, pa.list_(pa.float32()))}), raw)
    assert len(_import(spark, tmp_path / "a", [str(parquet), str(raw)])) == 42

    doc = tmp_path / "rows.json"
    doc.write_text(json.dumps({"rows": [{"id": i, "bits": codes([i])[0].tolist(), "v": [0, 1]} for i in range(50, 60)]}))
    assert sorted(_import(spark, tmp_path / "b", [str(doc)])) == list(range(50, 60))

    npy = tmp_path / "npy"
    npy.mkdir()
    np.save(npy / "id.npy", np.arange(70, 90, dtype=np.int64))
    np.save(npy / "bits.npy", codes(range(70, 90)))
    np.save(npy / "v.npy", np.zeros((20, 2), np.float32))
    assert sorted(_import(spark, tmp_path / "c", [str(npy / n) for n in ("id.npy", "bits.npy", "v.npy")])) == list(
        range(70, 90)
    )
    np.save(npy / "bits.npy", codes(range(70, 90)).astype(np.int32))
    with pytest.raises(ImportFileError, match=r"binary vectors must be a \(rows, 4\) uint8 array"):
        describe_files([str(npy / n) for n in ("id.npy", "bits.npy", "v.npy")], SCHEMA, (tmp_path / "d").as_uri())


def test_a_mix_compaction_keeps_the_codes_and_builds_their_index(spark: Any, tmp_path: Path) -> None:
    store = ObjectStore.from_uri((tmp_path / "store").as_uri())
    a = write_l1(store, 1, [stored(range(0, 200), 100)], SCHEMA)
    b = write_l1(store, 2, [stored(range(200, 400), 200)], SCHEMA)
    l0 = write_l0(store, 3, list(range(0, 400, 4)), 300)
    plan = MixPlan(plan_id=2, vchannel=VCHANNEL, partition_id=PARTITION, inputs=(a, b), deletes=(l0,),
                   target_rows=150, segment_id_base=900, segment_id_count=3)
    spec = CompactionSpec(job_id=1, storage_uri=store.uri, collection_id=COLLECTION, schema_json=SCHEMA.to_json(),
                          mix=(plan,), indexes=(BIN_IVF,))
    result = run_compaction(spark, spec)
    assert not result.error
    kept: list[int] = []
    for out in result.outputs:
        table = read_segment(store, out.manifest, SCHEMA)
        ids = table.column("id").to_pylist()
        assert table.column("bits").to_pylist() == [c.tobytes() for c in codes(ids)]
        matrix = np.frombuffer(b"".join(table.column("bits").to_pylist()), np.uint8).reshape(-1, DIM // 8)
        index_spec = field_index_spec("bits", 21, BIN_IVF.params, binary=True).spec
        index = load_index(store, COLLECTION, out.segment_id, 21, 101, index_spec, matrix)
        assert index is not None and index.kind is IndexKind.BIN_IVF_FLAT
        kept.extend(ids)
    assert sorted(kept) == sorted(set(range(400)) - set(range(0, 400, 4)))
