"""The worker role of a query node: sealed segments loaded for delegators, segment-level reads.

Segments are keyed by ``(collection, segment)``. ``load`` reads rows, stats and
saved indexes off the event loop and applies the cuts the delegator sends with
it before the segment becomes readable. An index not saved yet is built in
the background, one build at a time, and saved; until it is swapped in, the
segment's field is searched exactly (as Milvus serves a sealed segment with
an interim index), so a load, and a restart, never waits for an HNSW build.
An index saved by another build meanwhile is restored instead. ``build_index``
builds one for the coordinator (``coordinator/data/index_builds.py``) whether
the segment is loaded or not, in the same slot. ``cut`` applies forwarded deletes and supersedes. Reads compute the
filter bitset vectorised and search or query each named segment at the
delegator's read timestamp (inline when small, else in a worker thread: ``querynode.offload``),
and merge this worker's hits (``segcore/segments/reduce.py``). A read comes as the proxy's
``ReadPlan`` (``common/readplan.py``), its filter bound once by the proxy, with the delegator's read
timestamp beside it. An unfiltered batch of queries alone on the node walks each
graph on every core the other reads leave free (``CoreShare``).

One readers-writer lock per collection: reads of its segments run side by side, but never
overlap a cut, load or release of them (the stores are not safe to change while read).

The worker keeps the newest schema of each collection it holds segments of: a load or
``update_schema`` that carries a newer one (a field was added: ``common/schema_evolution.py``)
gives every held segment the added fields, and segments load with the newest schema known,
whatever the load carries.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import structlog

from common.errors import SegmentNotFound
from common.readplan import ReadPlan, VectorQuery
from common.schema import CollectionSchema, DataType
from common.schema_evolution import is_newer
from common.segment import SegmentMeta
from common.storage.objectstore import ObjectStore
from common.tasks import BackgroundTasks
from common.tracing import traced
from protos import querynode_pb2 as pb
from querynode.offload import CoreShare, concat_slices, run_sliced, search_cost
from querynode.worker.loader import ensure_segment_index, load_segment
from querynode.worker.memory import give_back_memory
from querynode.worker.rwlock import ReadWriteLock
from querynode.worker.segment import WorkerSegment
from querynode.worker.text_loader import ensure_text_index, restore_text_indexes
from segcore.index.base import search_params
from segcore.index.field_specs import FieldIndexSpec, listed_index_specs
from segcore.index.text.store import TextField
from segcore.segments.readmask import indexed_rows, read_mask
from segcore.segments.reduce import merge_counts, merge_rows, merge_topk

#: A query whose filter an index answers with at most this many rows in all is answered on the event loop.
INLINE_ROWS = 4096
#: With an int64 primary key and a limit up to ``INLINE_ROWS``, a query picks its rows with numpy over the
#: segment's key array (``segcore/segments/keyorder.py``) and reads only ``limit`` rows' values: up to
#: this many index rows in all, that is less work than the thread hand-off, and it stays on the loop.
INLINE_LIMITED_ROWS = 32_768
#: Of segments whose keys ascend with the row, this many listed rows in all (one comparison each).
INLINE_ORDERED_ROWS = 262_144


class Worker:
    def __init__(self, storage: ObjectStore, cores: CoreShare | None = None) -> None:
        self._storage = storage
        self._cores = CoreShare() if cores is None else cores
        self.segments: dict[tuple[int, int], WorkerSegment] = {}
        self._schemas: dict[int, CollectionSchema] = {}
        self._locks: defaultdict[int, ReadWriteLock] = defaultdict(ReadWriteLock)
        self._builds = BackgroundTasks("worker")  # background index builds, cancelled by close()
        self._build_slot = asyncio.Semaphore(1)
        self._log = structlog.get_logger().bind(component="worker")

    async def load(
        self,
        collection_id: int,
        schema: CollectionSchema,
        metas: Sequence[SegmentMeta],
        indexes: Sequence[pb.IndexSpec],
        cuts: dict[int, tuple[pa.Array, np.ndarray]],
    ) -> None:
        """Load each segment not loaded yet; apply its cuts before it is readable. Idempotent.

        ``indexes`` are the collection's indexes as the coordinator lists them; each segment gets
        those of its fields it has saved, and builds the others in the background.

        A segment already held here still gets the cuts: a delegator loads a segment again
        after taking it offline, and the deletes it stopped forwarding meanwhile come with
        that load (cuts are idempotent). A load with no segments only updates the schema.
        """
        if not metas:  # a load of nothing carries a schema (the RPC form of ``update_schema``)
            await self.update_schema(collection_id, schema)
            return
        async with self._locks[collection_id].write():
            await self._take_schema(collection_id, schema)
        specs = listed_index_specs(self._schemas[collection_id], indexes)
        for meta in metas:
            key = (collection_id, meta.segment_id)
            pks_ts = cuts.get(meta.segment_id)
            if key in self.segments:
                if pks_ts is not None and len(pks_ts[0]):
                    async with self._locks[collection_id].write():
                        await asyncio.to_thread(self.segments[key].cut, *pks_ts)
                continue
            schema = self._schemas[collection_id]
            seg, missing = await asyncio.to_thread(load_segment, self._storage, schema, meta, specs)
            text_missing = await asyncio.to_thread(restore_text_indexes, self._storage, schema, seg)
            async with self._locks[collection_id].write():
                if pks_ts is not None and len(pks_ts[0]):
                    await asyncio.to_thread(seg.cut, *pks_ts)
                current = self._schemas.get(collection_id, schema)
                if is_newer(seg.store.schema, current):  # changed while it loaded
                    await asyncio.to_thread(seg.store.add_fields, current)
                else:
                    self._schemas[collection_id] = current  # released meanwhile: the schema it loaded with
                self.segments[key] = seg
            self._log.info("segment loaded", collection_id=collection_id, segment=meta.segment_id, rows=seg.num_rows,
                           indexes=sorted(seg.indexes), building=sorted(s.field_name for s in missing))
            for spec in missing:
                self._spawn_build(collection_id, schema, seg, spec)
            for text in text_missing:
                self._builds.start(self._build_text(collection_id, seg, text),
                                   name=f"text-index-build-{collection_id}-{seg.segment_id}-{text.name}")

    async def update_schema(self, collection_id: int, schema: CollectionSchema) -> None:
        """A newer schema of a collection held here (a field added): every held segment gets the
        added fields (Milvus' worker ``UpdateSchema``). An older or equal one, or a collection with
        no segment here, changes nothing."""
        async with self._locks[collection_id].write():
            if collection_id in self._schemas:
                await self._take_schema(collection_id, schema)

    async def _take_schema(self, collection_id: int, schema: CollectionSchema) -> None:
        """Under the collection's write lock: keep the newer of ``schema`` and the one held."""
        current = self._schemas.get(collection_id)
        if current is not None and not is_newer(current, schema):
            return
        self._schemas[collection_id] = schema
        held = [seg for (c, _), seg in self.segments.items() if c == collection_id]
        for seg in held:
            if is_newer(seg.store.schema, schema):
                await asyncio.to_thread(seg.store.add_fields, schema)
        if current is not None:
            self._log.info("schema changed", collection_id=collection_id, version=schema.version, segments=len(held))

    def _spawn_build(self, collection_id: int, schema: CollectionSchema, seg: WorkerSegment, spec: FieldIndexSpec) -> None:
        self._builds.start(self._build(collection_id, schema, seg, spec),
                           name=f"index-build-{collection_id}-{seg.segment_id}-{spec.field_name}")

    async def _build_text(self, collection_id: int, seg: WorkerSegment, field: TextField) -> None:
        """Build (or restore, if saved meanwhile) a served segment's missing text-match index in the build
        slot and swap it in; until then its text filters use the in-memory chunk indexes."""
        key = (collection_id, seg.segment_id)
        try:
            async with self._build_slot:
                if self.segments.get(key) is not seg or field.name in seg.text_indexes:
                    return
                index, _ = await asyncio.to_thread(ensure_text_index, self._storage, seg, field)
            async with self._locks[collection_id].write():
                if self.segments.get(key) is seg:
                    seg.put_text_index(field.name, field.analyzer_params, index)
        except asyncio.CancelledError:
            raise
        except Exception as err:  # task boundary: text filters keep using the in-memory chunk indexes
            self._log.warning("text index build failed", collection_id=collection_id, segment=seg.segment_id,
                              field=field.name, error=str(err) or type(err).__name__)

    async def _build(self, collection_id: int, schema: CollectionSchema, seg: WorkerSegment, spec: FieldIndexSpec) -> None:
        """Build a served segment's missing index, one build at a time on every core reads leave free;
        then swap it in (under the write lock). A segment released meanwhile keeps nothing; a build
        that fails leaves the field searched exactly (the next load tries again)."""
        key = (collection_id, seg.segment_id)
        try:
            async with self._build_slot:
                if self.segments.get(key) is not seg or seg.has_index(spec.field_name, spec.index_id, spec.spec):
                    return  # released, or a coordinator's build (``build_index``) put it in place
                with self._cores.take(self._cores.cores) as threads:
                    built, _ = await asyncio.to_thread(ensure_segment_index, self._storage, schema, seg, spec, threads)
            async with self._locks[collection_id].write():
                if self.segments.get(key) is seg:
                    seg.put_index(spec.field_name, built, spec.index_id)
        except asyncio.CancelledError:
            raise
        except Exception as err:  # task boundary: the segment stays searchable, exactly
            self._log.warning("index build failed", collection_id=collection_id, segment=seg.segment_id,
                              field=spec.field_name, error=str(err) or type(err).__name__)

    async def build_index(
        self, collection_id: int, schema: CollectionSchema, meta: SegmentMeta, spec: FieldIndexSpec
    ) -> bool:
        """Build and save the segment's index of ``spec`` unless it is saved already (the coordinator's
        index builds); return whether it built one. Raises what the load or the build raised.

        Waits for the build slot, shared with the background builds of loaded segments, and builds
        on the cores reads leave free, in a thread: reads go on meanwhile. A segment held here is
        built from its rows and gets the index swapped in (its own background build then finds it
        in place); any other segment is read from storage without being served, and dropped after.
        """
        key = (collection_id, meta.segment_id)
        async with self._build_slot:
            held = self.segments.get(key)
            if held is not None:
                if held.has_index(spec.field_name, spec.index_id, spec.spec):
                    return False  # restored or built when loaded: saved
                with self._cores.take(self._cores.cores) as threads:
                    index, built = await asyncio.to_thread(
                        ensure_segment_index, self._storage, schema, held, spec, threads
                    )
                async with self._locks[collection_id].write():
                    if self.segments.get(key) is held and not held.has_index(spec.field_name, spec.index_id, spec.spec):
                        held.put_index(spec.field_name, index, spec.index_id)
                return built
            seg, missing = await asyncio.to_thread(load_segment, self._storage, schema, meta, [spec])
            try:
                await self._save_text_indexes(collection_id, schema, seg)
                if not missing:
                    return False  # saved already (restored by the load), or an empty segment
                with self._cores.take(self._cores.cores) as threads:
                    _, built = await asyncio.to_thread(ensure_segment_index, self._storage, schema, seg, spec, threads)
                self._log.info("segment index built unloaded", collection_id=collection_id,
                               segment=meta.segment_id, field=spec.field_name, built=built)
                return built
            finally:
                del seg  # the rows were never served: nothing else holds them
                pa.default_memory_pool().release_unused()

    async def _save_text_indexes(self, collection_id: int, schema: CollectionSchema, seg: WorkerSegment) -> None:
        """Build and save the text-match indexes an unserved segment lacks (a flushed segment's first index
        build). A failure is logged, not raised: the index build asked for goes on, and the segment's first
        load builds them."""
        try:
            for text in await asyncio.to_thread(restore_text_indexes, self._storage, schema, seg):
                await asyncio.to_thread(ensure_text_index, self._storage, seg, text)
        except asyncio.CancelledError:
            raise
        except Exception as err:  # an optional index: its absence costs a build at load, never a wrong answer
            self._log.warning("text index build failed", collection_id=collection_id, segment=seg.segment_id,
                              error=str(err) or type(err).__name__)

    async def builds_done(self) -> None:
        """Return once no index build is in progress (for tests and benchmarks)."""
        await self._builds.idle()

    async def close(self) -> None:
        """Stop the index builds in progress (a build's thread finishes on its own; its index is dropped)."""
        await self._builds.stop()

    async def release(self, collection_id: int, segment_ids: Sequence[int]) -> None:
        released = []
        async with self._locks[collection_id].write():
            for sid in segment_ids:
                released.append(self.segments.pop((collection_id, sid), None))
        if not any(c == collection_id for c, _ in self.segments):
            self._schemas.pop(collection_id, None)
        if any(seg is not None for seg in released):
            del released
            await asyncio.to_thread(give_back_memory)  # memory.py: the freed pages go back to the system

    async def cut(self, collection_id: int, cuts: dict[int, tuple[pa.Array, np.ndarray]]) -> None:
        """Apply forwarded cuts; a segment not held here raises ``SegmentNotFound`` (the delegator reloads it)."""
        async with self._locks[collection_id].write():
            missing = [sid for sid in cuts if (collection_id, sid) not in self.segments]
            if missing:
                raise SegmentNotFound(f"segments {missing} of collection {collection_id} are not loaded here")
            for sid, (pks, ts) in cuts.items():
                await asyncio.to_thread(self.segments[(collection_id, sid)].cut, pks, ts)

    def _held(self, collection_id: int, segment_ids: Sequence[int]) -> list[WorkerSegment]:
        out = []
        for sid in segment_ids:
            seg = self.segments.get((collection_id, sid))
            if seg is None:
                raise SegmentNotFound(f"segment {sid} of collection {collection_id} is not loaded here")
            out.append(seg)
        return out

    @traced("worker.search_segments")
    async def search(
        self, collection_id: int, segment_ids: Sequence[int], read_ts: int, plan: ReadPlan, query: VectorQuery
    ) -> pa.Table:
        """The top ``query.topk`` hits per query vector over the named segments at ``read_ts``."""
        field_name, queries, metric, topk = query.anns_field, query.vectors, query.metric, query.topk
        params = search_params(dict(query.params))
        expr = plan.expr
        lock = self._locks[collection_id]
        async with lock.read():
            segments = self._held(collection_id, segment_ids)
        if not segments:
            raise SegmentNotFound("no segment to search")
        pk = self._schemas[collection_id].primary_field.name
        masks: dict[int, np.ndarray | None] = {}  # by segment: sealed rows do not change, so once per read

        def mask(seg: WorkerSegment) -> np.ndarray | None:
            if seg.segment_id not in masks:
                masks[seg.segment_id] = read_mask(seg.store, expr=expr, expire_before=plan.expire_before,
                                                  indexes=seg.filter_indexes())
            return masks[seg.segment_id]

        def run(part: slice, threads: int) -> pa.Table:
            parts = [
                seg.search(
                    field_name=field_name,
                    queries=queries[part],
                    metric=metric,
                    topk=topk,
                    read_ts=read_ts,
                    mask=mask(seg),
                    params=params,
                    output_fields=plan.output_fields,
                    threads=threads,
                )
                for seg in segments
            ]
            if len(parts) == 1:
                return parts[0]
            return merge_topk(parts, topk=topk, metric=metric, pk_field=pk)

        cost = sum(
            search_cost(seg.num_rows, seg.index_for(field_name, metric), queries, params, filter_size=plan.filter_cost)
            for seg in segments
        )
        # Slice by slice under the collection's read lock: a cut waits for one slice, not the whole search.
        # A filtered walk calls back into Python per row: its threads would only fight over the GIL.
        slices, tables = await run_sliced(
            run, nq=len(queries), cost=cost, guard=lock.read, parallel=expr is None, share=self._cores
        )
        return concat_slices(tables, slices)

    async def query(
        self,
        collection_id: int,
        segment_ids: Sequence[int],
        read_ts: int,
        plan: ReadPlan,
        limit: int | None,
        count_only: bool,
    ) -> tuple[pa.Table | None, int]:
        """The named segments' rows at ``read_ts`` (sorted by key, at most ``limit``; None or 0: all),
        or with ``count_only`` their count."""
        limit = limit or None
        schema = self._schemas.get(collection_id)

        expr = plan.expr

        def mask(seg: WorkerSegment) -> np.ndarray | None:
            return read_mask(seg.store, expr=expr, expire_before=plan.expire_before, indexes=seg.filter_indexes())

        int_pk = schema is not None and schema.primary_field.dtype == DataType.INT64
        limited = int_pk and not count_only and limit is not None and 0 < limit <= INLINE_ROWS

        def rows(seg: WorkerSegment) -> np.ndarray | None:
            """The rows a selective indexed filter matches, when the read has no other condition (one
            indexed predicate, however many rows, for a limited query over keys in row order)."""
            if plan.expire_before:
                return None
            return indexed_rows(seg.filter_indexes(), expr, seg.num_rows,
                                any_size_leaf=limited and seg.store.int_keys_in_row_order())

        async with self._locks[collection_id].read():
            segments = self._held(collection_id, segment_ids)
            # Index lookups only (binary searches, slices of at most 1/32 of a segment): on the loop.
            listed = [rows(s) for s in segments]

            def run() -> tuple[pa.Table | None, int]:
                if not segments or schema is None:
                    return None, 0
                if count_only:
                    return None, merge_counts([
                        s.store.count(read_ts=read_ts, rows=r) if r is not None
                        else s.store.count(read_ts=read_ts, mask=mask(s))
                        for s, r in zip(segments, listed, strict=True)
                    ])
                parts = [
                    s.store.query(read_ts=read_ts, rows=r, output_fields=plan.output_fields, limit=limit)
                    if r is not None
                    else s.store.query(read_ts=read_ts, mask=mask(s), output_fields=plan.output_fields, limit=limit)
                    for s, r in zip(segments, listed, strict=True)
                ]
                # With ``_ts`` asked (the delegator asks it): a key in two partitions' segments keeps its newest row.
                table = merge_rows(parts, pk_field=schema.primary_field.name, limit=limit)
                return table, table.num_rows

            if _inline(listed, limited=limited, in_row_order=[s.store.int_keys_in_row_order() for s in segments]
                       if limited else []):
                return run()  # a few rows' visibility and values: less than a thread hand-off costs
            return await asyncio.to_thread(run)

    def schema(self, collection_id: int) -> CollectionSchema:
        schema = self._schemas.get(collection_id)
        if schema is None:
            raise SegmentNotFound(f"collection {collection_id} has no segment loaded here")
        return schema

    def loaded(self) -> list[tuple[int, int, int]]:
        """``(collection, segment, rows)`` of every segment held."""
        return [(c, s, seg.num_rows) for (c, s), seg in sorted(self.segments.items())]

    def index_ids(self, collection_id: int, segment_id: int) -> list[int]:
        """The catalog ids of the vector indexes in place on a held segment (none: it is searched exactly;
        ``GetQuerySegmentInfo`` names the vector index a segment is searched through)."""
        seg = self.segments.get((collection_id, segment_id))
        return [] if seg is None else sorted(fi.index_id for fi in seg.indexes.values())


def _inline(listed: Sequence[np.ndarray | None], *, limited: bool, in_row_order: Sequence[bool]) -> bool:
    """Whether a query whose segments' indexes listed ``listed`` is answered on the event loop:
    ``limited``: an int64 key and a limit up to ``INLINE_ROWS``; ``in_row_order``: per segment, its
    keys ascend with the row (its rows are cut to the first ones with one comparison per row)."""
    if any(r is None for r in listed):
        return False  # a mask: a pass over every row of a segment
    sizes = [len(r) for r in listed if r is not None]
    if sum(sizes) <= INLINE_ROWS:
        return True
    if not limited:
        return False
    unordered = sum(n for n, ordered in zip(sizes, in_row_order, strict=True) if not ordered)
    return unordered <= INLINE_LIMITED_ROWS and sum(sizes) <= INLINE_ORDERED_ROWS
