"""The coordinator's index builds: every flushed segment's vector index is built once, loaded or not.

As Milvus' index coordinator does, the active coordinator has a FLUSHED
segment's index built right after its flush (or the index's creation), whether
its collection is loaded or not, so ``describe_index`` reaches Finished and
pymilvus' ``create_index``, which waits for it, returns before a load. A query
node builds it (``BuildSegmentIndex``: it reads the rows without serving them,
builds in its worker's build slot on the cores reads leave free, saves the
index under ``index_files/<collection>/<segment>/<index_id>/`` and drops the
rows); every later load restores the saved index instead of building.

Each round (every ``interval`` seconds, and at once when a build ends): the
FLUSHED L1 segments of 1,024 rows or more, the collections' vector indexes,
and the index files saved (listed only for collections with a build not known
done) give the wanted builds; ``build_policy`` picks which start where (at
most one per query node, a segment held by a worker on that worker, one of a
loaded partition not held yet left to the worker that will load it). A failed
build waits 1 s, doubling up to 60 s. With no query node, builds wait. A build
the node refuses for good (``UNBUILDABLE``: the index's parameters cannot be
built, which retrying does not change) is not tried again while this
coordinator leads; ``failures`` reports it, and ``describe_index`` shows the
index Failed with the node's reason, as Milvus does for a failed index task
(which it does not retry either). Dropping the index forgets it.

Races are harmless: two builds of one index save data files named after their
checksum and then the same meta, so either wins and both are valid; a worker
restores an index saved while it waited for its build slot. A build of an
index dropped meanwhile leaves files under an index id no one asks for, removed
with the segment's files (``gc.py``). A build of a segment dropped or compacted
away meanwhile fails to read it or saves files garbage collection removes.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any, Protocol

import structlog

from common.errors import ErrorCode, StrataError
from common.segment import SegmentLevel, SegmentMeta
from common.storage.objectstore import ObjectStore
from common.tasks import BackgroundTasks
from coordinator.catalog import Catalog, CollectionMeta, CollectionState
from coordinator.data.build_policy import Backoff, Build, BuildKey, IndexDef, assign, wanted_builds
from coordinator.data.datacoord import DataCoordinator
from coordinator.data.index_progress import MIN_ROWS_TO_INDEX, saved_indexes
from coordinator.data.jobs import JobKind

#: A node's answers that say the index cannot be built from its parameters: trying again will not help.
UNBUILDABLE = frozenset({ErrorCode.INVALID_ARGUMENT, ErrorCode.INDEX_NOT_SUPPORTED})


class BuildNodes(Protocol):
    """The query nodes as the query coordinator sees them."""

    def nodes(self) -> dict[int, str]: ...

    def holders(self) -> dict[tuple[int, int], int]: ...

    def is_partition_loaded(self, collection_id: int, partition_id: int) -> bool: ...


class SegmentIndexBuilder(Protocol):
    async def build(self, address: str, *, collection: CollectionMeta, build: Build, params: dict[str, str]) -> bool:
        """Have the query node at ``address`` build and save the index; whether it built it (``False``:
        saved already). Raises ``StrataError`` (or a transport error) when it did not."""
        ...


class IndexBuildScheduler:
    def __init__(
        self,
        data: DataCoordinator,
        catalog: Catalog,
        storage: ObjectStore,
        nodes: BuildNodes,
        builder: SegmentIndexBuilder,
        *,
        interval: float = 1.0,
        backoff: Backoff | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._data = data
        self._catalog = catalog
        self._storage = storage
        self._nodes = nodes
        self._builder = builder
        self._interval = interval
        self._backoff = Backoff() if backoff is None else backoff
        self._clock = clock
        self._done: set[BuildKey] = set()  # saved, as listed or as a node answered
        self._running: dict[BuildKey, int] = {}  # build -> node
        self._failed: dict[BuildKey, tuple[int, str]] = {}  # build -> (collection, reason): not tried again
        self._tasks = BackgroundTasks("index-builds")  # the loop and the builds in flight
        self._wake = asyncio.Event()
        self._log = structlog.get_logger().bind(component="index-builds")

    def failures(self, collection_id: int) -> dict[BuildKey, str]:
        """The collection's builds refused for good: ``(segment, index)`` -> the node's reason."""
        return {key: reason for key, (cid, reason) in self._failed.items() if cid == collection_id}

    def start(self) -> None:
        self._tasks.start(self._loop(), name="index-builds")

    async def stop(self) -> None:
        """Stop the loop and stop waiting for the builds in flight (a node finishes one on its own)."""
        await self._tasks.stop()

    async def _loop(self) -> None:
        while True:
            try:
                await self.round()
            except asyncio.CancelledError:
                raise
            except Exception as err:  # task boundary: the next round tries again
                self._log.warning("index build round failed", error=str(err) or type(err).__name__)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._interval):
                    await self._wake.wait()
            self._wake.clear()

    async def round(self) -> list[tuple[Build, int]]:
        """Start the builds that can start now; return them with their node."""
        wanted, collections = await self._wanted()
        now = self._clock()
        self._backoff.keep({b.key for b in wanted})
        ready = [b for b in wanted if b.key not in self._running and self._backoff.ready(b.key, now)]
        addresses = self._nodes.nodes()
        chosen = assign(
            ready,
            nodes=addresses,
            busy=set(self._running.values()),
            holders=self._nodes.holders(),
            loaded=lambda s: self._nodes.is_partition_loaded(s.collection_id, s.partition_id),
        )
        for build, node_id in chosen:
            self._running[build.key] = node_id
            collection, params = collections[build.segment.collection_id]
            self._tasks.start(
                self._run(build, node_id, addresses[node_id], collection, params[build.index.index_id]),
                name=f"index-build-{build.segment.segment_id}-{build.index.index_id}",
            )
        return chosen

    async def _wanted(self) -> tuple[list[Build], dict[int, tuple[CollectionMeta, dict[int, dict[str, str]]]]]:
        """The builds wanted, and each of their collections with its indexes' params by id."""
        by_collection: defaultdict[int, list[SegmentMeta]] = defaultdict(list)
        for seg in self._data.flushed_segments():
            if seg.level == SegmentLevel.L1 and seg.rows >= MIN_ROWS_TO_INDEX:
                by_collection[seg.collection_id].append(seg)
        live = {s.segment_id for segs in by_collection.values() for s in segs}
        self._done = {k for k in self._done if k[0] in live}
        compacting = {
            sid
            for job in self._data.jobs()
            if job.kind == JobKind.MIX and not job.state.finished
            for sid in job.inputs
        }
        wanted: list[Build] = []
        collections: dict[int, tuple[CollectionMeta, dict[int, dict[str, str]]]] = {}
        index_ids: set[int] = set()
        for collection_id, segments in by_collection.items():
            indexes = await self._catalog.list_indexes(collection_id)
            index_ids |= {i.index_id for i in indexes}
            if not indexes:
                continue
            meta = await self._catalog.get_collection(collection_id)
            if meta is None or meta.state != CollectionState.CREATED:
                continue
            defs = [
                IndexDef(index_id=i.index_id, field_name=i.field_name, index_type=i.params.get("index_type", "") or "AUTOINDEX")
                for i in indexes
                if meta.schema.has_field(i.field_name)  # vector and scalar indexes alike
            ]
            # A build refused for good is not wanted again (nor are the collection's files listed for it).
            builds = wanted_builds(segments, defs, saved=self._done | self._failed.keys(), compacting=compacting)
            if not builds:
                continue
            saved = await asyncio.to_thread(saved_indexes, self._storage, collection_id)
            self._done |= {k for k in saved if k[0] in live}
            builds = [b for b in builds if b.key not in saved]
            if builds:
                wanted.extend(builds)
                collections[collection_id] = (meta, {i.index_id: i.params for i in indexes})
        # A failure is forgotten with its segment (dropped, compacted) or its index (dropped).
        self._failed = {k: v for k, v in self._failed.items() if k[0] in live and k[1] in index_ids}
        return wanted, collections

    def _retry_later(self, key: BuildKey, err: Exception, log: Any) -> None:
        delay = self._backoff.failed(key, self._clock())
        log.warning("segment index build failed", error=str(err) or type(err).__name__, retry_in=delay)

    async def _run(
        self, build: Build, node_id: int, address: str, collection: CollectionMeta, params: dict[str, str]
    ) -> None:
        key = build.key
        seg = build.segment
        log = self._log.bind(collection_id=seg.collection_id, segment=seg.segment_id, index_id=build.index.index_id,
                             node=node_id)
        try:
            built = await self._builder.build(address, collection=collection, build=build, params=params)
            self._backoff.succeeded(key)
            self._done.add(key)
            log.info("segment index built", rows=seg.rows, built=built)
        except asyncio.CancelledError:
            raise
        except StrataError as err:
            if err.code in UNBUILDABLE:
                self._failed[key] = (seg.collection_id, err.message)
                self._backoff.succeeded(key)  # not retried: nothing to wait for
                log.warning("segment index cannot be built", error=err.message)
            else:
                self._retry_later(key, err, log)
        except Exception as err:  # task boundary: tried again after the backoff
            self._retry_later(key, err, log)
        finally:
            self._running.pop(key, None)
            self._wake.set()
