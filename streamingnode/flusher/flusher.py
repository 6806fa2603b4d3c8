"""The flusher of one open WAL: from the log to segments in object storage.

Owned by ``FlusherManager`` from the WAL's open to its close. Three tasks:

* **scan**: asks the coordinator where each vchannel of the pchannel stands
  (``recovery_info``), then reads the WAL from the smallest vchannel checkpoint
  and folds every message into the vchannel's ``ChannelPipeline``; a
  CreateCollection starts a pipeline, DropCollection ends one. When the
  buffers grow past twice the memory limit it waits for syncs (backpressure;
  the WAL itself never waits for the flusher).
* **worker**: carries out the work the pipelines and the sync policies owe,
  one item at a time in the order it was owed (so a segment's CreateSegment is
  reported before its final sync). Failures are retried with backoff; a
  collection or segment that is gone makes the work moot.
* **ticker**: every 250 ms asks the sync policies what is due; every
  ``checkpoint_interval_seconds`` reports the checkpoints that moved (one
  call for the pchannel); every ``truncate_interval_seconds`` truncates the
  WAL below the smallest reported checkpoint (``WAL.truncate`` never passes
  its recovery snapshot either).

Order of writes (ARCHITECTURE §4.6): files, then segment metadata (in
``sync.py``), then the checkpoint, then truncation.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator
from typing import Any

import structlog

from common.errors import CollectionNotFound, SegmentNotFound
from common.failpoints import failpoint
from common.message import CreateCollection, decode
from common.position import Position
from common.statemetrics import GaugeSample
from common.storage.objectstore import ObjectStore
from common.tasks import BackgroundTasks
from protos.common_pb2 import MessageType
from streamingnode.flusher.dataclient import DataClient, RecoveredChannel
from streamingnode.flusher.pipeline import AllocSegment, ChannelPipeline, MarkState, SyncDeletes, SyncSegment, Work
from streamingnode.flusher.policy import SyncOptions, due_syncs
from streamingnode.flusher.sync import Syncer
from streamingnode.metrics import FLUSH_SYNC_SECONDS, checkpoint_samples
from streamingnode.wal.wal import WAL
from streamingnode.walimpls.wal import DeliverPolicy, MessageID

TICK_SECONDS = 0.25


def _key(vchannel: str, work: Work) -> tuple[str, int] | None:
    match work:
        case SyncSegment():
            return (vchannel, work.segment_id)
        case SyncDeletes():
            return (vchannel, -1)
        case _:
            return None


class WALFlusher:
    def __init__(self, wal: WAL, client: DataClient, store: ObjectStore, options: SyncOptions | None = None) -> None:
        self.wal = wal
        self._client = client
        self._options = options or SyncOptions()
        self._options.validate()
        self.syncer = Syncer(store, client)
        self.pipelines: dict[str, ChannelPipeline] = {}
        self._queue: asyncio.Queue[tuple[str, Work]] = asyncio.Queue()
        self._queued: set[tuple[str, int]] = set()
        self._reported: dict[str, Position] = {}
        self._consumed: Position | None = None
        self._synced_at_checkpoint = 0
        self.recovered = asyncio.Event()
        self._log = structlog.get_logger().bind(component="flusher", pchannel=wal.channel, term=wal.term)
        self._tasks = BackgroundTasks("flusher", pchannel=wal.channel, term=wal.term)

    def start(self) -> None:
        self._tasks.start(self._run(), name=f"flusher-{self.wal.channel}")

    async def stop(self) -> None:
        await self._tasks.stop()
        self._log.info("flusher stopped")

    # -- startup ----------------------------------------------------------------------------

    async def _run(self) -> None:
        channels = await self._recover()
        for ch in channels:
            self.pipelines[ch.vchannel] = ChannelPipeline(
                vchannel=ch.vchannel,
                collection_id=ch.collection_id,
                schema=ch.schema,
                checkpoint=ch.checkpoint,
                segments=ch.segments,
            )
            if ch.checkpoint is not None:
                self._reported[ch.vchannel] = ch.checkpoint
        policy = self._start_policy(channels)
        self._log.info("flusher recovered", vchannels=len(channels), start=str(policy.message_id or policy.kind.value))
        self.recovered.set()
        for coro, name in ((self._work_loop(), "worker"), (self._tick_loop(), "ticker")):
            self._tasks.start(coro, name=f"flusher-{name}-{self.wal.channel}")
        await self._scan(policy)

    async def _recover(self) -> list[RecoveredChannel]:
        delay = 0.1
        while True:
            try:
                return await self._client.recovery_info(self.wal.channel)
            except asyncio.CancelledError:
                raise
            except Exception as err:  # the coordinator may be failing over: keep asking
                self._log.warning("recovery info not available, retrying", error=str(err))
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)

    @staticmethod
    def _start_policy(channels: list[RecoveredChannel]) -> DeliverPolicy:
        """From the smallest checkpoint; from the start of the log if any vchannel has none."""
        if not channels or any(ch.checkpoint is None for ch in channels):
            return DeliverPolicy.all()
        first = min((ch.checkpoint for ch in channels if ch.checkpoint is not None), key=lambda p: p.timetick)
        return DeliverPolicy.start_from(MessageID.from_bytes(first.message_id))

    # -- scan ----------------------------------------------------------------------------------

    async def _scan(self, policy: DeliverPolicy) -> None:
        limit = 2 * self._options.memory_limit_bytes
        async for mid, msg in self.wal.read(policy):
            raw_id = mid.to_bytes()
            pos = Position(raw_id, msg.timetick)
            self._consumed = pos
            if msg.type == MessageType.TIME_TICK:
                for pipeline in self.pipelines.values():
                    pipeline.tick(pos)
            else:
                p = self.pipelines.get(msg.vchannel)
                if p is None and msg.type == MessageType.CREATE_COLLECTION:
                    created = decode(msg)
                    assert isinstance(created, CreateCollection)
                    p = ChannelPipeline(
                        vchannel=msg.vchannel,
                        collection_id=created.collection_id,
                        schema=created.schema,
                        checkpoint=None,
                    )
                    self.pipelines[msg.vchannel] = p
                    self._log.info("vchannel added", vchannel=msg.vchannel)
                if p is not None:
                    for work in p.handle(raw_id, msg):
                        self._enqueue(p.vchannel, work)
            while self._buffered() > limit:  # let syncs catch up; the WAL keeps accepting writes
                await asyncio.sleep(0.05)

    def _buffered(self) -> int:
        return sum(p.buffered_bytes for p in self.pipelines.values())

    def _enqueue(self, vchannel: str, work: Work) -> None:
        """Queue ``work``; a sync already queued for the same target is not queued twice (a final one is)."""
        key = _key(vchannel, work)
        if key is not None:
            if key in self._queued and not (isinstance(work, SyncSegment) and work.final):
                return
            self._queued.add(key)
        self._queue.put_nowait((vchannel, work))

    # -- work ----------------------------------------------------------------------------------

    async def _work_loop(self) -> None:
        while True:
            vchannel, work = await self._queue.get()
            try:
                await self._carry_out(vchannel, work)
            finally:
                key = _key(vchannel, work)
                if key is not None:
                    self._queued.discard(key)

    async def _carry_out(self, vchannel: str, work: Work) -> None:
        delay = 0.1
        while True:
            p = self.pipelines.get(vchannel)
            if p is None or p.dropped:
                return
            try:
                await self._execute(p, work)
                return
            except asyncio.CancelledError:
                raise
            except (CollectionNotFound, SegmentNotFound) as err:
                self._log.info("work dropped, its collection or segment is gone", work=type(work).__name__,
                               vchannel=vchannel, reason=err.message)
                if isinstance(work, SyncSegment):
                    p.segments.pop(work.segment_id, None)
                    self.syncer.forget({work.segment_id})
                return
            except Exception as err:  # task boundary: retry the same work (it is idempotent)
                self._log.warning("flush work failed, retrying", work=type(work).__name__, vchannel=vchannel,
                                  error=str(err) or type(err).__name__)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)

    async def _execute(self, p: ChannelPipeline, work: Work) -> None:
        match work:
            case AllocSegment(meta=meta):
                await self._client.alloc_segment(meta)
            case MarkState(segment_id=sid, state=state):
                await self._client.update_state(sid, state)
            case SyncSegment():
                started = time.perf_counter()
                await self.syncer.sync_segment(p, work)
                FLUSH_SYNC_SECONDS.labels(self.wal.channel, "segment").observe(time.perf_counter() - started)
            case SyncDeletes():
                started = time.perf_counter()
                await self.syncer.sync_deletes(p, work)
                FLUSH_SYNC_SECONDS.labels(self.wal.channel, "deletes").observe(time.perf_counter() - started)

    # -- checkpoints and truncation -------------------------------------------------------------

    async def _tick_loop(self) -> None:
        o = self._options
        last_cp = last_trunc = time.monotonic()
        while True:
            await asyncio.sleep(TICK_SECONDS)
            try:
                now = time.monotonic()
                for work in due_syncs(self.pipelines.values(), o, now, self._queued):
                    assert isinstance(work, SyncSegment | SyncDeletes)
                    self._enqueue(work.vchannel, work)
                if now - last_cp >= o.checkpoint_interval_seconds:
                    last_cp = now
                    await self.report_checkpoints()
                if now - last_trunc >= o.truncate_interval_seconds:
                    last_trunc = now
                    await self.truncate()
            except asyncio.CancelledError:
                raise
            except Exception as err:  # task boundary: next tick tries again
                self._log.warning("flusher tick failed", error=str(err) or type(err).__name__)

    async def report_checkpoints(self) -> None:
        """Send every vchannel checkpoint that moved since the last report (one call)."""
        changed = []
        for v, p in self.pipelines.items():
            if p.dropped:
                continue
            cp = p.checkpoint()
            if cp is not None and cp != self._reported.get(v):
                changed.append((v, cp))
        if not changed:
            return
        await self._client.update_checkpoints(changed)
        self._reported.update(changed)
        if self.syncer.synced > self._synced_at_checkpoint:
            self._synced_at_checkpoint = self.syncer.synced
            failpoint("flusher.after_checkpoint")

    async def truncate(self) -> MessageID | None:
        """Truncate the WAL below the smallest reported checkpoint of a live vchannel."""
        live = [v for v, p in self.pipelines.items() if not p.dropped]
        if any(v not in self._reported for v in live):
            return None
        if live:
            bound = min((self._reported[v] for v in live), key=lambda pos: pos.timetick)
        elif self._consumed is not None:
            bound = self._consumed
        else:
            return None
        return await self.wal.truncate(MessageID.from_bytes(bound.message_id))

    def state_samples(self) -> Iterator[GaugeSample]:
        """Each live vchannel's checkpoint lag and buffered segments by state (for ``/metrics``)."""
        tick = self.wal.last_timetick
        for v, p in list(self.pipelines.items()):
            if p.dropped:
                continue
            cp = p.checkpoint()
            sealed = sum(1 for b in p.segments.values() if b.sealed)
            segments = {"growing": len(p.segments) - sealed, "sealed": sealed}
            yield from checkpoint_samples(self.wal.channel, v, tick, cp.timetick if cp is not None else None, segments)

    def stats(self) -> dict[str, Any]:
        return {
            "vchannels": len(self.pipelines),
            "buffered_bytes": self._buffered(),
            "queued": self._queue.qsize(),
            "synced": self.syncer.synced,
        }


class FlusherManager:
    """Registered with the ``WALManager``: a ``WALFlusher`` per open WAL, stopped before it closes."""

    def __init__(self, client: DataClient, store: ObjectStore, options: SyncOptions | None = None) -> None:
        self._client = client
        self._store = store
        self._options = options
        self.flushers: dict[str, WALFlusher] = {}

    async def on_open(self, wal: WAL) -> None:
        flusher = WALFlusher(wal, self._client, self._store, self._options)
        self.flushers[wal.channel] = flusher
        flusher.start()

    async def on_close(self, wal: WAL) -> None:
        flusher = self.flushers.get(wal.channel)
        if flusher is not None and flusher.wal is wal:
            del self.flushers[wal.channel]
            await flusher.stop()

    async def close(self) -> None:
        for flusher in list(self.flushers.values()):
            with contextlib.suppress(Exception):
                await flusher.stop()
        self.flushers.clear()
