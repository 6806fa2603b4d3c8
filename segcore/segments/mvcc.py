"""Row visibility at a read timestamp (MVCC) for an append-only store.

Every stored row gets a validity interval ``[begin, end)`` of timestamps:
``begin`` is the row's own ``_ts``; ``end`` is the earliest timestamp at which
the row stops being live, either because

* a newer version of the same key was inserted (upsert, or a plain insert of a
  key already stored: newest wins) -> ``end = newer row's _ts``, or
* a delete of the key at ``T`` with ``row _ts < T`` -> ``end = T``.

Rows of one key with the *same* ``_ts`` (one insert naming a key twice) are
*siblings*: none ends another. They are all live (``live``: what ``count(*)``
counts, as Milvus counts every row of a duplicated key), and every one but the
last inserted is *shadowed*, so reads of rows (``visible``: query, search) see
one row per key, the last inserted. Siblings share their fate: whatever ends
one ends them all.

A row is live at ``read_ts`` iff ``begin <= read_ts < end``: one vectorised
comparison over two arrays, whatever the history. Examples (one key):

* insert@5, insert@8: row@5 is ``[5, 8)``, row@8 is ``[8, inf)``.
* insert@5, delete@7, insert@7 (upsert, either order): ``[5, 7)``, ``[7, inf)``;
  the delete at 7 never hides the row inserted at 7.
* two inserts of the key at 7 (same or different batches): both ``[7, inf)``,
  the first shadowed; a delete at 9 ends both at 9.

Versions of a key form a chain (``prev`` row per row, ``last`` row per key
code). A delete only needs to cut the newest version older than itself, and
its siblings (the rows just before it in the chain with the same ``_ts``):
every older version already ends at its successor's ``_ts``, which is not later.

Ordering contract: inserts arrive in timestamp order and never below the
timestamp of anything applied before (WAL order). Deletes may be late (older
than rows already stored); they then cut the version that was live at their
timestamp.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from segcore.segments.buffers import GrowableArray
from segcore.segments.pk_index import MISSING, PkIndex

#: ``end`` of a row nothing has superseded or deleted yet.
FOREVER = np.iinfo(np.uint64).max


def _max_at_most(values: np.ndarray, at: np.uint64) -> int:
    """The largest of ``values`` not above ``at`` (0 when none is)."""
    below = values[values <= at]
    return int(below.max()) if len(below) else 0


def _min_above(values: np.ndarray, at: np.uint64) -> int:
    """The smallest of ``values`` above ``at`` (``FOREVER`` + 1 when none is)."""
    above = values[values > at]
    return int(above.min()) if len(above) else int(FOREVER) + 1


class VersionChains:
    """Validity intervals of an append-only sequence of rows keyed by primary key.

    Not thread-safe: one writer, and reads must not overlap writes.
    """

    __slots__ = ("_begin", "_end", "_high_water", "_index", "_last", "_prev", "_shadowed", "_span")

    def __init__(self, index: PkIndex) -> None:
        self._index = index
        self._begin = GrowableArray(np.uint64)  # per row: its _ts
        self._end = GrowableArray(np.uint64)  # per row: first ts it is no longer live
        self._prev = GrowableArray(np.int64)  # per row: previous version's row, or -1
        self._shadowed = GrowableArray(np.bool_)  # per row: a later sibling (same key and _ts) exists
        self._last = GrowableArray(np.int64)  # per key code: newest version's row
        self._high_water = 0
        # The last ``visible`` answer and the read timestamps ``[lo, hi)`` it holds for: no row begins or
        # ends inside, so a sealed segment's reads at ever newer timestamps reuse it until the next write.
        self._span: tuple[int, int, np.ndarray] | None = None

    @property
    def num_rows(self) -> int:
        return len(self._begin)

    @property
    def high_water(self) -> int:
        """Largest timestamp applied so far (insert or delete); 0 when empty."""
        return self._high_water

    def check_append(self, ts: np.ndarray) -> None:
        """Raise ``ValueError`` unless rows with timestamps ``ts`` may be appended now."""
        if len(ts) == 0:
            return
        if np.any(ts[1:] < ts[:-1]):
            raise ValueError("row timestamps of an insert batch must be non-decreasing")
        if int(ts[0]) < self._high_water:
            raise ValueError(
                f"insert at ts {int(ts[0])} arrived after ts {self._high_water} was applied"
            )

    def append(self, pks: pa.Array, ts: np.ndarray) -> None:
        """Append rows with keys ``pks`` (no nulls) and uint64 timestamps ``ts``."""
        self.check_append(ts)
        self._span = None
        count = len(ts)
        if count == 0:
            return
        base = self.num_rows
        codes = self._index.add(pks)
        self._last.extend_filled(len(self._index) - len(self._last), MISSING)

        # Group the batch's rows by key, keeping arrival order inside a group.
        order = np.argsort(codes, kind="stable")
        sorted_codes = codes[order]
        rows = base + order
        starts_group = np.ones(count, dtype=bool)
        starts_group[1:] = sorted_codes[1:] != sorted_codes[:-1]
        ends_group = np.ones(count, dtype=bool)
        ends_group[:-1] = starts_group[1:]

        last = self._last.view()
        prev_sorted = np.empty(count, dtype=np.int64)
        prev_sorted[1:] = rows[:-1]  # in-batch predecessor...
        prev_sorted[starts_group] = last[sorted_codes[starts_group]]  # ...or the stored newest
        prev = np.empty(count, dtype=np.int64)
        prev[order] = prev_sorted

        self._begin.append(ts)
        self._end.extend_filled(count, FOREVER)
        self._prev.append(prev)
        self._shadowed.extend_filled(count, False)
        last[sorted_codes[ends_group]] = rows[ends_group]

        # Each predecessor has exactly one successor: an older one ends where it begins (with its
        # siblings), one of the same _ts is its sibling and only shadowed by it.
        has_prev = prev >= 0
        predecessors, successor_ts = prev[has_prev], ts[has_prev]
        same = self._begin.view()[predecessors] == successor_ts
        self._shadowed.view()[predecessors[same]] = True
        self._end_with_siblings(predecessors[~same], successor_ts[~same])
        self._high_water = max(self._high_water, int(ts[-1]))

    def _end_with_siblings(self, rows: np.ndarray, ts: np.ndarray) -> None:
        """End each of ``rows`` at its ``ts`` (if not earlier), and the siblings before it in its chain."""
        self._span = None
        begin, prev, end = self._begin.view(), self._prev.view(), self._end.view()
        while len(rows):
            np.minimum.at(end, rows, ts)
            before = prev[rows]
            sibling = before >= 0
            sibling[sibling] = begin[before[sibling]] == begin[rows[sibling]]
            rows, ts = before[sibling], ts[sibling]

    def delete(self, pks: pa.Array, ts: int) -> None:
        """Hide, from ``ts`` on, the version of each key that was live just before ``ts``."""
        self.cut(pks, np.full(len(pks), ts, dtype=np.uint64))

    def cut(self, pks: pa.Array, ts: np.ndarray) -> None:
        """Like :meth:`delete` with a timestamp per key: key ``i`` is cut at ``ts[i]``.

        Each ``(key, ts)`` pair independently ends the version that was live just
        before its ``ts`` (never one inserted at or after it), so pairs may come in
        any order, repeat, or be applied again: the result is the same. This is
        also how an insert in another segment supersedes older versions here.
        """
        if len(pks) != len(ts):
            raise ValueError(f"cut needs one timestamp per key: {len(pks)} keys, {len(ts)} timestamps")
        if len(ts) == 0:
            return
        ts = np.asarray(ts, dtype=np.uint64)
        self._high_water = max(self._high_water, int(ts.max()))
        codes = self._index.lookup(pks)
        known = codes != MISSING
        if not known.any():
            return
        codes, ts = codes[known], ts[known]
        begin = self._begin.view()
        prev = self._prev.view()
        rows = self._last.view()[codes].copy()
        # Walk back past versions inserted at or after each pair's ts. Usually zero or one step.
        while True:
            present = rows >= 0
            walk = present.copy()
            walk[present] = begin[rows[present]] >= ts[present]
            if not walk.any():
                break
            rows[walk] = prev[rows[walk]]
        hit = rows >= 0
        self._end_with_siblings(rows[hit], ts[hit])

    def newest_begin(self, pks: pa.Array) -> np.ndarray:
        """Per key, the ``_ts`` of its newest stored version (deleted or not); 0 if it has none."""
        out = np.zeros(len(pks), dtype=np.uint64)
        codes = self._index.lookup(pks)
        known = codes != MISSING
        if known.any():
            rows = self._last.view()[codes[known]]
            present = rows >= 0
            vals = np.zeros(len(rows), dtype=np.uint64)
            vals[present] = self._begin.view()[rows[present]]
            out[known] = vals
        return out

    def written_since(self, ts: int) -> np.ndarray:
        """Bool per row: its version was written at or after ``ts`` (``begin >= ts``)."""
        return self._begin.view() >= np.uint64(ts)

    def live(self, read_ts: int) -> np.ndarray:
        """Bool per row: live at ``read_ts`` (``begin <= read_ts < end``), siblings all counted."""
        at = np.uint64(read_ts)
        return (self._begin.view() <= at) & (self._end.view() > at)

    def visible(self, read_ts: int) -> np.ndarray:
        """Bool per row: the row a read of its key sees at ``read_ts`` (live, and not shadowed by a
        later sibling): at most one per key. Read-only; the same array may answer several timestamps."""
        span = self._span
        if span is not None and span[0] <= read_ts < span[1]:
            return span[2]
        at = np.uint64(read_ts)
        begin, end = self._begin.view(), self._end.view()
        mask = (begin <= at) & (end > at) & ~self._shadowed.view()
        mask.flags.writeable = False
        # Visibility changes only at a row's begin or end: it holds from the last of those at or before
        # ``read_ts`` up to the first one after it.
        lo = max(_max_at_most(begin, at), _max_at_most(end, at))
        hi = min(_min_above(begin, at), _min_above(end, at))
        self._span = (lo, hi, mask)
        return mask

    @property
    def has_siblings(self) -> bool:
        """Some key was stored twice with one timestamp (``live`` then counts more rows than ``visible``)."""
        return bool(self._shadowed.view().any())
