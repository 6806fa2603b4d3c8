"""``ShardData`` (many segments, sealed loads, cross-segment cuts) reads like one store holding everything.

The reference is a single ``GrowingStore`` that receives every insert and
delete in log order: within one store, a key's newest version is the visible
one and deletes hide older versions. ``ShardData`` spreads the same inserts
over segments, seals some (rebuilding them from their rows, with PK stats, as a
load from object storage would) at arbitrary moments, and must give the same
visible rows at every timestamp.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from common.schema import TIMESTAMP_COLUMN, CollectionSchema, DataType, FieldSchema
from common.segment import SegmentMeta, SegmentState
from common.storage.stats import SegmentStats
from querynode.delegator.shard_data import ShardData
from segcore.segments.growing import GrowingStore
from segcore.segments.sealed import SealedSegment

SCHEMA = CollectionSchema(
    name="c",
    fields=(
        FieldSchema(field_id=100, name="id", dtype=DataType.INT64, is_primary=True),
        FieldSchema(field_id=101, name="tag", dtype=DataType.INT64),
        FieldSchema(field_id=102, name="v", dtype=DataType.FLOAT_VECTOR, dim=2),
    ),
)
PART = 2


def _rows(keys: list[int], ts: int) -> pa.Table:
    n = len(keys)
    return pa.table(
        {
            "id": pa.array(keys, pa.int64()),
            "tag": pa.array([ts] * n, pa.int64()),
            "v": pa.array([[float(k), float(ts)] for k in keys], pa.list_(pa.float32(), 2)),
            TIMESTAMP_COLUMN: pa.array(np.full(n, ts, dtype=np.uint64)),
        }
    )


def _seal(segment_id: int, tables: list[pa.Table], partition_id: int = PART) -> SealedSegment:
    """What loading the segment's files gives: its rows in order, and stats over its keys."""
    store = GrowingStore(SCHEMA)
    table = pa.concat_tables(tables)
    store.apply_insert(table)
    meta = SegmentMeta(segment_id=segment_id, collection_id=1, partition_id=partition_id, vchannel="v",
                       state=SegmentState.FLUSHED)
    return SealedSegment(meta=meta, store=store, stats=[SegmentStats.build(table.column("id").combine_chunks())])


def _visible(stores: list[GrowingStore], read_ts: int) -> list[tuple[int, int]]:
    rows: list[tuple[int, int]] = []
    for s in stores:
        t = s.query(read_ts=read_ts, output_fields=["tag"])
        rows.extend(zip(t.column("id").to_pylist(), t.column("tag").to_pylist(), strict=True))
    return sorted(rows)


OPS = st.lists(
    st.one_of(
        st.tuples(st.just("insert"), st.integers(1, 4), st.lists(st.integers(0, 9), min_size=1, max_size=4, unique=True)),
        st.tuples(st.just("delete"), st.just(0), st.lists(st.integers(0, 9), min_size=1, max_size=3, unique=True)),
        st.tuples(st.just("seal"), st.integers(1, 4), st.just([])),
    ),
    max_size=30,
)


@settings(max_examples=200, deadline=None)
@given(ops=OPS)
def test_segments_and_sealed_loads_read_like_one_store(ops: list[tuple[str, int, list[int]]]) -> None:
    data, reference = ShardData(SCHEMA), GrowingStore(SCHEMA)
    written: dict[int, list[pa.Table]] = {}
    ts = 0
    for kind, segment, keys in ops:
        ts += 10
        match kind:
            case "insert":
                if segment in data.sealed:
                    continue  # a sealed segment takes no more inserts (the WAL seals for good)
                table = _rows(keys, ts)
                data.insert(segment, table, PART)
                reference.apply_insert(table)
                written.setdefault(segment, []).append(table)
            case "delete":
                pks = pa.array(keys, pa.int64())
                data.delete(pks, ts)
                reference.apply_delete(pks, ts)
            case "seal":
                if segment in written and segment not in data.sealed:
                    data.add_sealed(_seal(segment, written[segment]))
        for read_ts in (ts - 5, ts):
            assert _visible(list(data.stores()), read_ts) == _visible([reference], read_ts), (ops, read_ts)


def test_an_insert_into_another_segment_supersedes_a_sealed_version() -> None:
    data = ShardData(SCHEMA)
    data.insert(1, _rows([7, 8], 10), PART)
    data.add_sealed(_seal(1, [_rows([7, 8], 10)]))
    data.insert(2, _rows([7], 20), PART)  # the same key again, newer, elsewhere
    assert _visible(list(data.stores()), 30) == [(7, 20), (8, 10)]
    assert _visible(list(data.stores()), 15) == [(7, 10), (8, 10)]
    assert not data.growing.get(1)  # the growing copy went when the sealed one came


@settings(max_examples=100, deadline=None)
@given(ops=OPS, seed=st.integers(0, 2**32 - 1))
def test_a_fresh_delegator_loading_the_sealed_segments_in_any_order_reads_the_same(
    ops: list[tuple[str, int, list[int]]], seed: int
) -> None:
    """What a new delegator does: L0 deletes, then sealed segments straight from storage, any order."""
    reference = GrowingStore(SCHEMA)
    written: dict[int, list[pa.Table]] = {}
    deletes: list[tuple[pa.Array, int]] = []
    ts = 0
    for kind, segment, keys in ops:
        ts += 10
        if kind == "insert":
            table = _rows(keys, ts)
            reference.apply_insert(table)
            written.setdefault(segment, []).append(table)
        elif kind == "delete":
            pks = pa.array(keys, pa.int64())
            reference.apply_delete(pks, ts)
            deletes.append((pks, ts))
    fresh = ShardData(SCHEMA)
    for pks, at in deletes:
        fresh.add_deletes(pks, np.full(len(pks), at, dtype=np.uint64))
    order = list(written)
    np.random.default_rng(seed).shuffle(order)
    for segment in order:
        fresh.add_sealed(_seal(segment, written[segment]))
    for read_ts in (ts // 2, ts):
        assert _visible(list(fresh.stores()), read_ts) == _visible([reference], read_ts), (ops, order, read_ts)


PARTITION_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("insert"), st.integers(1, 4), st.lists(st.integers(0, 5), min_size=1, max_size=4)),
        st.tuples(st.just("delete"), st.integers(-1, 1), st.lists(st.integers(0, 5), min_size=1, max_size=3)),
        st.tuples(st.just("seal"), st.integers(1, 4), st.just([])),
    ),
    max_size=30,
)


@settings(max_examples=200, deadline=None)
@given(ops=PARTITION_OPS)
def test_partitions_keep_their_rows_apart(ops: list[tuple[str, int, list[int]]]) -> None:
    """Segments 1-2 are in partition 0, 3-4 in partition 1; a delete names one (or -1: every one).
    The reference is one store per partition: rows of a key in two partitions are two rows, and a
    delete reaches only the partition it names (as Milvus's delete with ``partition_name``).
    Keys repeat within an insert: every row is counted, one is read."""
    data = ShardData(SCHEMA)
    reference = {0: GrowingStore(SCHEMA), 1: GrowingStore(SCHEMA)}
    written: dict[int, list[pa.Table]] = {}
    ts = 0
    for kind, arg, keys in ops:
        ts += 10
        match kind:
            case "insert":
                part = (arg - 1) // 2
                if arg in data.sealed:
                    continue
                table = _rows(keys, ts)
                data.insert(arg, table, part)
                reference[part].apply_insert(table)
                written.setdefault(arg, []).append(table)
            case "delete":
                pks = pa.array(keys, pa.int64())
                data.delete(pks, ts, arg)
                for part, store in reference.items():
                    if arg in (-1, part):
                        store.apply_delete(pks, ts)
            case "seal":
                if arg in written and arg not in data.sealed:
                    data.add_sealed(_seal(arg, written[arg], (arg - 1) // 2))
        for read_ts in (ts - 5, ts):
            stores = list(data.stores())
            assert _visible(stores, read_ts) == _visible(list(reference.values()), read_ts), (ops, read_ts)
            counted = sum(s.count(read_ts=read_ts) for s in stores)
            assert counted == sum(s.count(read_ts=read_ts) for s in reference.values()), (ops, read_ts)
