"""Text-match indexes in object storage, beside the segment's other indexes.

Layout, relative to the object-store root (``common/storage/layout.py``)::

    index_files/<collection>/<segment>/text-<field_id>/meta.json
    index_files/<collection>/<segment>/text-<field_id>/text-<crc32c:08x>.npz

The same rules as the vector and scalar indexes (``segcore/index/store.py``):
the data file first, named after its checksum, ``meta.json`` last (the commit
marker); the coordinator's garbage collection removes them with the segment's
index prefix. A stored index that does not fit what is asked (another
analyzer, field or row count, a missing or corrupt data file) is treated as
absent and logged: the caller builds it again. Every function blocks
(storage I/O, CPU): call from a thread.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import crc32c
import structlog

from common.errors import InvalidArgument
from common.fulltext.analyzer import analyzer_for
from common.fulltext.functions import ANALYZER_PARAMS, match_enabled
from common.schema import CollectionSchema, FieldSchema
from common.storage.errors import ObjectNotFound
from common.storage.layout import INDEX_META_FILE, text_index_dir
from common.storage.objectstore import ObjectStore
from segcore.index.text.index import TextIndex

FORMAT = "strata-text-index/1"

log = structlog.get_logger().bind(component="text-index-store")


@dataclass(frozen=True, slots=True, kw_only=True)
class TextField:
    """A field that gets a text-match index: a ``VARCHAR`` with ``enable_match``."""

    name: str
    field_id: int
    analyzer_params: str  # as the field holds it ("" = the standard analyzer), as ``TextMatch`` carries it

    @staticmethod
    def of(field: FieldSchema) -> TextField:
        return TextField(name=field.name, field_id=field.field_id,
                         analyzer_params=str(field.type_params.get(ANALYZER_PARAMS, "")))


def text_fields(schema: CollectionSchema) -> list[TextField]:
    """The fields of ``schema`` that get a text-match index per sealed segment."""
    return [TextField.of(f) for f in schema.fields if match_enabled(f)]


def build_text_index(field: TextField, texts: list[str | None]) -> TextIndex:
    """The index of ``field`` over ``texts`` (every row of a segment, in order)."""
    return TextIndex.build(analyzer_for(field.analyzer_params or None), texts)


def _meta(field: TextField, rows: int) -> dict[str, object]:
    return {"format": FORMAT, "field_id": field.field_id, "analyzer_params": field.analyzer_params, "rows": rows}


def save_text_index(store: ObjectStore, collection_id: int, segment_id: int, field: TextField, index: TextIndex) -> str:
    """Store ``index`` of ``field``: data first, then the meta (replacing an older one). Returns the directory."""
    directory = text_index_dir(collection_id, segment_id, field.field_id)
    payload = index.to_bytes()
    checksum = crc32c.crc32c(payload)
    name = f"text-{checksum:08x}.npz"
    store.write_bytes(f"{directory}/{name}", payload)
    meta = {**_meta(field, index.num_rows), "data": {"name": name, "size": len(payload), "crc32c": checksum},
            "terms": len(index.terms), "postings": len(index.docs)}
    store.write_bytes(f"{directory}/{INDEX_META_FILE}", json.dumps(meta, sort_keys=True).encode())
    log.info("text index saved", path=directory, field=field.name, rows=index.num_rows, terms=len(index.terms),
             bytes=len(payload))
    return directory


def load_text_index(
    store: ObjectStore, collection_id: int, segment_id: int, field: TextField, rows: int
) -> TextIndex | None:
    """The stored index of ``field`` over a segment of ``rows`` rows, or ``None`` (absent or unfit)."""
    directory = text_index_dir(collection_id, segment_id, field.field_id)
    try:
        meta = json.loads(store.read_bytes(f"{directory}/{INDEX_META_FILE}"))
    except ObjectNotFound:
        return None
    except ValueError as err:
        log.warning("text index meta unreadable, treating the index as absent", path=directory, error=str(err))
        return None
    expected = _meta(field, rows)
    if not isinstance(meta, dict) or {k: meta.get(k) for k in expected} != expected:
        log.warning("text index meta does not match, treating the index as absent", path=directory)
        return None
    data = meta.get("data")
    if not isinstance(data, dict) or not isinstance(data.get("name"), str) or "/" in data["name"]:
        log.warning("text index meta names no data file, treating the index as absent", path=directory)
        return None
    path = f"{directory}/{data['name']}"
    try:
        payload = store.read_bytes(path)
    except (ObjectNotFound, InvalidArgument) as err:
        log.warning("text index data missing, treating the index as absent", path=path, error=str(err))
        return None
    if len(payload) != data.get("size") or crc32c.crc32c(payload) != data.get("crc32c"):
        log.warning("text index data corrupt, treating the index as absent", path=path, size=len(payload))
        return None
    try:
        index = TextIndex.from_bytes(payload, rows)
    except (ValueError, KeyError, OSError) as err:
        log.warning("text index data does not load, treating the index as absent", path=path, error=str(err))
        return None
    log.info("text index loaded", path=directory, field=field.name, rows=rows, terms=len(index.terms))
    return index
