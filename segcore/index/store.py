"""Indexes in object storage: built once per segment and field, loaded by every later load.

Layout, relative to the object-store root::

    index_files/<collection>/<segment>/<index_id>/meta.json
    index_files/<collection>/<segment>/<index_id>/graph-<crc32c:08x>.bin   (HNSW)
    index_files/<collection>/<segment>/<index_id>/faiss-<crc32c:08x>.bin   (the faiss kinds)
    index_files/<collection>/<segment>/<index_id>/diskann-<crc32c:08x>.bin (DISKANN: its files in one blob)

The data file is written first and ``meta.json`` last: the meta is the commit
marker, and ``ObjectStore`` writes each object atomically, so a reader that
finds a meta finds the data it names. The data file is named after its
checksum, so two workers that build the same index at once never overwrite
each other's data under a meta that describes the other one; the loser's file
stays until the segment's prefix is collected.

A stored index that does not fit what is asked for (another spec, field,
dimension or row count, an unknown format, a missing or corrupt data file)
is treated as absent and logged: the caller builds it again and overwrites
the meta. Every function blocks (storage I/O, hnswlib): call from a thread.
"""

from __future__ import annotations

import crc32c
import structlog

from common.errors import InvalidArgument
from common.storage import layout
from common.storage.errors import ObjectNotFound
from common.storage.objectstore import ObjectStore
from segcore.index.base import VectorIndex
from segcore.index.factory import VectorData, restore_index
from segcore.index.meta import DataFile, IndexMeta
from segcore.index.options import DEFAULT_OPTIONS, IndexOptions
from segcore.index.spec import SPARSE_KINDS, IndexKind, IndexSpec

INDEX_FILES = "index_files"
META_FILE = layout.INDEX_META_FILE

log = structlog.get_logger().bind(component="index-store")


def _check_id(what: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidArgument(f"{what} must be a non-negative integer, got {value!r}")
    return value


def collection_index_prefix(collection_id: int) -> str:
    """The directory of every index file of a collection (garbage collection of a dropped collection)."""
    return layout.collection_index_prefix(_check_id("collection id", collection_id))


def index_prefix(collection_id: int, segment_id: int) -> str:
    """The directory of every index file of a segment (garbage collection of a dropped segment)."""
    return layout.index_prefix(collection_id, segment_id)


def index_dir(collection_id: int, segment_id: int, index_id: int) -> str:
    """The directory of one index of a segment."""
    return f"{index_prefix(collection_id, segment_id)}/{_check_id('index id', index_id)}"


def save_index(
    store: ObjectStore,
    collection_id: int,
    segment_id: int,
    index_id: int,
    field_id: int,
    spec: IndexSpec,
    index: VectorIndex,
    vectors: VectorData | None = None,
) -> None:
    """Store ``index`` (built from ``spec`` over the field ``field_id``): data first, then the meta.

    Replaces a previous meta of the same index id. ``vectors``, if given, is
    the matrix the index was built over, checked against its shape.

    Raises:
        ValueError: ``index`` is not of ``spec``'s kind or metric, or not over ``vectors``.
    """
    if index.kind != spec.kind or index.metric != spec.metric_type:
        raise ValueError(
            f"a {index.kind.value}/{index.metric.value} index cannot be saved as "
            f"{spec.kind.value}/{spec.metric_type.value}"
        )
    if vectors is not None and vectors.shape != (index.num_rows, index.dim):
        raise ValueError(f"index over ({index.num_rows}, {index.dim}) saved with vectors of shape {vectors.shape}")
    directory = index_dir(collection_id, segment_id, index_id)
    payload = index.serialize()
    data = None
    if payload is not None:
        checksum = crc32c.crc32c(payload)
        prefix = (
            "faiss"
            if index.kind.is_faiss
            else "postings" if index.kind in SPARSE_KINDS else "diskann" if index.kind is IndexKind.DISKANN else "graph"
        )
        data = DataFile(name=f"{prefix}-{checksum:08x}.bin", size=len(payload), crc32c=checksum)
        store.write_bytes(f"{directory}/{data.name}", payload)
    meta = IndexMeta.describe(spec, field_id=field_id, dim=index.dim, rows=index.num_rows, data=data)
    store.write_bytes(f"{directory}/{META_FILE}", meta.to_json())
    log.info(
        "index saved",
        path=directory,
        index_type=meta.index_type,
        rows=meta.rows,
        bytes=0 if data is None else data.size,
    )


def load_index(
    store: ObjectStore,
    collection_id: int,
    segment_id: int,
    index_id: int,
    field_id: int,
    spec: IndexSpec,
    vectors: VectorData,
    *,
    options: IndexOptions = DEFAULT_OPTIONS,
) -> VectorIndex | None:
    """The stored index of ``spec`` over ``vectors`` (the field's ``(rows, dim)`` float32 matrix).

    Returns:
        The index, or ``None`` when none is stored or the stored one does not
        fit (logged as a warning): the caller builds and saves it.
    """
    directory = index_dir(collection_id, segment_id, index_id)
    try:
        raw = store.read_bytes(f"{directory}/{META_FILE}")
    except ObjectNotFound:
        return None
    try:
        meta = IndexMeta.from_json(raw)
    except ValueError as err:
        log.warning("index meta unreadable, treating the index as absent", path=directory, error=str(err))
        return None
    rows, dim = (int(vectors.shape[0]), int(vectors.shape[1])) if vectors.ndim == 2 else (0, 0)
    expected = IndexMeta.describe(spec, field_id=field_id, dim=dim, rows=rows, data=None)
    differences = meta.differences(expected)
    if differences:
        log.warning(
            "index meta does not match, treating the index as absent",
            path=directory,
            fields=differences,
            stored=meta.to_json().decode(),
            expected=expected.to_json().decode(),
        )
        return None
    payload = _read_data(store, directory, meta.data)
    if meta.data is not None and payload is None:
        return None
    try:
        return restore_index(spec, vectors, payload, options=options)
    except (ValueError, RuntimeError) as err:
        log.warning("index data does not load, treating the index as absent", path=directory, error=str(err))
        return None


def _read_data(store: ObjectStore, directory: str, data: DataFile | None) -> bytes | None:
    """The data file's bytes if present and intact; ``None`` (logged) otherwise."""
    if data is None:
        return None
    if "/" in data.name or data.name in ("", META_FILE):
        log.warning("index meta names a bad data file, treating the index as absent", path=directory, name=data.name)
        return None
    path = f"{directory}/{data.name}"
    try:
        payload = store.read_bytes(path)
    except (ObjectNotFound, InvalidArgument) as err:
        log.warning("index data missing, treating the index as absent", path=path, error=str(err))
        return None
    if len(payload) != data.size or crc32c.crc32c(payload) != data.crc32c:
        log.warning("index data corrupt, treating the index as absent", path=path, size=len(payload))
        return None
    return payload
