"""Text-match indexes of a sealed segment on a worker: restored at load, else built once and saved.

Like the other indexes of a sealed segment (``loader.py``), a text-match index
(``segcore/index/text``, one per ``enable_match`` field) is built once per
segment and saved beside it: by the compaction or import job that wrote the
segment (``jobs/segments.py``), else by the first worker that loads it (or
reads it for a coordinator's index build) and finds none, in the background,
while the segment is served. Until it is in place, ``TEXT_MATCH`` /
``PHRASE_MATCH`` on the segment use the in-memory token index built on first
use per column chunk (``common/fulltext/text_index.py``), as growing segments
always do; segments written before these indexes existed therefore need no
migration. Every function blocks (storage I/O, CPU): call from a thread.
"""

from __future__ import annotations

import pyarrow as pa
import structlog

from common.schema import CollectionSchema
from common.storage.objectstore import ObjectStore
from querynode.worker.segment import WorkerSegment
from segcore.index.text.index import TextIndex
from segcore.index.text.store import TextField, build_text_index, load_text_index, save_text_index, text_fields

log = structlog.get_logger().bind(component="text-index-loader")


def restore_text_indexes(storage: ObjectStore, schema: CollectionSchema, seg: WorkerSegment) -> list[TextField]:
    """Put each saved text-match index of ``seg`` in place; return the fields that have none saved."""
    missing: list[TextField] = []
    if seg.num_rows == 0:
        return missing
    for field in text_fields(schema):
        index = load_text_index(storage, seg.meta.collection_id, seg.segment_id, field, seg.num_rows)
        if index is None:
            missing.append(field)
        else:
            seg.put_text_index(field.name, field.analyzer_params, index)
    return missing


def ensure_text_index(storage: ObjectStore, seg: WorkerSegment, field: TextField) -> tuple[TextIndex, bool]:
    """The text-match index of ``field`` in ``seg``: restored if saved meanwhile, else built from the
    segment's rows and saved; and whether it was built. The segment may be read meanwhile (the build
    only reads the column)."""
    meta = seg.meta
    restored = load_text_index(storage, meta.collection_id, meta.segment_id, field, seg.num_rows)
    if restored is not None:
        return restored, False
    table = seg.store.table()
    column = table.column(field.name) if field.name in table.column_names else pa.nulls(seg.num_rows, pa.string())
    index = build_text_index(field, column.to_pylist())
    save_text_index(storage, meta.collection_id, meta.segment_id, field, index)
    log.info("text index built", collection_id=meta.collection_id, segment=meta.segment_id, field=field.name,
             rows=index.num_rows, terms=len(index.terms))
    return index, True
