"""The delegator's BM25 corpus statistics (Milvus' IDF oracle) and the weighting of text queries.

Milvus keeps, per shard, the statistics of every segment it serves: a sealed
segment's are those of its stored rows (read when it loads; rows deleted
later still count until compaction rewrites the segment), a growing
segment's grow with each insert; deletes never subtract. The shard's
statistics are their sum, so every segment of a search is scored with the same
IDF and ``avgdl``. This oracle keeps the same: per sealed segment, the
statistics of its BM25 output columns, read from object storage in the load;
per growing store, statistics extended with the rows appended since the last
search.

``weigh`` turns a search's term-frequency queries (the proxy analyzed the
texts) into ``qtf * idf`` weights and adds ``bm25_k1``, ``bm25_b`` (of the
field's index, else Milvus' defaults 1.2 and 0.75) and ``bm25_avgdl`` to the
search parameters (``segcore/index/bm25_scoring.py`` scores with them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import cast

import numpy as np

from common.fulltext.bm25 import DEFAULT_B, DEFAULT_K1, Bm25Stats, combined
from common.fulltext.functions import bm25_outputs
from common.schema import CollectionSchema
from common.segment import SegmentMeta
from common.storage.objectstore import ObjectStore
from common.storage.segment_io import SegmentReader
from segcore.segments.growing import GrowingStore
from segcore.segments.sparse_rows import SparseRows, pad_queries, unpad_queries

SegmentBm25 = dict[str, Bm25Stats]


def rows_stats(rows: SparseRows) -> Bm25Stats:
    return Bm25Stats.of_rows(rows.indptr, rows.indices, rows.values)


def read_segment_bm25(storage: ObjectStore, schema: CollectionSchema, meta: SegmentMeta) -> SegmentBm25:
    """The statistics of a sealed segment's BM25 output columns (empty without BM25 functions)."""
    fields = sorted(bm25_outputs(schema))
    if not fields:
        return {}
    reader = SegmentReader(storage, schema)
    table = reader.read_inserts(reader.read_manifest(meta.manifest), columns=fields)
    out: SegmentBm25 = {}
    for name in fields:
        rows, _ = SparseRows.from_arrow(table.column(name).combine_chunks())
        out[name] = rows_stats(rows)
    return out


class Bm25Oracle:
    """Per-shard BM25 statistics; used under the delegator's own ordering (no locks of its own)."""

    def __init__(self) -> None:
        self._sealed: dict[int, SegmentBm25] = {}
        self._growing: dict[int, tuple[GrowingStore, int, SegmentBm25]] = {}

    def add_sealed(self, segment_id: int, stats: SegmentBm25) -> None:
        self._sealed[segment_id] = stats

    def drop_sealed(self, segment_id: int) -> None:
        self._sealed.pop(segment_id, None)

    def _growing_stats(self, sid: int, store: GrowingStore, name: str) -> Bm25Stats:
        kept = self._growing.get(sid)
        if kept is None or kept[0] is not store:
            kept = (store, 0, {})
        _, done, stats = kept
        n = store.num_rows
        if n > done:
            rows = store.vector_matrix(name)
            assert isinstance(rows, SparseRows)
            fresh = rows_stats(rows.slice_rows(done, n))
            stats = {k: v for k, v in stats.items()}
            stats[name] = stats[name].merged(fresh) if name in stats else fresh
            done = n
        self._growing[sid] = (store, done, stats)
        return stats.get(name, Bm25Stats())

    def field_stats(self, name: str, growing: Mapping[int, GrowingStore]) -> Sequence[Bm25Stats]:
        for sid in [s for s in self._growing if s not in growing]:
            del self._growing[sid]
        parts = [s[name] for s in self._sealed.values() if name in s]
        parts += [self._growing_stats(sid, store, name) for sid, store in growing.items()]
        return parts

    def weigh(
        self, name: str, queries: np.ndarray, params: dict[str, object], index_params: Mapping[str, object],
        growing: Mapping[int, GrowingStore],
    ) -> tuple[np.ndarray, dict[str, object]]:
        """The queries with ``qtf * idf`` values and the search parameters with the BM25 ones."""
        stats = combined(self.field_stats(name, growing))
        rows = unpad_queries(queries)
        idf = stats.idf(rows.indices)
        weighted = (rows.values.astype(np.float32) * idf.astype(np.float32)).astype(np.float32)
        out = dict(params)
        # CreateIndex took only numbers and numeric strings for these (check_bm25_index_params).
        out["bm25_k1"] = float(cast(str | float, index_params.get("bm25_k1", DEFAULT_K1)))
        out["bm25_b"] = float(cast(str | float, index_params.get("bm25_b", DEFAULT_B)))
        out["bm25_avgdl"] = max(stats.avgdl, 1.0)
        return pad_queries(SparseRows(indptr=rows.indptr, indices=rows.indices, values=weighted)), out
