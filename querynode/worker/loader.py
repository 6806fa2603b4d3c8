"""Loading a sealed segment onto a worker: rows, stats, indexes (blocking; run in a thread).

An index is built once per segment and field: usually when the coordinator
asks a query node to (``Worker.build_index``, right after the flush, loaded or
not), else by the first worker to load the segment, which finds none in object
storage; either saves it, and every later load
(another replica, a restart, a move) reads it back instead (``segcore/index/store.py``).
``load_segment`` only restores saved indexes and names the missing ones; the
worker builds those in the background (``ensure_segment_index``: restored
instead if another build saved it meanwhile) while the segment is served,
searched exactly until its index is in place. The coordinator's index builds
(``Worker.build_index``) use the same functions on a segment read but not served.
The Parquet decoder's scratch buffers and then the read table itself are given
back to the system as soon as they are dropped (``release_unused`` on Arrow's
pool): Arrow's allocator (mimalloc) otherwise keeps freed pages resident, and
the index build, which allocates with malloc, cannot reuse them. Loading a
400k x 128 segment (195 MiB of vectors) with its HNSW build: peak RSS 1,610 ->
937 MiB, resident afterwards 1,358 -> 686 MiB, load time unchanged
(``benchmarks/load_memory.py``, side by side).

A build uses the threads the worker grants it (the cores no read in a thread
holds: ``querynode.offload.CoreShare``); an HNSW build splits its rows among
them.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence

import pyarrow as pa
import structlog

from common.failpoints import failpoint
from common.schema import CollectionSchema
from common.segment import SegmentMeta
from common.storage.objectstore import ObjectStore
from common.storage.segment_io import SegmentReader
from querynode.worker.segment import FieldIndex, WorkerSegment
from segcore.index.diskann_files import disk_root, new_index_dir
from segcore.index.factory import build_index
from segcore.index.field_specs import FieldIndexSpec
from segcore.index.options import DEFAULT_OPTIONS
from segcore.index.scalar.index import ScalarIndex, build_scalar_index
from segcore.index.scalar.spec import ScalarIndexSpec
from segcore.index.scalar.store import load_scalar_index, save_scalar_index
from segcore.index.spec import IndexKind, IndexSpec
from segcore.index.store import load_index, save_index
from segcore.segments.growing import GrowingStore

log = structlog.get_logger().bind(component="segment-loader")


def load_segment(
    storage: ObjectStore,
    schema: CollectionSchema,
    meta: SegmentMeta,
    indexes: Sequence[FieldIndexSpec],
) -> tuple[WorkerSegment, list[FieldIndexSpec]]:
    """The segment's rows and stats, with each vector index saved in storage restored; and the
    indexes that are not there yet, for ``build_segment_index`` (until then the field is searched
    exactly)."""
    failpoint("worker.load_segment")
    reader = SegmentReader(storage, schema)
    manifest = reader.read_manifest(meta.manifest)
    store = GrowingStore(schema)
    table = reader.read_inserts(manifest)
    pa.default_memory_pool().release_unused()  # the decoder's scratch, freed by now
    if table.num_rows:
        store.apply_insert(table)
    del table  # the store copied the vectors; what it keeps of the rest stays referenced
    pa.default_memory_pool().release_unused()
    seg = WorkerSegment(meta=meta, store=store, stats=reader.read_stats(manifest))
    missing: list[FieldIndexSpec] = []
    if store.num_rows == 0:
        return seg, missing
    for spec in indexes:
        if not schema.has_field(spec.field_name):
            continue
        f = schema.field(spec.field_name)
        if isinstance(spec.spec, ScalarIndexSpec):
            failpoint("worker.load_index")
            scalar = load_scalar_index(storage, meta.collection_id, meta.segment_id, spec.index_id, f.field_id,
                                       spec.spec, store.num_rows)
            if scalar is None:
                missing.append(spec)
            else:
                seg.put_index(f.name, scalar, spec.index_id)
            continue
        if not f.dtype.is_vector:
            continue
        _vectors_on_disk_for(store, f.name, spec)
        vectors = store.vector_matrix(f.name)
        failpoint("worker.load_index")
        index = load_index(storage, meta.collection_id, meta.segment_id, spec.index_id, f.field_id, spec.spec, vectors)
        if index is None:
            missing.append(spec)
        else:
            seg.indexes[f.name] = FieldIndex(spec.spec, index, spec.index_id)
    return seg, missing


def build_segment_index(
    storage: ObjectStore, schema: CollectionSchema, seg: WorkerSegment, spec: FieldIndexSpec, threads: int = 1
) -> FieldIndex | ScalarIndex:
    """Build the segment's index of ``spec`` on ``threads`` threads and save it (blocking: seconds to
    minutes). The segment may be read meanwhile: the build only reads its vectors (a scalar index:
    its column)."""
    failpoint("worker.build_index")
    meta = seg.meta
    f = schema.field(spec.field_name)
    if isinstance(spec.spec, ScalarIndexSpec):
        scalar = build_scalar_index(spec.spec, seg.store.table())
        save_scalar_index(storage, meta.collection_id, meta.segment_id, spec.index_id, f.field_id, scalar)
        log.info("scalar index built", segment=meta.segment_id, field=f.name, index_type=spec.spec.index_type,
                 rows=scalar.num_rows)
        return scalar
    _vectors_on_disk_for(seg.store, f.name, spec)
    vectors = seg.store.vector_matrix(f.name)
    index = build_index(spec.spec, vectors, options=dataclasses.replace(DEFAULT_OPTIONS, threads=threads))
    save_index(storage, meta.collection_id, meta.segment_id, spec.index_id, f.field_id, spec.spec, index, vectors)
    log.info("index built", segment=meta.segment_id, field=f.name, index_type=spec.spec.index_type,
             rows=len(vectors), threads=threads)
    return FieldIndex(spec.spec, index, spec.index_id)


def restore_segment_index(
    storage: ObjectStore, schema: CollectionSchema, seg: WorkerSegment, spec: FieldIndexSpec
) -> FieldIndex | ScalarIndex | None:
    """The segment's index of ``spec`` as saved in storage, or ``None`` when none is saved (blocking).

    A build of an index another build saved meanwhile (the coordinator's and a loading
    worker's, or two replicas') restores it instead of building it again."""
    meta = seg.meta
    f = schema.field(spec.field_name)
    if isinstance(spec.spec, ScalarIndexSpec):
        return load_scalar_index(storage, meta.collection_id, meta.segment_id, spec.index_id, f.field_id, spec.spec,
                                 seg.store.num_rows)
    _vectors_on_disk_for(seg.store, f.name, spec)
    index = load_index(
        storage, meta.collection_id, meta.segment_id, spec.index_id, f.field_id, spec.spec, seg.store.vector_matrix(f.name)
    )
    return None if index is None else FieldIndex(spec.spec, index, spec.index_id)


def ensure_segment_index(
    storage: ObjectStore, schema: CollectionSchema, seg: WorkerSegment, spec: FieldIndexSpec, threads: int = 1
) -> tuple[FieldIndex | ScalarIndex, bool]:
    """The segment's index of ``spec``: restored if saved meanwhile, else built on ``threads`` threads
    and saved (``build_segment_index``); and whether it was built (blocking)."""
    restored = restore_segment_index(storage, schema, seg, spec)
    if restored is not None:
        return restored, False
    return build_segment_index(storage, schema, seg, spec, threads), True


def _vectors_on_disk_for(store: GrowingStore, field: str, spec: FieldIndexSpec) -> None:
    """A DISKANN field's rows move to a file on the node's disk (mapped) before its index is built
    or restored: the index keeps its own vectors on disk and reads the segment's rows only to
    re-score candidates and for exact searches, so neither copy stays resident."""
    if not isinstance(spec.spec, IndexSpec) or spec.spec.kind is not IndexKind.DISKANN or store.vectors_on_disk(field):
        return
    directory = new_index_dir(disk_root(DEFAULT_OPTIONS.disk_dir), store)  # deleted with the store
    store.keep_vectors_on_disk(field, os.path.join(directory, f"{field}.vectors"))
    log.info("segment vectors kept on disk", field=field, rows=store.num_rows, path=directory)
