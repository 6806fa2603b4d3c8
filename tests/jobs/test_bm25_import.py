"""Bulk import into a collection with a BM25 function: the job computes the output from the text,
as an insert does; a file that carries the output field is refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from common.fulltext.analyzer import build_analyzer
from common.fulltext.bm25 import embed
from common.schema import CollectionSchema, DataType, FieldSchema, FunctionSchema
from common.storage.objectstore import ObjectStore
from jobs.bulk_import import run_import
from jobs.conform import ImportFileError, conform
from jobs.plans import ImportSpec
from jobs.sources import describe_files
from tests.jobs.util import COLLECTION, PARTITION, VCHANNEL, read_segment

pytestmark = pytest.mark.timeout(300)
ANALYZER = json.dumps({"type": "english"})
SCHEMA = CollectionSchema(
    name="s",
    fields=(
        FieldSchema(field_id=100, name="id", dtype=DataType.INT64, is_primary=True),
        FieldSchema(field_id=101, name="text", dtype=DataType.VARCHAR, max_length=200,
                    type_params={"max_length": "200", "enable_analyzer": "true", "analyzer_params": ANALYZER}),
        FieldSchema(field_id=102, name="sparse", dtype=DataType.SPARSE_FLOAT_VECTOR),
    ),
    functions=(FunctionSchema(name="bm25", kind=1, input_field_names=("text",), output_field_names=("sparse",)),),
)
TEXTS = ["Running dogs run", "the cat sat on the mat", "vector databases index vectors"]


def test_conform_computes_the_output_and_refuses_it_in_a_file() -> None:
    out = conform({"id": pa.array([1, 2, 3], pa.int64()), "text": pa.array(TEXTS)}, 3, SCHEMA, file="f.parquet")
    assert out.column("sparse").to_pylist() == embed(build_analyzer(ANALYZER), TEXTS)
    with pytest.raises(ImportFileError, match="function output"):
        conform({"id": pa.array([1], pa.int64()), "text": pa.array(["x"]), "sparse": pa.array([b""], pa.binary())},
                1, SCHEMA, file="f.parquet")


def test_a_parquet_import_stores_the_bm25_output(spark: Any, tmp_path: Path) -> None:
    parquet = tmp_path / "p.parquet"
    pq.write_table(pa.table({"id": pa.array([1, 2, 3], pa.int64()), "text": pa.array(TEXTS)}), parquet)
    uri = (tmp_path / "store").as_uri()
    spec = ImportSpec(
        job_id=1, storage_uri=uri, collection_id=COLLECTION, schema_json=SCHEMA.to_json(), vchannels=(VCHANNEL,),
        partition_id=PARTITION, files=tuple(describe_files([str(parquet)], SCHEMA, uri)), import_ts=9 << 18,
        auto_id_base=0, buckets=1, segment_id_base=300, segment_id_count=1, indexes=(),
    )
    result = run_import(spark, spec)
    assert not result.error, result.error
    store = ObjectStore.from_uri(uri)
    got = {}
    for out in result.outputs:
        table = read_segment(store, out.manifest, SCHEMA)
        got.update(zip(table.column("id").to_pylist(), table.column("sparse").to_pylist(), strict=True))
    assert got == dict(zip([1, 2, 3], embed(build_analyzer(ANALYZER), TEXTS), strict=True))
