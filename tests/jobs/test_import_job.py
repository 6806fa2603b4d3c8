"""Bulk import on a real local SparkSession: checking files, routing, and whole imports of each format."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import mmh3
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from common.errors import InvalidArgument
from common.routing import shard_indices
from common.storage.objectstore import ObjectStore
from jobs.bulk_import import run_import
from jobs.conform import ImportFileError
from jobs.plans import ImportSpec, IndexRef
from jobs.routing import key_hashes, murmur3_int64, shards_of
from jobs.sources import describe_files, file_chunks, read_chunk
from tests.jobs.util import COLLECTION, DIM, read_segment, schema, vectors

pytestmark = pytest.mark.timeout(300)
VCHANNELS = ("strata-dml_0_7v0", "strata-dml_1_7v1")


def _read_json_file(path: Path, text: str) -> pa.Table:
    path.write_text(text)
    s = schema(dynamic=True)
    store = (path.parent / "store").as_uri()
    [desc] = describe_files([str(path)], s, store)
    [chunk] = file_chunks([desc], store)
    return read_chunk(desc, chunk, s, store)


def test_json_nested_too_deep_fails_the_file_cleanly(tmp_path: Path) -> None:
    row = {"id": 1, "v": [0.0] * DIM}
    deep_value = "[" * 300 + "]" * 300
    with pytest.raises(ImportFileError, match=r"deep\.json, field \$meta: row 0 is not valid JSON: .*nested more than 256"):
        _read_json_file(tmp_path / "deep.json", json.dumps([row])[:-2] + ', "extra": ' + deep_value + "}]")
    with pytest.raises(ImportFileError, match=r"deeper\.json: not valid JSON: nested too deeply to decode"):
        _read_json_file(tmp_path / "deeper.json", "[" * 100_000 + "]" * 100_000)
    assert _read_json_file(tmp_path / "fine.json", json.dumps([{**row, "extra": [[1]]}])).num_rows == 1


def test_vectorised_routing_is_the_proxy_routing() -> None:
    keys = np.concatenate([np.arange(-50, 50), np.random.default_rng(1).integers(-(2**63), 2**63 - 1, 500)])
    expected = [mmh3.hash(int(k).to_bytes(8, "little", signed=True), 0, signed=False) for k in keys]
    assert murmur3_int64(keys).tolist() == expected
    arr = pa.array(keys, pa.int64())
    assert shards_of(arr, 3).tolist() == shard_indices(arr, 3).tolist()
    words = pa.array(["a", "bb", "ünï", "x" * 300])
    assert shards_of(words, 4).tolist() == shard_indices(words, 4).tolist()
    assert key_hashes(arr).min() >= 0


def _table(ids: range, *, dim: int = DIM) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(list(ids), pa.int64()),
            "age": pa.array([i % 50 for i in ids], pa.int64()),
            "v": pa.array([row.tolist() + [0.0] * (dim - DIM) for row in vectors(list(ids))], pa.list_(pa.float64())),
        }
    )


def test_files_are_checked_by_their_footer_before_a_job_starts(tmp_path: Path) -> None:
    s = schema()
    good = tmp_path / "good.parquet"
    pq.write_table(_table(range(10)), good)
    [desc] = describe_files([str(good)], s, (tmp_path / "store").as_uri())
    assert desc.rows == 10 and desc.format == "parquet"
    missing_vec = tmp_path / "novec.parquet"
    pq.write_table(_table(range(3)).drop_columns(["v"]), missing_vec)
    with pytest.raises(ImportFileError, match=r"novec\.parquet, field v: the field is missing"):
        describe_files([str(good), str(missing_vec)], s, (tmp_path / "store").as_uri())
    extra = tmp_path / "extra.parquet"
    pq.write_table(_table(range(3)).append_column("color", pa.array(["r"] * 3)), extra)
    with pytest.raises(ImportFileError, match=r"extra\.parquet, field color: column is not a field"):
        describe_files([str(extra)], s, (tmp_path / "store").as_uri())
    wrong = tmp_path / "wrong.parquet"
    pq.write_table(_table(range(3)).set_column(1, "age", pa.array(["a", "b", "c"])), wrong)
    with pytest.raises(ImportFileError, match=r"wrong\.parquet, field age: a column of type string"):
        describe_files([str(wrong)], s, (tmp_path / "store").as_uri())
    with pytest.raises(ImportFileError, match="no such file"):
        describe_files([str(tmp_path / "nope.parquet")], s, (tmp_path / "store").as_uri())
    with pytest.raises(InvalidArgument, match="unsupported format .csv"):
        describe_files([str(tmp_path / "x.csv")], s, (tmp_path / "store").as_uri())
    with pytest.raises(ImportFileError, match="auto_id"):
        describe_files([str(good)], schema(auto_id=True), (tmp_path / "store").as_uri())


def _spec(tmp_path: Path, files: list[str], *, auto_id: bool = False, buckets: int = 1, **kw: Any) -> ImportSpec:
    s = schema(auto_id=auto_id)
    uri = (tmp_path / "store").as_uri()
    described = describe_files(files, s, uri)
    return ImportSpec(
        job_id=3, storage_uri=uri, collection_id=COLLECTION, schema_json=s.to_json(), vchannels=VCHANNELS,
        partition_id=8, files=tuple(described), import_ts=123 << 18, auto_id_base=10_000, buckets=buckets,
        segment_id_base=500, segment_id_count=len(VCHANNELS) * buckets, **kw,
    )


def _imported(tmp_path: Path, result: Any) -> dict[int, pa.Table]:
    store = ObjectStore.from_uri((tmp_path / "store").as_uri())
    return {o.segment_id: read_segment(store, o.manifest) for o in result.outputs}


def test_a_parquet_import_writes_routed_segments_with_one_timestamp_and_an_index(spark: Any, tmp_path: Path) -> None:
    paths = []
    for i in range(2):
        p = tmp_path / f"part-{i}.parquet"
        pq.write_table(_table(range(i * 500, (i + 1) * 500)), p, row_group_size=200)
        paths.append(str(p))
    index = IndexRef(field_name="v", index_id=9, params={"index_type": "FLAT", "metric_type": "L2"})
    result = run_import(spark, _spec(tmp_path, paths, buckets=2, indexes=(index,)))
    assert not result.error and result.rows == 1000
    segments = _imported(tmp_path, result)
    assert set(segments) <= set(range(500, 504)) and len(segments) == 4
    ids: list[int] = []
    for out in result.outputs:
        table = segments[out.segment_id]
        got = table.column("id").to_pylist()
        assert got == sorted(got)  # one timestamp: sorted by key
        assert set(table.column("_ts").to_pylist()) == {123 << 18}
        shard = VCHANNELS.index(out.vchannel)
        assert set(shard_indices(pa.array(got, pa.int64()), 2).tolist()) == {shard}
        assert table.column("name").to_pylist() == ["x"] * len(got)  # the default value
        np.testing.assert_allclose(np.stack(table.column("v").to_numpy(zero_copy_only=False)), vectors(got))
        assert out.partition_id == 8
        ids.extend(got)
    assert sorted(ids) == list(range(1000))
    store = ObjectStore.from_uri((tmp_path / "store").as_uri())
    assert all(store.exists(f"index_files/{COLLECTION}/{o.segment_id}/9/meta.json") for o in result.outputs)


def test_json_and_numpy_imports_with_auto_ids(spark: Any, tmp_path: Path) -> None:
    doc = tmp_path / "rows.json"
    doc.write_text(json.dumps({"rows": [{"age": i, "v": vectors([i])[0].tolist()} for i in range(30)]}))
    result = run_import(spark, _spec(tmp_path, [str(doc)], auto_id=True))
    assert not result.error and result.rows == 30
    tables = _imported(tmp_path, result).values()
    ids = sorted(i for t in tables for i in t.column("id").to_pylist())
    assert len(set(ids)) == 30 and all(10_000 <= i < 10_000 + 31 * 1000 for i in ids)
    ages = sorted(a for t in tables for a in t.column("age").to_pylist())
    assert ages == list(range(30))

    npy = tmp_path / "npy"
    npy.mkdir()
    np.save(npy / "id.npy", np.arange(100, 160, dtype=np.int64))
    np.save(npy / "v.npy", vectors(list(range(100, 160))))
    np.save(npy / "name.npy", np.array([f"w{i}" for i in range(60)]))
    result = run_import(spark, _spec(tmp_path / "b", [str(npy / "id.npy"), str(npy / "v.npy"), str(npy / "name.npy")]))
    assert not result.error and result.rows == 60
    tables = list(_imported(tmp_path / "b", result).values())
    rows_by_id = {i: n for t in tables for i, n in zip(t.column("id").to_pylist(), t.column("name").to_pylist(),
                                                       strict=True)}
    assert rows_by_id == {100 + i: f"w{i}" for i in range(60)}
    assert all(a is None for t in tables for a in t.column("age").to_pylist())  # nullable and absent


def test_a_bad_value_fails_the_job_naming_the_file_and_field(spark: Any, tmp_path: Path) -> None:
    from jobs.main import run

    good = tmp_path / "good.parquet"
    pq.write_table(_table(range(100)), good)
    bad = tmp_path / "bad.parquet"
    table = _table(range(100, 200))
    vecs = table.column("v").to_pylist()
    vecs[37] = vecs[37][:3]  # one vector one dimension short
    pq.write_table(table.set_column(2, "v", pa.array(vecs, pa.list_(pa.float64()))), bad)
    result = json.loads(run(spark, _spec(tmp_path, [str(good), str(bad)]).to_json()))
    assert result["outputs"] == []
    assert result["error"] == (
        f"file {bad}, field v: vector at row 37 has 3 dimensions, the field has dim {DIM}"
    ), result["error"]
