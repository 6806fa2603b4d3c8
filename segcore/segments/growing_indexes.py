"""The scalar indexes a growing store's filters read: per-chunk indexes (``segcore/index/scalar/chunked.py``)
kept beside each store for the collection's scalar index definitions.

The cache of a store lives as long as the store (a weak reference to it), and
is replaced when the definitions change (an index created or dropped).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence

from segcore.index.scalar.chunked import ChunkedFilter, ChunkIndexes
from segcore.index.scalar.spec import ScalarIndexSpec
from segcore.segments.growing import GrowingStore

_lock = threading.Lock()
_caches: weakref.WeakKeyDictionary[GrowingStore, ChunkIndexes] = weakref.WeakKeyDictionary()


def chunk_indexes(store: GrowingStore, specs: Sequence[ScalarIndexSpec]) -> ChunkIndexes:
    """The per-chunk index cache of ``store`` for ``specs`` (a new, empty one when they changed)."""
    wanted = tuple(specs)
    with _lock:
        cache = _caches.get(store)
        if cache is None or cache.specs != wanted:
            cache = _caches[store] = ChunkIndexes(wanted)
        return cache


def growing_filter(store: GrowingStore, specs: Sequence[ScalarIndexSpec]) -> ChunkedFilter | None:
    """``store``'s rows now as the evaluator asks indexes, or ``None`` when no index is defined."""
    if not specs:
        return None
    view = chunk_indexes(store, specs).view(store.table())
    return view if view else None
