"""Scalar indexes in object storage, beside the segment's vector indexes (``segcore/index/store.py``).

Layout, relative to the object-store root::

    index_files/<collection>/<segment>/<index_id>/meta.json
    index_files/<collection>/<segment>/<index_id>/scalar-<crc32c:08x>.bin

The data file first, ``meta.json`` last (the commit marker), the data named
after its checksum: the same rules as vector indexes, and the coordinator
counts a scalar index as built by the same meta file. A stored index that
does not fit what is asked (another definition, field or row count, a missing
or corrupt data file) is treated as absent and logged: the caller builds it
again. Every function blocks (storage I/O): call from a thread.
"""

from __future__ import annotations

import json

import crc32c
import structlog

from common.errors import InvalidArgument
from common.storage.errors import ObjectNotFound
from common.storage.objectstore import ObjectStore
from segcore.index.scalar.index import ScalarIndex
from segcore.index.scalar.spec import ScalarIndexSpec
from segcore.index.store import META_FILE, index_dir

FORMAT = "strata-scalar-index/1"

log = structlog.get_logger().bind(component="scalar-index-store")


def _meta(spec: ScalarIndexSpec, field_id: int, rows: int) -> dict[str, object]:
    return {"format": FORMAT, "index": spec.describe(), "field_id": field_id, "rows": rows}


def save_scalar_index(
    store: ObjectStore, collection_id: int, segment_id: int, index_id: int, field_id: int, index: ScalarIndex
) -> None:
    """Store ``index`` of the field ``field_id``: data first, then the meta (replacing an older one)."""
    directory = index_dir(collection_id, segment_id, index_id)
    payload = index.to_bytes()
    checksum = crc32c.crc32c(payload)
    name = f"scalar-{checksum:08x}.bin"
    store.write_bytes(f"{directory}/{name}", payload)
    meta = {**_meta(index.spec, field_id, index.num_rows), "data": {"name": name, "size": len(payload),
                                                                   "crc32c": checksum}}
    store.write_bytes(f"{directory}/{META_FILE}", json.dumps(meta, sort_keys=True).encode())
    log.info("scalar index saved", path=directory, index_type=index.spec.index_type, rows=index.num_rows,
             bytes=len(payload))


def load_scalar_index(
    store: ObjectStore,
    collection_id: int,
    segment_id: int,
    index_id: int,
    field_id: int,
    spec: ScalarIndexSpec,
    rows: int,
) -> ScalarIndex | None:
    """The stored index of ``spec`` over a segment of ``rows`` rows, or ``None`` (absent or unfit)."""
    directory = index_dir(collection_id, segment_id, index_id)
    try:
        meta = json.loads(store.read_bytes(f"{directory}/{META_FILE}"))
    except ObjectNotFound:
        return None
    except ValueError as err:
        log.warning("scalar index meta unreadable, treating the index as absent", path=directory, error=str(err))
        return None
    expected = _meta(spec, field_id, rows)
    if not isinstance(meta, dict) or {k: meta.get(k) for k in expected} != json.loads(json.dumps(expected)):
        log.warning("scalar index meta does not match, treating the index as absent", path=directory)
        return None
    data = meta.get("data")
    if not isinstance(data, dict) or not isinstance(data.get("name"), str) or "/" in data["name"]:
        log.warning("scalar index meta names no data file, treating the index as absent", path=directory)
        return None
    path = f"{directory}/{data['name']}"
    try:
        payload = store.read_bytes(path)
    except (ObjectNotFound, InvalidArgument) as err:
        log.warning("scalar index data missing, treating the index as absent", path=path, error=str(err))
        return None
    if len(payload) != data.get("size") or crc32c.crc32c(payload) != data.get("crc32c"):
        log.warning("scalar index data corrupt, treating the index as absent", path=path, size=len(payload))
        return None
    try:
        index = ScalarIndex.from_bytes(spec, payload)
    except (ValueError, KeyError) as err:
        log.warning("scalar index data does not load, treating the index as absent", path=path, error=str(err))
        return None
    return index if index.num_rows == rows else None
