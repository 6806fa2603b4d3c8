"""All the data one delegator serves for its vchannel: growing and sealed segments and every delete.

Plain data, no I/O, not thread-safe: the delegator serialises writes and reads.

* **growing**: one ``GrowingStore`` per segment id, filled from the WAL;
* **sealed**: ``SealedSegment`` loaded from object storage; a sealed segment
  replaces its growing copy in one step (``add_sealed``), so readers see the
  segment's rows exactly once, before and after;
* **deletes**: every delete of the vchannel (from L0 segments and from the
  WAL), kept so that a segment loaded later gets them too.

Versions across segments: a primary key's newest version is the only one
visible, wherever it lives, exactly as within one store. An insert in one
segment *cuts* older versions of its keys in every other segment (sealed ones
only where their PK statistics may hold the key); a loaded sealed segment and
every other segment cut each other's older versions; deletes reach every
segment (sealed ones through the PK statistics). Cuts are order-independent
(``GrowingStore.cut``), so it does not matter which arrives first.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from querynode.segments.growing import GrowingStore
from querynode.segments.sealed import SealedSegment
from services.schema import TIMESTAMP_COLUMN, CollectionSchema


class DeleteLog:
    """Every ``(pk, ts)`` delete seen, concatenated on demand."""

    def __init__(self, pk_type: pa.DataType) -> None:
        self._type = pk_type
        self._pks: list[pa.Array] = []
        self._ts: list[np.ndarray] = []
        self._cache: tuple[pa.Array, np.ndarray] | None = None

    def append(self, pks: pa.Array, ts: np.ndarray) -> None:
        if len(pks):
            self._pks.append(pks)
            self._ts.append(np.asarray(ts, dtype=np.uint64))
            self._cache = None

    def pairs(self) -> tuple[pa.Array, np.ndarray]:
        if self._cache is None:
            if self._pks:
                self._cache = (pa.concat_arrays(self._pks), np.concatenate(self._ts))
                self._pks, self._ts = [self._cache[0]], [self._cache[1]]
            else:
                self._cache = (pa.array([], self._type), np.zeros(0, dtype=np.uint64))
        return self._cache

    def __len__(self) -> int:
        return sum(len(p) for p in self._pks)


def _cut_where(store: GrowingStore, pks: pa.Array, ts: np.ndarray, mask: np.ndarray | None = None) -> None:
    if mask is not None:
        if not mask.any():
            return
        pks, ts = pks.filter(pa.array(mask)), ts[mask]
    if len(pks):
        store.cut(pks, ts)


class ShardData:
    def __init__(self, schema: CollectionSchema) -> None:
        self.schema = schema
        self._pk = schema.primary_field.name
        self.growing: dict[int, GrowingStore] = {}
        self.sealed: dict[int, SealedSegment] = {}
        self.deletes = DeleteLog(schema.primary_field.arrow_type())

    def add_fields(self, schema: CollectionSchema) -> None:
        """Take ``schema`` (fields added): every store gets them, new growing segments start with them."""
        self.schema = schema
        for store in self.stores():
            store.add_fields(schema)

    def stores(self) -> Iterator[GrowingStore]:
        yield from self.growing.values()
        for seg in self.sealed.values():
            yield seg.store

    @property
    def growing_rows(self) -> int:
        return sum(s.num_rows for s in self.growing.values())

    @property
    def sealed_rows(self) -> int:
        return sum(s.store.num_rows for s in self.sealed.values())

    def insert(self, segment_id: int, table: pa.Table) -> bool:
        """Apply an insert of ``segment_id`` (``table`` has ``_ts``); False if the segment is sealed here."""
        if segment_id in self.sealed:
            return False  # its rows come from object storage
        store = self.growing.get(segment_id)
        if store is None:
            store = self.growing[segment_id] = GrowingStore(self.schema)
        store.apply_insert(table)
        pks = table.column(self._pk).combine_chunks()
        ts = np.asarray(table.column(TIMESTAMP_COLUMN).to_numpy(), dtype=np.uint64)
        for sid, other in self.growing.items():
            if sid != segment_id:
                _cut_where(other, pks, ts)
        for seg in self.sealed.values():
            _cut_where(seg.store, pks, ts, seg.may_contain(pks))
        return True

    def delete(self, pks: pa.Array, ts: int) -> None:
        stamps = np.full(len(pks), ts, dtype=np.uint64)
        self.deletes.append(pks, stamps)
        for store in self.growing.values():
            store.apply_delete(pks, ts)
        for seg in self.sealed.values():
            _cut_where(seg.store, pks, stamps, seg.may_contain(pks))

    def add_deletes(self, pks: pa.Array, ts: np.ndarray) -> None:
        """Deletes with their own timestamps (an L0 segment): logged and applied everywhere."""
        self.deletes.append(pks, ts)
        for store in self.growing.values():
            _cut_where(store, pks, ts)
        for seg in self.sealed.values():
            _cut_where(seg.store, pks, ts, seg.may_contain(pks))

    def add_sealed(self, seg: SealedSegment) -> None:
        """Serve ``seg`` from now on instead of its growing copy (if any), with every delete and cut applied."""
        pks, ts = self.deletes.pairs()
        if len(pks):
            _cut_where(seg.store, pks, ts, seg.may_contain(pks))
        # Every version here against every version elsewhere: each version ends at the first
        # newer one of its key wherever that lives (cut is order-independent and idempotent).
        keys, stamps = seg.store.versions()
        if len(keys):
            others: list[tuple[GrowingStore, np.ndarray]] = [
                (store, np.ones(len(keys), dtype=bool))
                for sid, store in self.growing.items()
                if sid != seg.segment_id
            ]
            others += [(s.store, s.may_contain(keys)) for s in self.sealed.values() if s.segment_id != seg.segment_id]
            for store, mask in others:
                if not mask.any():
                    continue
                mine_keys, mine_ts = keys.filter(pa.array(mask)), stamps[mask]
                there_keys, there_ts = store.versions(pc.unique(mine_keys))
                if len(there_keys):
                    _cut_where(seg.store, there_keys, there_ts)  # newer versions there end ours
                    _cut_where(store, mine_keys, mine_ts)  # ours end older ones there
        self.growing.pop(seg.segment_id, None)
        self.sealed[seg.segment_id] = seg

    def release(self, segment_id: int) -> None:
        self.sealed.pop(segment_id, None)
