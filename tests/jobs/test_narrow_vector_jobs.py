"""FLOAT16, BFLOAT16 and INT8 vectors through the offline jobs: import (Parquet, JSON, NumPy) in the encodings
Milvus 2.6 takes (the rows' bytes or their values), stored bit-exact, and a mix compaction that keeps them and
builds their HNSW index."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from common.narrow_vectors import from_bytes
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
DIM = 8
SCHEMA = CollectionSchema(
    name="n",
    fields=(
        FieldSchema(field_id=100, name="id", dtype=DataType.INT64, is_primary=True),
        FieldSchema(field_id=101, name="f16", dtype=DataType.FLOAT16_VECTOR, dim=DIM),
        FieldSchema(field_id=102, name="b16", dtype=DataType.BFLOAT16_VECTOR, dim=DIM),
        FieldSchema(field_id=103, name="i8", dtype=DataType.INT8_VECTOR, dim=DIM),
    ),
)
HNSW = IndexRef(field_name="i8", index_id=31, params={"index_type": "HNSW", "metric_type": "IP",
                                                      "params": '{"M": 8, "efConstruction": 40}'})


def values(ids: Any) -> dict[str, np.ndarray]:
    """Deterministic rows per key: float16, bfloat16 (ml_dtypes) and int8."""
    rows = np.stack([np.random.default_rng(int(k)).standard_normal(DIM) for k in ids])
    ints = np.stack([np.random.default_rng(int(k) + 7).integers(-128, 128, DIM) for k in ids]).astype(np.int8)
    return {"f16": rows.astype(np.float16), "b16": rows.astype(ml_dtypes.bfloat16), "i8": ints}


def raw(ids: Any) -> dict[str, list[bytes]]:
    return {name: [r.tobytes() for r in matrix] for name, matrix in values(ids).items()}


def stored(ids: range, ts: int) -> pa.Table:
    cols: dict[str, Any] = {"id": pa.array(list(ids), pa.int64())}
    for f in SCHEMA.fields[1:]:
        cols[f.name] = pa.array(raw(ids)[f.name], pa.binary(f.code_size))
    cols[TIMESTAMP_COLUMN] = pa.array([ts] * len(ids), pa.uint64())
    return pa.table(cols)


def test_conform_takes_bytes_byte_values_and_values_and_names_bad_rows() -> None:
    ids = range(3)
    want, vals = raw(ids), values(ids)
    columns: list[dict[str, pa.Array]] = [
        {n: pa.array(want[n], pa.binary()) for n in want},
        {n: pa.array([list(np.frombuffer(b, np.uint8)) for b in want[n]], pa.list_(pa.uint8())) for n in ("f16", "b16")}
        | {"i8": pa.array([list(r) for r in vals["i8"]], pa.list_(pa.int8()))},
        {n: pa.array([r.astype(np.float32).tolist() for r in vals[n]], pa.list_(pa.float32())) for n in ("f16", "b16")}
        | {"i8": pa.array([r.tolist() for r in vals["i8"]], pa.list_(pa.int64()))},
    ]
    for cols in columns:
        table = conform({"id": pa.array(list(ids)), **cols}, 3, SCHEMA, file="f")
        for f in SCHEMA.fields[1:]:
            assert table.schema.field(f.name).type == pa.binary(f.code_size)
            assert table.column(f.name).to_pylist() == want[f.name], f.name
    ok = {"id": pa.array(list(ids)), **{n: pa.array(want[n], pa.binary()) for n in want}}
    with pytest.raises(ImportFileError, match="field f16: FLOAT16_VECTOR vector at row 1 has 15 bytes"):
        conform(ok | {"f16": pa.array([want["f16"][0], want["f16"][1][:-1], want["f16"][2]])}, 3, SCHEMA, file="f")
    with pytest.raises(ImportFileError, match="field i8: the vector at row 2 holds a value outside"):
        conform(ok | {"i8": pa.array([[0] * DIM, [1] * DIM, [0] * 7 + [200]])}, 3, SCHEMA, file="f")
    with pytest.raises(ImportFileError, match="field b16: NaN or Inf in the vector at row 0"):
        conform(ok | {"b16": pa.array([[float("nan")] * DIM] * 3)}, 3, SCHEMA, file="f")


def test_rows_round_trip_through_spark_types(spark: Any) -> None:
    table = stored(range(5), 1 << 40)
    df = spark.createDataFrame(to_spark(table).to_pylist(), spark_ddl(table.schema))
    back = from_spark(pa.Table.from_pylist([r.asDict() for r in df.collect()]), SCHEMA.arrow_schema())
    assert back.equals(table.cast(SCHEMA.arrow_schema()))


def _check_index(store: ObjectStore, segment_id: int, table: pa.Table) -> None:
    matrix = from_bytes(b"".join(table.column("i8").to_pylist()), DataType.INT8_VECTOR, DIM)
    spec = field_index_spec("i8", 31, HNSW.params).spec
    index = load_index(store, COLLECTION, segment_id, 31, 103, spec, matrix)
    assert index is not None and index.kind is IndexKind.HNSW
    hits = index.search(matrix[:3].astype(np.float32), 1)
    assert hits.rows.shape == (3, 1) and (hits.rows >= 0).all()


def _import(spark: Any, root: Path, files: list[str]) -> list[int]:
    uri = (root / "store").as_uri()
    spec = ImportSpec(
        job_id=1, storage_uri=uri, collection_id=COLLECTION, schema_json=SCHEMA.to_json(), vchannels=(VCHANNEL,),
        partition_id=PARTITION, files=tuple(describe_files(files, SCHEMA, uri)), import_ts=9 << 18,
        auto_id_base=0, buckets=1, segment_id_base=300, segment_id_count=1, indexes=(HNSW,),
    )
    result = run_import(spark, spec)
    assert not result.error, result.error
    store = ObjectStore.from_uri(uri)
    seen: list[int] = []
    for out in result.outputs:
        table = read_segment(store, out.manifest, SCHEMA)
        ids = table.column("id").to_pylist()
        for name, rows in raw(ids).items():
            assert table.column(name).to_pylist() == rows, name
        _check_index(store, out.segment_id, table)
        seen.extend(ids)
    return sorted(seen)


def test_parquet_json_and_numpy_imports_store_the_rows_bit_exact(spark: Any, tmp_path: Path) -> None:
    ids = range(0, 40)
    vals = values(ids)
    parquet = tmp_path / "p.parquet"
    pq.write_table(pa.table({
        "id": pa.array(ids, pa.int64()),
        "f16": pa.array([list(np.frombuffer(r.tobytes(), np.uint8)) for r in vals["f16"]], pa.list_(pa.uint8())),
        "b16": pa.array([r.astype(np.float32).tolist() for r in vals["b16"]], pa.list_(pa.float32())),
        "i8": pa.array([r.tolist() for r in vals["i8"]], pa.list_(pa.int8())),
    }), parquet)
    assert _import(spark, tmp_path / "a", [str(parquet)]) == list(ids)

    ids = range(50, 60)
    vals = values(ids)
    doc = tmp_path / "rows.json"
    doc.write_text(json.dumps({"rows": [
        {"id": k, "f16": vals["f16"][i].astype(np.float32).tolist(),
         "b16": np.frombuffer(vals["b16"][i].tobytes(), np.uint8).tolist(), "i8": vals["i8"][i].tolist()}
        for i, k in enumerate(ids)
    ]}))
    assert _import(spark, tmp_path / "b", [str(doc)]) == list(ids)

    ids = range(70, 90)
    vals = values(ids)
    npy = tmp_path / "npy"
    npy.mkdir()
    np.save(npy / "id.npy", np.arange(70, 90, dtype=np.int64))
    np.save(npy / "f16.npy", vals["f16"])
    np.save(npy / "b16.npy", vals["b16"].view(np.uint8))
    np.save(npy / "i8.npy", vals["i8"])
    files = [str(npy / f"{n}.npy") for n in ("id", "f16", "b16", "i8")]
    assert _import(spark, tmp_path / "c", files) == list(ids)
    np.save(npy / "i8.npy", vals["i8"].astype(np.int32))
    with pytest.raises(ImportFileError, match=r"INT8_VECTOR vectors must be a \(rows, 8\) array"):
        describe_files(files, SCHEMA, (tmp_path / "d").as_uri())


def test_a_mix_compaction_keeps_the_rows_and_builds_their_index(spark: Any, tmp_path: Path) -> None:
    store = ObjectStore.from_uri((tmp_path / "store").as_uri())
    a = write_l1(store, 1, [stored(range(0, 200), 100)], SCHEMA)
    b = write_l1(store, 2, [stored(range(200, 400), 200)], SCHEMA)
    l0 = write_l0(store, 3, list(range(0, 400, 4)), 300)
    plan = MixPlan(plan_id=2, vchannel=VCHANNEL, partition_id=PARTITION, inputs=(a, b), deletes=(l0,),
                   target_rows=150, segment_id_base=900, segment_id_count=3)
    spec = CompactionSpec(job_id=1, storage_uri=store.uri, collection_id=COLLECTION, schema_json=SCHEMA.to_json(),
                          mix=(plan,), indexes=(HNSW,))
    result = run_compaction(spark, spec)
    assert not result.error
    kept: list[int] = []
    for out in result.outputs:
        table = read_segment(store, out.manifest, SCHEMA)
        ids = table.column("id").to_pylist()
        for name, rows in raw(ids).items():
            assert table.column(name).to_pylist() == rows, name
        _check_index(store, out.segment_id, table)
        kept.extend(ids)
    assert sorted(kept) == sorted(set(range(400)) - set(range(0, 400, 4)))
