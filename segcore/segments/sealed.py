"""A sealed segment loaded from object storage, and the deletes of L0 segments.

Walking-skeleton form of the worker's segment (issue #6 adds HNSW and moves it
to workers): the rows of every insert log the manifest lists, held in the same
MVCC structure as growing data, plus the segment's PK statistics (bloom filter
and min/max) to tell which deletes may concern it. Loading is blocking I/O and
decoding: call it in a thread.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from common.schema import CollectionSchema
from common.segment import SegmentMeta
from common.storage.objectstore import ObjectStore
from common.storage.segment_io import SegmentReader
from common.storage.stats import SegmentStats
from segcore.segments.growing import GrowingStore


@dataclass(slots=True)
class SealedSegment:
    meta: SegmentMeta
    store: GrowingStore
    stats: list[SegmentStats]

    @property
    def segment_id(self) -> int:
        return self.meta.segment_id

    def may_contain(self, pks: pa.Array) -> np.ndarray:
        """Bool per key: the segment may hold it (no false negatives; one vectorised call per stats log)."""
        if not self.stats:
            return np.ones(len(pks), dtype=bool)
        hit = np.zeros(len(pks), dtype=bool)
        for s in self.stats:
            hit |= s.may_contain(pks)
        return hit


def load_sealed(storage: ObjectStore, schema: CollectionSchema, meta: SegmentMeta) -> SealedSegment:
    """Read a FLUSHED L1 segment's rows and stats as its manifest lists them (blocking)."""
    reader = SegmentReader(storage, schema)
    manifest = reader.read_manifest(meta.manifest)
    store = GrowingStore(schema)
    table = reader.read_inserts(manifest)
    if table.num_rows:
        store.apply_insert(table)
    return SealedSegment(meta=meta, store=store, stats=reader.read_stats(manifest))


def load_deletes(storage: ObjectStore, schema: CollectionSchema, meta: SegmentMeta) -> tuple[pa.Array, np.ndarray]:
    """The ``(pk, ts)`` pairs of an L0 segment (blocking)."""
    reader = SegmentReader(storage, schema)
    table = reader.read_deltas(reader.read_manifest(meta.manifest))
    pks = table.column("pk").combine_chunks()
    ts = np.asarray(table.column("ts").to_numpy(), dtype=np.uint64)
    return pks, ts
