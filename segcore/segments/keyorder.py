"""The rows a query returns, by ascending int64 primary key, chosen with numpy over the key array.

A query answers a segment's visible rows that match, by ascending primary key,
at most ``limit`` of them (the smallest keys). With int64 keys cached as a
numpy array this needs no Arrow ``take`` of the candidates' keys: the keys of
the candidates are gathered and only the ``limit`` smallest are sorted.

When the keys ascend with the row position (rows inserted in key order: a
sealed segment of ``auto_id`` or ordered keys), the smallest keys are the
first positions, so a selective filter's rows (a scalar index's answer, in
any order) are marked in a bitmap and read from the segment's start until
``limit`` visible ones are found: the work no longer grows with the number of
rows the filter matches.
"""

from __future__ import annotations

import numpy as np

#: Scanning from the start pays off once the candidates outnumber ``limit`` this many times.
_SCAN_FACTOR = 8
#: The first stretch of positions read when scanning (it doubles each time).
_MIN_STRETCH = 4096


def keys_ascend(keys: np.ndarray) -> bool:
    """Whether ``keys`` strictly increase with the position (no key twice)."""
    return bool(np.all(keys[1:] > keys[:-1]))


def ordered_rows(
    rows: np.ndarray, visible: np.ndarray | None, keys: np.ndarray, *, ascending: bool, limit: int | None
) -> np.ndarray:
    """The visible positions among ``rows`` (each once, any order), by ascending key, at most ``limit``.

    ``visible``: bool per row of the segment, or ``None`` when ``rows`` are visible rows by ascending
    position already (a mask's ``flatnonzero``); ``keys``: the segment's int64 primary keys per row
    (unique among visible rows); ``ascending``: ``keys_ascend(keys)``. ``limit`` ``None``: every row.
    """
    if visible is not None:
        if ascending and limit is not None and limit > 0 and len(rows) > _SCAN_FACTOR * limit:
            return _first_positions(rows, visible, limit)
        rows = np.sort(rows[visible[rows]]) if ascending else rows[visible[rows]]
    if ascending:
        return rows if limit is None else rows[:limit]
    values = keys[rows]
    if limit is not None and 0 < limit < len(rows):
        smallest = np.argpartition(values, limit - 1)[:limit]
        return rows[smallest[np.argsort(values[smallest])]]
    return rows[np.argsort(values)]


def _first_positions(rows: np.ndarray, visible: np.ndarray, limit: int) -> np.ndarray:
    """The ``limit`` smallest visible positions among ``rows`` (fewer if there are not as many)."""
    size = len(visible)
    marked = np.zeros(size, dtype=bool)
    marked[rows] = True
    # The stretch that holds ``limit`` candidates at their average density, twice over.
    stretch = max(_MIN_STRETCH, 2 * size * limit // max(len(rows), 1))
    found: list[np.ndarray] = []
    count = start = 0
    while start < size and count < limit:
        stop = min(size, start + stretch)
        hits = np.flatnonzero(marked[start:stop] & visible[start:stop])
        if len(hits):
            found.append(hits + start)
            count += len(hits)
        start, stretch = stop, stretch * 2
    if not found:
        return np.empty(0, dtype=np.int64)
    return np.concatenate(found)[:limit]
