"""Sparse vectors through the offline jobs: import (Parquet JSON strings, structs and packed bytes; JSON rows in
both of Milvus' forms) validated and stored exactly, refusals naming the row, and a mix compaction that keeps
the rows and builds their SPARSE_INVERTED_INDEX where a worker finds it."""

from __future__ import annotations

import json
import struct
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
from segcore.segments.sparse_rows import SparseRows
from tests.jobs.util import COLLECTION, PARTITION, VCHANNEL, read_segment, write_l0, write_l1

pytestmark = pytest.mark.timeout(300)
SCHEMA = CollectionSchema(
    name="s",
    fields=(
        FieldSchema(field_id=100, name="id", dtype=DataType.INT64, is_primary=True),
        FieldSchema(field_id=101, name="sv", dtype=DataType.SPARSE_FLOAT_VECTOR),
    ),
)
INDEX = IndexRef(field_name="sv", index_id=31, params={"index_type": "SPARSE_INVERTED_INDEX", "metric_type": "IP",
                                                       "params": '{"inverted_index_algo": "DAAT_WAND"}'})


def row(k: int) -> dict[int, float]:
    """Deterministic rows: key ``k`` always has the same pairs (values exact in float32)."""
    rng = np.random.default_rng(int(k))
    idx = sorted(rng.choice(1000, int(rng.integers(1, 8)), replace=False).tolist())
    return {i: float(rng.integers(1, 64)) / 8 for i in idx}


def packed(r: dict[int, float]) -> bytes:
    return b"".join(struct.pack("<If", i, v) for i, v in sorted(r.items()))


def stored(ids: range, ts: int) -> pa.Table:
    return pa.table({
        "id": pa.array(list(ids), pa.int64()),
        "sv": pa.array([packed(row(i)) for i in ids], pa.binary()),
        TIMESTAMP_COLUMN: pa.array([ts] * len(ids), pa.uint64()),
    })


def as_dict(raw: bytes) -> dict[int, float]:
    rows, _ = SparseRows.from_arrow(pa.array([raw], pa.binary()))
    return {int(i): float(v) for i, v in zip(*rows.row(0), strict=True)}


def test_conform_takes_milvus_forms_and_names_bad_rows() -> None:
    forms = pa.array([json.dumps({"7": 0.5, "2": 1.0}), json.dumps({"indices": [9, 1], "values": [2.0, 3.0]}), "{}"])
    out = conform({"id": pa.array([1, 2, 3], pa.int64()), "sv": forms}, 3, SCHEMA, file="f.parquet")
    assert [as_dict(b) for b in out.column("sv").to_pylist()] == [{2: 1.0, 7: 0.5}, {1: 3.0, 9: 2.0}, {}]
    structs = pa.array([{"indices": [5, 3], "values": [1.5, 2.5]}],
                       pa.struct([("indices", pa.list_(pa.int64())), ("values", pa.list_(pa.float32()))]))
    out = conform({"id": pa.array([1], pa.int64()), "sv": structs}, 1, SCHEMA, file="f.parquet")
    assert as_dict(out.column("sv")[0].as_py()) == {3: 2.5, 5: 1.5}
    for bad, message in [
        (json.dumps({"1": -2.0}), r"negative value \(row 1\)"),
        (json.dumps({"indices": [1, 1], "values": [1.0, 2.0]}), r"unsorted or same indices in sparse float vector \(row 1\)"),
        (json.dumps({"4294967295": 1.0}), "must be less than 2\\^32-1"),
        (json.dumps([1, 2]), "must be a JSON object"),
    ]:
        column = pa.array([json.dumps({"1": 1.0}), bad])
        with pytest.raises(ImportFileError, match=message):
            conform({"id": pa.array([1, 2], pa.int64()), "sv": column}, 2, SCHEMA, file="f.json")
    with pytest.raises(ImportFileError, match="cannot hold SPARSE_FLOAT_VECTOR"):
        conform({"id": pa.array([1], pa.int64()), "sv": pa.array([[1.0]])}, 1, SCHEMA, file="f.parquet")


def test_rows_round_trip_through_spark_types(spark: Any) -> None:
    table = stored(range(5), 1 << 40)
    df = spark.createDataFrame(to_spark(table).to_pylist(), spark_ddl(table.schema))
    back = from_spark(pa.Table.from_pylist([r.asDict() for r in df.collect()]), SCHEMA.arrow_schema())
    assert back.equals(table.cast(SCHEMA.arrow_schema()))


def _import(spark: Any, root: Path, files: list[str]) -> list[int]:
    uri = (root / "store").as_uri()
    spec = ImportSpec(
        job_id=1, storage_uri=uri, collection_id=COLLECTION, schema_json=SCHEMA.to_json(), vchannels=(VCHANNEL,),
        partition_id=PARTITION, files=tuple(describe_files(files, SCHEMA, uri)), import_ts=9 << 18,
        auto_id_base=0, buckets=1, segment_id_base=300, segment_id_count=1, indexes=(INDEX,),
    )
    result = run_import(spark, spec)
    assert not result.error, result.error
    store = ObjectStore.from_uri(uri)
    got: dict[int, dict[int, float]] = {}
    for out in result.outputs:
        table = read_segment(store, out.manifest, SCHEMA)
        got.update(zip(table.column("id").to_pylist(), map(as_dict, table.column("sv").to_pylist()), strict=True))
        rows, _ = SparseRows.from_arrow(table.column("sv").combine_chunks())
        spec_ = field_index_spec("sv", 31, INDEX.params, sparse=True).spec
        assert load_index(store, COLLECTION, out.segment_id, 31, 101, spec_, rows) is not None
    assert got == {i: row(i) for i in got}
    return sorted(got)


def test_parquet_and_json_imports_store_the_rows(spark: Any, tmp_path: Path) -> None:
    parquet = tmp_path / "p.parquet"
    pq.write_table(pa.table({"id": pa.array(range(0, 30), pa.int64()),
                             "sv": pa.array([json.dumps({str(k): v for k, v in row(i).items()}) for i in range(30)])}),
                   parquet)
    raw = tmp_path / "raw.parquet"
    pq.write_table(pa.table({"id": pa.array([30, 31], pa.int64()),
                             "sv": pa.array([packed(row(i)) for i in (30, 31)], pa.binary())}), raw)
    assert _import(spark, tmp_path / "a", [str(parquet), str(raw)]) == list(range(32))
    doc = tmp_path / "rows.json"
    rows = [{"id": i, "sv": {str(k): v for k, v in row(i).items()}} for i in range(50, 55)]
    rows += [{"id": i, "sv": {"indices": list(row(i)), "values": list(row(i).values())}} for i in range(55, 60)]
    doc.write_text(json.dumps({"rows": rows}))
    assert _import(spark, tmp_path / "b", [str(doc)]) == list(range(50, 60))
    npy = tmp_path / "npy"
    npy.mkdir()
    np.save(npy / "id.npy", np.arange(3, dtype=np.int64))
    np.save(npy / "sv.npy", np.zeros((3, 4), np.float32))
    with pytest.raises(ImportFileError, match="sparse vectors cannot be imported from .npy files"):
        describe_files([str(npy / "id.npy"), str(npy / "sv.npy")], SCHEMA, (tmp_path / "d").as_uri())


def test_a_mix_compaction_keeps_the_rows_and_builds_their_index(spark: Any, tmp_path: Path) -> None:
    store = ObjectStore.from_uri((tmp_path / "store").as_uri())
    a = write_l1(store, 1, [stored(range(0, 200), 100)], SCHEMA)
    b = write_l1(store, 2, [stored(range(200, 400), 200)], SCHEMA)
    l0 = write_l0(store, 3, list(range(0, 400, 4)), 300)
    plan = MixPlan(plan_id=2, vchannel=VCHANNEL, partition_id=PARTITION, inputs=(a, b), deletes=(l0,),
                   target_rows=150, segment_id_base=900, segment_id_count=3)
    spec = CompactionSpec(job_id=1, storage_uri=store.uri, collection_id=COLLECTION, schema_json=SCHEMA.to_json(),
                          mix=(plan,), indexes=(INDEX,))
    result = run_compaction(spark, spec)
    assert not result.error
    kept: list[int] = []
    for out in result.outputs:
        table = read_segment(store, out.manifest, SCHEMA)
        ids = table.column("id").to_pylist()
        assert table.column("sv").to_pylist() == [packed(row(i)) for i in ids]
        rows, _ = SparseRows.from_arrow(table.column("sv").combine_chunks())
        index_spec = field_index_spec("sv", 31, INDEX.params, sparse=True).spec
        index = load_index(store, COLLECTION, out.segment_id, 31, 101, index_spec, rows)
        assert index is not None and index.kind is IndexKind.SPARSE_INVERTED_INDEX
        kept.extend(ids)
    assert sorted(kept) == sorted(set(range(400)) - set(range(0, 400, 4)))
