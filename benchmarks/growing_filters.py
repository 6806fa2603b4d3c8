"""A ``k == 7`` filter over a growing store's rows: the column scan beside the per-chunk scalar index
(``segcore/index/scalar/chunked.py``), its first call (building each chunk's index) and a cached call.

In process, no server: ``.venv/bin/python benchmarks/growing_filters.py``. 200k rows of int64 ``k``
(0-999) as 20 chunks of 10k rows (a table of those chunks; a ``GrowingStore`` fed 20 batches of 10k
merges neighbouring chunks, so its own chunk count is printed and measured too). Median of repeats.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import numpy as np
import pyarrow as pa

from common.expr import evaluate, parse_filter
from common.schema import TIMESTAMP_COLUMN, CollectionSchema, DataType, FieldSchema
from segcore.index.scalar.chunked import ChunkIndexes
from segcore.index.scalar.spec import scalar_index_spec
from segcore.segments.growing import GrowingStore
from segcore.segments.growing_indexes import growing_filter
from segcore.segments.readmask import read_mask

ROWS, CHUNKS, REPEATS = 200_000, 20, 7
SCHEMA = CollectionSchema(name="c", fields=(
    FieldSchema(field_id=100, name="id", dtype=DataType.INT64, is_primary=True),
    FieldSchema(field_id=101, name="k", dtype=DataType.INT64),
    FieldSchema(field_id=102, name="v", dtype=DataType.FLOAT_VECTOR, dim=2),
))


def _ms(run: Callable[[], object], repeats: int = REPEATS) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def _batch(first: int, count: int, rng: np.random.Generator) -> pa.Table:
    return pa.table({
        "id": pa.array(np.arange(first, first + count), pa.int64()),
        "k": pa.array(rng.integers(0, 1000, count), pa.int64()),
        "v": pa.FixedSizeListArray.from_arrays(pa.array(np.zeros(2 * count, np.float32)), 2),
        TIMESTAMP_COLUMN: pa.array(np.full(count, 1 + first // count, np.uint64)),
    })


def main() -> None:
    rng = np.random.default_rng(7)
    size = ROWS // CHUNKS
    batches = [_batch(i * size, size, rng) for i in range(CHUNKS)]
    expr = parse_filter("k == 7", SCHEMA)
    spec = scalar_index_spec(SCHEMA, "k", {"index_type": "STL_SORT"})

    table = pa.concat_tables(b.select(["k"]) for b in batches)
    assert table.column("k").num_chunks == CHUNKS
    scan = _ms(lambda: evaluate(expr, table))

    def first() -> None:
        view = ChunkIndexes([spec]).view(table)
        assert view.mask(expr) is not None

    cached_view = ChunkIndexes([spec]).view(table)
    cached_view.mask(expr)
    assert np.array_equal(cached_view.mask(expr), evaluate(expr, table))  # type: ignore[arg-type]
    print(f"{ROWS} rows, {CHUNKS} chunks: scan {scan:.2f} ms, index first call {_ms(first, 3):.2f} ms, "
          f"cached {_ms(lambda: cached_view.mask(expr)):.2f} ms")

    store = GrowingStore(SCHEMA)
    for b in batches:
        store.apply_insert(b)
    chunks = store.table().column("k").num_chunks
    scan = _ms(lambda: read_mask(store, expr=expr, expire_before=0))
    growing_filter(store, [spec])  # the store's cache, then filters through it as the delegator reads
    indexed = _ms(lambda: read_mask(store, expr=expr, expire_before=0, indexes=growing_filter(store, [spec])))
    print(f"GrowingStore of {ROWS} rows fed {CHUNKS} batches keeps {chunks} chunks: read_mask scan {scan:.2f} ms, "
          f"indexed (cached) {indexed:.2f} ms")


if __name__ == "__main__":
    main()
