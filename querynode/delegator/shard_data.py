"""All the data one delegator serves for its vchannel: growing and sealed segments and every delete.

Plain data, no I/O, not thread-safe: the delegator serialises writes and reads.

* **growing**: one ``GrowingStore`` per segment id, filled from the WAL;
* **sealed**: ``SealedSegment`` loaded from object storage; a sealed segment
  replaces its growing copy in one step (``add_sealed``), so readers see the
  segment's rows exactly once, before and after;
* **deletes**: every delete of the vchannel (from L0 segments and from the
  WAL), kept so that a segment loaded later gets them too.

Versions across segments: within a partition, a primary key's newest version
is the only one visible, wherever it lives, exactly as within one store. An
insert in one segment *cuts* older versions of its keys in every other segment
of its partition (sealed ones only where their PK statistics may hold the
key); a loaded sealed segment and every other segment of its partition cut
each other's older versions; a delete reaches every segment of the partition it
names, or of every partition (sealed ones through the PK statistics). Rows of
one key in two partitions are two rows, as in Milvus (reads merge them by key).
Cuts are order-independent (``GrowingStore.cut``), so it does not matter which
arrives first.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from common.schema import TIMESTAMP_COLUMN, CollectionSchema
from common.storage.layout import ALL_PARTITIONS
from segcore.segments.growing import GrowingStore
from segcore.segments.sealed import SealedSegment


class DeleteLog:
    """Every ``(pk, ts)`` delete seen, with the partition it named (``ALL_PARTITIONS``: every one)."""

    def __init__(self, pk_type: pa.DataType) -> None:
        self._type = pk_type
        self._entries: list[tuple[int, pa.Array, np.ndarray]] = []

    def append(self, pks: pa.Array, ts: np.ndarray, partition_id: int = ALL_PARTITIONS) -> None:
        if len(pks):
            self._entries.append((partition_id, pks, np.asarray(ts, dtype=np.uint64)))

    def pairs(self, partition_id: int) -> tuple[pa.Array, np.ndarray]:
        """The deletes that reach rows of ``partition_id``."""
        chosen = [(p, t) for part, p, t in self._entries if part in (partition_id, ALL_PARTITIONS)]
        if not chosen:
            return pa.array([], self._type), np.zeros(0, dtype=np.uint64)
        return pa.concat_arrays([p for p, _ in chosen]), np.concatenate([t for _, t in chosen])

    def __len__(self) -> int:
        return sum(len(p) for _, p, _ in self._entries)


def reaches(delete_partition: int, partition_id: int) -> bool:
    """A delete naming ``delete_partition`` reaches rows of ``partition_id``."""
    return delete_partition in (partition_id, ALL_PARTITIONS)


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
        self.partition_of: dict[int, int] = {}  # growing segment -> its partition
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

    def growing_in(self, partition_id: int, *, but: int | None = None) -> list[tuple[int, GrowingStore]]:
        """The growing segments of ``partition_id`` (every one for ``ALL_PARTITIONS``), except ``but``."""
        return [
            (sid, store) for sid, store in self.growing.items()
            if sid != but and reaches(partition_id, self.partition_of.get(sid, ALL_PARTITIONS))
        ]

    def insert(self, segment_id: int, table: pa.Table, partition_id: int = ALL_PARTITIONS) -> bool:
        """Apply an insert of ``segment_id`` in ``partition_id`` (``table`` has ``_ts``); False if the
        segment is sealed here."""
        if segment_id in self.sealed:
            return False  # its rows come from object storage
        store = self.growing.get(segment_id)
        if store is None:
            store = self.growing[segment_id] = GrowingStore(self.schema)
            self.partition_of[segment_id] = partition_id
        store.apply_insert(table)
        pks = table.column(self._pk).combine_chunks()
        ts = np.asarray(table.column(TIMESTAMP_COLUMN).to_numpy(), dtype=np.uint64)
        for _, other in self.growing_in(partition_id, but=segment_id):
            _cut_where(other, pks, ts)
        for seg in self.sealed.values():
            if reaches(partition_id, seg.meta.partition_id):
                _cut_where(seg.store, pks, ts, seg.may_contain(pks))
        return True

    def delete(self, pks: pa.Array, ts: int, partition_id: int = ALL_PARTITIONS) -> None:
        """A delete at ``ts`` of the rows of ``pks`` in ``partition_id`` (``ALL_PARTITIONS``: every one)."""
        self.add_deletes(pks, np.full(len(pks), ts, dtype=np.uint64), partition_id)

    def add_deletes(self, pks: pa.Array, ts: np.ndarray, partition_id: int = ALL_PARTITIONS) -> None:
        """Deletes with their own timestamps (an L0 segment): logged and applied to the partition's segments."""
        self.deletes.append(pks, ts, partition_id)
        for _, store in self.growing_in(partition_id):
            _cut_where(store, pks, ts)
        for seg in self.sealed.values():
            if reaches(partition_id, seg.meta.partition_id):
                _cut_where(seg.store, pks, ts, seg.may_contain(pks))

    def add_sealed(self, seg: SealedSegment) -> None:
        """Serve ``seg`` from now on instead of its growing copy (if any), with every delete and cut applied."""
        partition = seg.meta.partition_id
        pks, ts = self.deletes.pairs(partition)
        if len(pks):
            _cut_where(seg.store, pks, ts, seg.may_contain(pks))
        # Every version here against every version elsewhere in its partition: each version ends at
        # the first newer one of its key wherever that lives (cut is order-independent and idempotent).
        keys, stamps = seg.store.versions()
        if len(keys):
            others: list[tuple[GrowingStore, np.ndarray]] = [
                (store, np.ones(len(keys), dtype=bool)) for _, store in self.growing_in(partition, but=seg.segment_id)
            ]
            others += [
                (s.store, s.may_contain(keys)) for s in self.sealed.values()
                if s.segment_id != seg.segment_id and s.meta.partition_id == partition
            ]
            for store, mask in others:
                if not mask.any():
                    continue
                mine_keys, mine_ts = keys.filter(pa.array(mask)), stamps[mask]
                there_keys, there_ts = store.versions(pc.unique(mine_keys))
                if len(there_keys):
                    _cut_where(seg.store, there_keys, there_ts)  # newer versions there end ours
                    _cut_where(store, mine_keys, mine_ts)  # ours end older ones there
        self.growing.pop(seg.segment_id, None)
        self.partition_of.pop(seg.segment_id, None)
        self.sealed[seg.segment_id] = seg

    def release(self, segment_id: int) -> None:
        self.sealed.pop(segment_id, None)
