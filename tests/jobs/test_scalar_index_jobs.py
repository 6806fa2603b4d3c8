"""A segment the jobs write (compaction outputs, imports) gets its scalar indexes built and saved where a
worker loads them, over the rows in the order the worker holds them."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from common.expr import evaluate, parse_filter
from common.schema import TIMESTAMP_COLUMN, CollectionSchema, DataType, FieldSchema
from common.storage.objectstore import ObjectStore
from common.storage.segment_io import SegmentReader
from jobs.plans import IndexRef
from jobs.segments import write_segment
from segcore.index.scalar.planner import IndexedFilter
from segcore.index.scalar.spec import scalar_index_spec
from segcore.index.scalar.store import load_scalar_index

SCHEMA = CollectionSchema(
    name="c",
    fields=(
        FieldSchema(field_id=100, name="id", dtype=DataType.INT64, is_primary=True),
        FieldSchema(field_id=101, name="k", dtype=DataType.INT64),
        FieldSchema(field_id=102, name="j", dtype=DataType.JSON),
    ),
)
INDEXES = (
    IndexRef(field_name="k", index_id=7, params={"index_type": "STL_SORT"}),
    IndexRef(field_name="j", index_id=8, params={"index_type": "INVERTED",
                                                 "params": '{"json_path": "j[\\"a\\"]", "json_cast_type": "DOUBLE"}'}),
)


def test_written_segment_has_its_scalar_indexes(tmp_path: Path) -> None:
    store = ObjectStore.from_uri((tmp_path / "bucket").as_uri())
    n = 300
    rows = pa.table({
        "id": pa.array(range(n, 0, -1), pa.int64()),  # written sorted by (_ts, id): not this order
        "k": pa.array([i % 17 for i in range(n)], pa.int64()),
        "j": pa.array([f'{{"a": {i % 5}}}' for i in range(n)]),
        TIMESTAMP_COLUMN: pa.array([100 + i % 3 for i in range(n)], pa.uint64()),
    })
    out = write_segment(store, SCHEMA, rows, collection_id=1, partition_id=2, segment_id=3, vchannel="v",
                        indexes=INDEXES)
    reader = SegmentReader(store, SCHEMA)
    held = reader.read_inserts(reader.read_manifest(out.manifest))
    loaded = [
        load_scalar_index(store, 1, 3, ref.index_id, SCHEMA.field(ref.field_name).field_id,
                          scalar_index_spec(SCHEMA, ref.field_name, ref.params), n)
        for ref in INDEXES
    ]
    assert all(index is not None for index in loaded)
    indexes = IndexedFilter(i for i in loaded if i is not None)
    for text in ("k == 3", "k > 12 and j['a'] <= 1", "j['a'] in [2, 4]"):
        expr = parse_filter(text, SCHEMA)
        mask = indexes.mask(expr)
        assert mask is not None and (mask == evaluate(expr, held)).all(), text
