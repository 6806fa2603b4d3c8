"""The rows a query returns, by ascending int64 primary key, chosen with numpy over the key array.

A query answers a segment's visible rows that match, by ascending primary key,
at most ``limit`` of them (the smallest keys). With int64 keys cached as a
numpy array this needs no Arrow ``take`` of the candidates' keys: the keys of
the candidates are gathered and only the ``limit`` smallest are sorted.

When the keys ascend with the row position (rows inserted in key order: a
sealed segment of ``auto_id`` or ordered keys), the smallest keys are the
first positions: the filter's mask is read with the visibility from the
segment's start until ``limit`` rows are found; a scalar index's rows (in any
order) are cut to those below a bound that holds about twice ``limit`` of
them, and only those are sorted and checked for visibility. Either way the
work no longer grows with the rows the filter matches (beyond one vectorised
comparison per listed row).
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
    rows: np.ndarray, visible: np.ndarray, keys: np.ndarray, *, ascending: bool, limit: int | None
) -> np.ndarray:
    """The visible positions among ``rows`` (each once, any order), by ascending key, at most ``limit``.

    ``visible``: bool per row of the segment; ``keys``: its int64 primary keys per row (unique among
    visible rows); ``ascending``: ``keys_ascend(keys)``. ``limit`` ``None``: every row.
    """
    if ascending and limit is not None and limit > 0 and len(rows) > _SCAN_FACTOR * limit:
        return _first_rows(rows, visible, limit)
    return _by_key(rows[visible[rows]], keys, ascending=ascending, limit=limit)


def _first_rows(rows: np.ndarray, visible: np.ndarray, limit: int) -> np.ndarray:
    """The ``limit`` smallest visible positions among ``rows`` (fewer if there are not as many): those
    below a bound that holds ``limit`` rows at their average density twice over, sorted; if too few
    of them are visible, those of the next stretch (each twice the last), and so on."""
    size = len(visible)
    low, high = 0, max(_MIN_STRETCH, 2 * size * limit // len(rows))
    found: list[np.ndarray] = []
    count = 0
    while low < size and count < limit:
        inside = rows < high if low == 0 else (rows >= low) & (rows < high)
        part = np.sort(rows[inside])
        part = part[visible[part]]
        if len(part):
            found.append(part)
            count += len(part)
        low, high = high, high + 2 * (high - low)
    if not found:
        return np.empty(0, dtype=np.intp)
    return np.concatenate(found)[:limit]


def ordered_mask(
    mask: np.ndarray | None, visible: np.ndarray, keys: np.ndarray, *, ascending: bool, limit: int | None
) -> np.ndarray:
    """The visible positions where ``mask`` holds (``None``: every row), by ascending key, at most ``limit``."""
    if ascending and limit is not None and limit > 0:
        return _first_positions(visible if mask is None else mask, None if mask is None else visible, limit,
                                _MIN_STRETCH)
    return _by_key(np.flatnonzero(visible if mask is None else visible & mask), keys, ascending=ascending,
                   limit=limit)


def _by_key(rows: np.ndarray, keys: np.ndarray, *, ascending: bool, limit: int | None) -> np.ndarray:
    """Visible ``rows`` by ascending key, at most ``limit``."""
    if ascending:
        rows = np.sort(rows)
        return rows if limit is None else rows[:limit]
    values = keys[rows]
    if limit is not None and 0 < limit < len(rows):
        smallest = np.argpartition(values, limit - 1)[:limit]
        return rows[smallest[np.argsort(values[smallest])]]
    return rows[np.argsort(values)]


def _first_positions(marked: np.ndarray, visible: np.ndarray | None, limit: int, stretch: int) -> np.ndarray:
    """The first ``limit`` positions where ``marked`` (and ``visible``) hold, read from the start in
    stretches of ``stretch`` rows and more (each twice the last)."""
    size = len(marked)
    stretch = max(_MIN_STRETCH, stretch)
    found: list[np.ndarray] = []
    count = start = 0
    while start < size and count < limit:
        stop = min(size, start + stretch)
        part = marked[start:stop] if visible is None else marked[start:stop] & visible[start:stop]
        hits = np.flatnonzero(part)
        if len(hits):
            found.append(hits + start)
            count += len(hits)
        start, stretch = stop, stretch * 2
    if not found:
        return np.empty(0, dtype=np.intp)
    return np.concatenate(found)[:limit]
