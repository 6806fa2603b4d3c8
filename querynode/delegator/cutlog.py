"""Everything that can end a version of a key in a vchannel, kept so a newly loaded segment gets all of it.

Two kinds of ``(pk, ts)`` pairs: **deletes**, and **versions** (each row's key
and timestamp, by segment: an insert supersedes older versions of its key in
every other segment of its partition). Each pair has a partition: a delete's is
the one it named (``ALL_PARTITIONS``: every one), a version's that of its
segment. A sealed segment loaded later must be cut by every delete of its
partition and by every version in other segments of its partition
(``cuts_for``); its own versions are recorded here so later loads are cut by
them in turn. Rows of one key in two partitions are two rows, as in Milvus:
neither ends the other. Entries carry a sequence number, so a load can take
what existed when it started and then, under the delegator's lock, what
arrived meanwhile (``since``).

Memory: 16 bytes per row and delete of the vchannel (compaction, issue #9, is
what may later fold deletes into segments and trim this).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from common.storage.layout import ALL_PARTITIONS

DELETES = -1


@dataclass(frozen=True, slots=True)
class _Entry:
    seq: int
    segment: int  # DELETES for deletes
    partition: int  # ALL_PARTITIONS: a delete of every partition
    pks: pa.Array
    ts: np.ndarray

    def concerns(self, segment: int, partition: int) -> bool:
        """A pair of this entry may end a row of ``segment`` (in ``partition``)."""
        return self.segment != segment and self.partition in (partition, ALL_PARTITIONS)


class CutLog:
    def __init__(self, pk_type: pa.DataType) -> None:
        self._type = pk_type
        self._entries: list[_Entry] = []
        self._seq = 0

    def _add(self, segment: int, partition: int, pks: pa.Array, ts: np.ndarray) -> None:
        if len(pks):
            self._seq += 1
            self._entries.append(_Entry(self._seq, segment, partition, pks, np.asarray(ts, dtype=np.uint64)))

    def add_versions(self, segment: int, partition: int, pks: pa.Array, ts: np.ndarray) -> None:
        self._add(segment, partition, pks, ts)

    def add_deletes(self, pks: pa.Array, ts: np.ndarray, partition: int = ALL_PARTITIONS) -> None:
        self._add(DELETES, partition, pks, ts)

    def set_versions(self, segment: int, partition: int, pks: pa.Array, ts: np.ndarray) -> None:
        """Replace what is recorded of ``segment`` (its growing part) by its full sealed rows."""
        self.drop(segment)
        self._add(segment, partition, pks, ts)

    def drop(self, segment: int) -> None:
        self._entries = [e for e in self._entries if e.segment != segment]

    def mark(self) -> int:
        return self._seq

    def cuts_for(
        self, segment: int, partition: int, may_contain: Callable[[pa.Array], np.ndarray], *, since: int = 0
    ) -> tuple[pa.Array, np.ndarray]:
        """Deletes of ``partition`` and versions of its other segments (entries after ``since``) whose
        key ``segment`` may hold."""
        chosen = [e for e in self._entries if e.seq > since and e.concerns(segment, partition)]
        if not chosen:
            return pa.array([], self._type), np.zeros(0, dtype=np.uint64)
        pks = pa.concat_arrays([e.pks for e in chosen])
        ts = np.concatenate([e.ts for e in chosen])
        hit = may_contain(pks)
        return pks.filter(pa.array(hit)), ts[hit]

    def __len__(self) -> int:
        return sum(len(e.pks) for e in self._entries)
