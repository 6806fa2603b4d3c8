"""The delegator of one vchannel: sealed segments from object storage, growing data from the WAL.

Lifetime (``start`` to ``stop``), one task:

1. load what the coordinator's ``WatchChannel`` named: the deletes of the
   vchannel's FLUSHED L0 segments, then its FLUSHED L1 segments (sealed);
   from then on the delegator is *serviceable*;
2. consume the vchannel from the checkpoint the coordinator gave (every
   message at or before it is in those segments): inserts go to growing
   segments (not to segments already sealed here), deletes everywhere, each
   TimeTick advances tsafe.

The set of sealed segments changes only through ``sync`` (the coordinator's
``SyncDistribution``): a newly FLUSHED segment is loaded off the event loop and
then, under the data lock, replaces its growing copy in one step (no gap, no
duplicate); a released segment goes. Reads wait until tsafe reaches their
guarantee timestamp, then read every segment at tsafe under the data lock, in
a worker thread, and merge.

If the WAL no longer holds the position to resume from (``PositionTruncated``),
the delegator stops and reports itself *broken*; the coordinator watches the
channel again with a fresh checkpoint and the segments that cover the rest.

Walking-skeleton scope still: sealed segments live in this process (workers
and HNSW are issue #6) and search is exact.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import structlog

from protos.common_pb2 import Message, MessageType
from querynode.delegator.shard_data import ShardData
from querynode.delegator.tsafe import TSafe
from querynode.segments.growing import GrowingStore
from querynode.segments.reduce import merge_topk
from querynode.segments.sealed import load_deletes, load_sealed
from services.errors import PositionTruncated
from services.expr import evaluate, parse_filter
from services.position import Position
from services.schema import TIMESTAMP_COLUMN, CollectionSchema
from services.segment import SegmentLevel, SegmentMeta
from services.storage.objectstore import ObjectStore
from streamingnode.client.assignment import AssignmentSource
from streamingnode.client.consumer import consume
from streamingnode.message import body_table, header


@dataclass(frozen=True, slots=True, kw_only=True)
class ReadSpec:
    guarantee_ts: int
    filter: str
    filter_params: dict
    output_fields: tuple[str, ...]
    timeout: float


class Delegator:
    def __init__(
        self,
        *,
        collection_id: int,
        vchannel: str,
        pchannel: str,
        schema: CollectionSchema,
        source: AssignmentSource,
        storage: ObjectStore,
        checkpoint: Position | None = None,
        segments: Sequence[SegmentMeta] = (),
    ) -> None:
        self.collection_id = collection_id
        self.vchannel = vchannel
        self.pchannel = pchannel
        self.schema = schema
        self._source = source
        self._storage = storage
        self._checkpoint = checkpoint
        self._initial = list(segments)
        self.data = ShardData(schema)
        self.l0_segments: set[int] = set()
        self.tsafe = TSafe()
        self.serviceable = False
        self.broken = False
        self._lock = asyncio.Lock()  # reads see data that no message or load is half-applied to
        self._sync_lock = asyncio.Lock()  # one distribution change at a time
        self._task: asyncio.Task[None] | None = None
        self._arrow_schema = schema.arrow_schema()
        self._log = structlog.get_logger().bind(component="delegator", vchannel=vchannel)

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"delegator-{self.vchannel}")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.wait([self._task])

    @property
    def sealed_segments(self) -> list[int]:
        """Every segment served from object storage here, L1 and L0."""
        return sorted([*self.data.sealed, *self.l0_segments])

    # -- lifetime ---------------------------------------------------------------------------

    async def _run(self) -> None:
        try:
            await self.sync(self._initial, ())
            self.serviceable = True
            self._log.info("delegator serviceable", sealed=len(self.data.sealed), l0=len(self.l0_segments),
                           checkpoint=None if self._checkpoint is None else self._checkpoint.timetick)
            await self._consume()
        except PositionTruncated as err:
            self.broken = True
            self._log.warning("resume position truncated, the channel must be watched again", reason=err.message)
        except asyncio.CancelledError:
            raise
        except Exception:  # task boundary: report broken so the coordinator watches the channel again
            self.broken = True
            self._log.exception("delegator failed")

    async def _consume(self) -> None:
        cp = self._checkpoint
        async for _, msg in consume(
            self._source, self.pchannel, self.vchannel, start_from=None if cp is None else cp.message_id
        ):
            if cp is not None and cp.covers(msg.timetick):
                continue  # in the segments loaded from object storage
            try:
                await self._apply(msg)
            except asyncio.CancelledError:
                raise
            except Exception:  # a message we cannot apply must not kill the shard; it is logged
                self._log.exception("cannot apply message", type=MessageType.Name(msg.type))

    async def _apply(self, msg: Message) -> None:
        match msg.type:
            case MessageType.TIME_TICK:
                await self.tsafe.advance(msg.timetick)
            case MessageType.INSERT:
                table = body_table(msg)
                ts = pa.array(np.full(table.num_rows, msg.timetick, dtype=np.uint64))
                table = table.append_column(TIMESTAMP_COLUMN, ts).cast(self._arrow_schema)
                segment_id = int(header(msg).get("segment_id", 0))
                async with self._lock:
                    self.data.insert(segment_id, table)
            case MessageType.DELETE:
                pks = body_table(msg).column("pk").combine_chunks()
                async with self._lock:
                    self.data.delete(pks, msg.timetick)
            case _:
                pass  # DDL and flush messages carry nothing for reads

    # -- distribution --------------------------------------------------------------------------

    async def sync(self, load: Sequence[SegmentMeta], release: Sequence[int]) -> None:
        """Load FLUSHED segments not served yet and release the listed ones (the coordinator's view)."""
        async with self._sync_lock:
            for meta in load:
                if meta.level == SegmentLevel.L0:
                    await self._load_l0(meta)
                elif meta.segment_id not in self.data.sealed:
                    seg = await asyncio.to_thread(load_sealed, self._storage, self.schema, meta)
                    async with self._lock:  # CPU work (cuts against every other segment): off the loop
                        await asyncio.to_thread(self.data.add_sealed, seg)
                    self._log.info("sealed segment loaded", segment=meta.segment_id, rows=seg.store.num_rows)
            if release:
                async with self._lock:
                    for sid in release:
                        self.data.release(sid)
                        self.l0_segments.discard(sid)
                self._log.info("segments released", segments=list(release))

    async def _load_l0(self, meta: SegmentMeta) -> None:
        if meta.segment_id in self.l0_segments:
            return
        if self.serviceable:
            # Consumed already or still to come from the WAL (its deletes follow the checkpoint
            # this delegator started from): nothing to read.
            self.l0_segments.add(meta.segment_id)
            return
        pks, ts = await asyncio.to_thread(load_deletes, self._storage, self.schema, meta)
        async with self._lock:
            self.data.add_deletes(pks, ts)
        self.l0_segments.add(meta.segment_id)

    # -- reads -----------------------------------------------------------------------------------

    def _mask(self, spec: ReadSpec, store: GrowingStore) -> np.ndarray | None:
        if not spec.filter.strip():
            return None
        expr = parse_filter(spec.filter, self.schema, spec.filter_params or None)
        return evaluate(expr, store.table())

    async def search(
        self, spec: ReadSpec, *, field: str, vectors: np.ndarray, metric: str, topk: int
    ) -> pa.Table:
        read_ts = await self.tsafe.wait(spec.guarantee_ts, timeout=spec.timeout, what=f"search {self.vchannel}")
        async with self._lock:

            def run() -> pa.Table:
                parts = [
                    store.search(
                        field=field,
                        vectors=vectors,
                        metric=metric,
                        topk=topk,
                        read_ts=read_ts,
                        mask=self._mask(spec, store),
                        output_fields=spec.output_fields,
                    )
                    for store in self.data.stores()
                ]
                if not parts:
                    parts = [GrowingStore(self.schema).search(
                        field=field, vectors=vectors, metric=metric, topk=topk, read_ts=read_ts,
                        output_fields=spec.output_fields,
                    )]
                if len(parts) == 1:
                    return parts[0]
                return merge_topk(parts, topk=topk, metric=metric, pk_field=self.schema.primary_field.name)

            return await asyncio.to_thread(run)

    async def query(self, spec: ReadSpec, *, limit: int | None, count_only: bool) -> tuple[pa.Table | None, int]:
        read_ts = await self.tsafe.wait(spec.guarantee_ts, timeout=spec.timeout, what=f"query {self.vchannel}")
        async with self._lock:

            def run() -> tuple[pa.Table | None, int]:
                stores = list(self.data.stores()) or [GrowingStore(self.schema)]
                if count_only:
                    return None, sum(s.count(read_ts=read_ts, mask=self._mask(spec, s)) for s in stores)
                parts = [
                    s.query(read_ts=read_ts, mask=self._mask(spec, s), output_fields=spec.output_fields, limit=limit)
                    for s in stores
                ]
                table = parts[0] if len(parts) == 1 else pa.concat_tables(parts)
                if len(parts) > 1:
                    pk = self.schema.primary_field.name
                    table = table.take(pc.sort_indices(table, sort_keys=[(pk, "ascending")]))
                    if limit is not None:
                        table = table.slice(0, limit)
                return table, table.num_rows

            return await asyncio.to_thread(run)


def parse_params(raw: str) -> dict:
    return json.loads(raw) if raw else {}
