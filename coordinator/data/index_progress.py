"""How far an index of a collection is built: rows of its sealed segments whose index is saved.

Query nodes build a sealed segment's vector index when the coordinator asks
(``index_builds.py``, loaded or not) or when they load it, and save it in object storage (``segcore/index/store.py``:
``index_files/<collection>/<segment>/<index_id>/meta.json``, written last).
``describe_index`` reports from this: ``indexed_rows`` counts the rows of the
FLUSHED L1 segments whose index is saved, ``total_rows`` those of every such
segment. Blocking (it lists the collection's index files): call in a thread.

As in Milvus (datacoord's index task: "segment does not need index really"), a
segment that needs no build counts as indexed at once: one of fewer than
``MIN_ROWS_TO_INDEX`` rows (Milvus' ``minSegmentNumRowsToEnableIndex``), or any
segment under an index that trains nothing (FLAT, BIN_FLAT); the coordinator's
index builds skip those (query nodes still build a small segment's index when
they load it; it is searched exactly meanwhile).

A build the query node refused for good (``IndexBuildScheduler.failures``: the
index's parameters cannot be built) is reported as Milvus reports a failed
segment index: ``fail_reason`` lists ``"<segment id>: <reason>;"`` for each such
segment, and the index's state is Failed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from common.segment import SegmentLevel, SegmentMeta
from common.storage.layout import INDEX_META_FILE, collection_index_prefix
from common.storage.objectstore import ObjectStore

#: Milvus' ``indexCoord.segment.minSegmentNumRowsToEnableIndex``: smaller segments need no built index.
MIN_ROWS_TO_INDEX = 1024
#: Index types that train nothing: a segment under them needs no build (Milvus' ``IsNoTrainIndex``).
NO_TRAIN_INDEX_TYPES = frozenset({"FLAT", "BIN_FLAT"})


@dataclass(frozen=True, slots=True)
class IndexProgress:
    indexed_rows: int
    total_rows: int
    fail_reason: str = ""


def saved_indexes(storage: ObjectStore, collection_id: int) -> set[tuple[int, int]]:
    """``(segment_id, index_id)`` of every index saved for the collection."""
    prefix = collection_index_prefix(collection_id)
    out: set[tuple[int, int]] = set()
    for entry in storage.list(prefix):
        parts = entry.path[len(prefix) + 1 :].split("/")
        if len(parts) == 3 and parts[2] == INDEX_META_FILE and parts[0].isdigit() and parts[1].isdigit():
            out.add((int(parts[0]), int(parts[1])))
    return out


def needs_build(segment: SegmentMeta, index_type: str) -> bool:
    """Whether ``segment`` waits for a built index of ``index_type`` (case-insensitive) to count as indexed.

    >>> from dataclasses import replace
    >>> from common.segment import SegmentState
    >>> big = SegmentMeta(segment_id=1, collection_id=1, partition_id=1, vchannel="v",
    ...                   state=SegmentState.FLUSHED, rows=2000, manifest="m")
    >>> needs_build(big, "HNSW"), needs_build(big, "flat"), needs_build(replace(big, rows=12), "HNSW")
    (True, False, False)
    """
    return segment.rows >= MIN_ROWS_TO_INDEX and index_type.upper() not in NO_TRAIN_INDEX_TYPES


def index_progress(
    saved: set[tuple[int, int]],
    segments: Sequence[SegmentMeta],
    index_id: int,
    *,
    index_type: str,
    failures: Mapping[tuple[int, int], str] | None = None,
) -> IndexProgress:
    """Rows of the L1 ``segments`` with index ``index_id`` saved or needing no build (``needs_build``),
    and of all of them (empty ones left out); the failed builds (``(segment, index)`` -> reason) of
    those segments that are not saved, as Milvus' ``fail_reason``."""
    sealed = [s for s in segments if s.level == SegmentLevel.L1 and s.rows > 0]
    done = {s.segment_id for s in sealed if (s.segment_id, index_id) in saved or not needs_build(s, index_type)}
    failed = failures or {}
    reasons = [
        f"{s.segment_id}: {failed[(s.segment_id, index_id)]};"
        for s in sorted(sealed, key=lambda s: s.segment_id)
        if s.segment_id not in done and (s.segment_id, index_id) in failed
    ]
    return IndexProgress(
        indexed_rows=sum(s.rows for s in sealed if s.segment_id in done),
        total_rows=sum(s.rows for s in sealed),
        fail_reason="".join(reasons),
    )
