"""How far an index of a collection is built: rows of its sealed segments whose index is saved.

Query nodes build a sealed segment's vector index the first time it is loaded,
in the background, and save it in object storage (``querynode/index/store.py``:
``index_files/<collection>/<segment>/<index_id>/meta.json``, written last).
``describe_index`` reports from this: ``indexed_rows`` counts the rows of the
FLUSHED L1 segments whose index is saved, ``total_rows`` those of every such
segment. Blocking (it lists the collection's index files): call in a thread.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from services.segment import SegmentLevel, SegmentMeta
from services.storage.layout import INDEX_META_FILE, collection_index_prefix
from services.storage.objectstore import ObjectStore


@dataclass(frozen=True, slots=True)
class IndexProgress:
    indexed_rows: int
    total_rows: int


def saved_indexes(storage: ObjectStore, collection_id: int) -> set[tuple[int, int]]:
    """``(segment_id, index_id)`` of every index saved for the collection."""
    prefix = collection_index_prefix(collection_id)
    out: set[tuple[int, int]] = set()
    for entry in storage.list(prefix):
        parts = entry.path[len(prefix) + 1 :].split("/")
        if len(parts) == 3 and parts[2] == INDEX_META_FILE and parts[0].isdigit() and parts[1].isdigit():
            out.add((int(parts[0]), int(parts[1])))
    return out


def index_progress(saved: set[tuple[int, int]], segments: Sequence[SegmentMeta], index_id: int) -> IndexProgress:
    """Rows of the L1 ``segments`` with index ``index_id`` saved, and of all of them (empty ones left out)."""
    sealed = [s for s in segments if s.level == SegmentLevel.L1 and s.rows > 0]
    indexed = sum(s.rows for s in sealed if (s.segment_id, index_id) in saved)
    return IndexProgress(indexed_rows=indexed, total_rows=sum(s.rows for s in sealed))
