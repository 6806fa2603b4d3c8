"""The delegator of one vchannel: consume it, hold its growing data, answer reads at tsafe.

Walking-skeleton scope: every row lives in one in-memory growing store rebuilt
by consuming the vchannel from the start of the WAL. Sealed segments, the
delete buffer, the PK oracle and the versioned distribution arrive with the
flusher (#5) and query-node (#6) issues.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import structlog

from protos.common_pb2 import Message, MessageType
from querynode.delegator.tsafe import TSafe
from querynode.segments.growing import GrowingStore
from services.expr import evaluate, parse_filter
from services.schema import TIMESTAMP_COLUMN, CollectionSchema
from streamingnode.client.assignment import AssignmentSource
from streamingnode.client.consumer import consume
from streamingnode.message import body_table


@dataclass(frozen=True, slots=True, kw_only=True)
class ReadSpec:
    guarantee_ts: int
    filter: str
    filter_params: dict
    output_fields: tuple[str, ...]
    timeout: float


class Delegator:
    def __init__(
        self, *, collection_id: int, vchannel: str, pchannel: str, schema: CollectionSchema, source: AssignmentSource
    ) -> None:
        self.collection_id = collection_id
        self.vchannel = vchannel
        self.pchannel = pchannel
        self.schema = schema
        self._source = source
        self.store = GrowingStore(schema)
        self.tsafe = TSafe()
        self._lock = asyncio.Lock()  # reads see a store that no message is half-applied to
        self._task: asyncio.Task[None] | None = None
        self._log = structlog.get_logger().bind(component="delegator", vchannel=vchannel)

    def start(self) -> None:
        self._task = asyncio.create_task(self._consume(), name=f"delegator-{self.vchannel}")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _consume(self) -> None:
        async for _, msg in consume(self._source, self.pchannel, self.vchannel):
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
                table = table.append_column(TIMESTAMP_COLUMN, ts)
                async with self._lock:
                    self.store.apply_insert(table.cast(self.schema.arrow_schema()))
            case MessageType.DELETE:
                pks = body_table(msg).column("pk").combine_chunks()
                async with self._lock:
                    self.store.apply_delete(pks, msg.timetick)
            case _:
                pass  # DDL and flush messages carry nothing for growing data

    def _mask(self, spec: ReadSpec) -> np.ndarray | None:
        if not spec.filter.strip():
            return None
        expr = parse_filter(spec.filter, self.schema, spec.filter_params or None)
        return evaluate(expr, self.store.table())

    async def search(
        self, spec: ReadSpec, *, field: str, vectors: np.ndarray, metric: str, topk: int
    ) -> pa.Table:
        read_ts = await self.tsafe.wait(spec.guarantee_ts, timeout=spec.timeout, what=f"search {self.vchannel}")
        async with self._lock:
            def run() -> pa.Table:
                return self.store.search(
                    field=field,
                    vectors=vectors,
                    metric=metric,
                    topk=topk,
                    read_ts=read_ts,
                    mask=self._mask(spec),
                    output_fields=spec.output_fields,
                )

            return await asyncio.to_thread(run)

    async def query(self, spec: ReadSpec, *, limit: int | None, count_only: bool) -> tuple[pa.Table | None, int]:
        read_ts = await self.tsafe.wait(spec.guarantee_ts, timeout=spec.timeout, what=f"query {self.vchannel}")
        async with self._lock:
            def run() -> tuple[pa.Table | None, int]:
                mask = self._mask(spec)
                if count_only:
                    return None, self.store.count(read_ts=read_ts, mask=mask)
                t = self.store.query(read_ts=read_ts, mask=mask, output_fields=spec.output_fields, limit=limit)
                return t, t.num_rows

            return await asyncio.to_thread(run)


def parse_params(raw: str) -> dict:
    return json.loads(raw) if raw else {}
