"""Reads: a search or query of the vchannel at a guarantee timestamp.

Wait for tsafe (``readable.py``), check that no segment is offline, then under the data lock pin
the distribution's snapshot and take the growing segments; the workers answer for the sealed
segments of the snapshot while the growing ones are read here, and the parts are merged.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator, Awaitable
from dataclasses import replace
from typing import TypeVar

import grpc
import numpy as np
import pyarrow as pa

from common.errors import NotReady, StrataError
from common.fulltext.index_params import bm25_params
from common.readplan import ReadPlan, VectorQuery
from common.schema import TIMESTAMP_COLUMN
from common.tracing import traced
from querynode.delegator.core import DelegatorCore
from querynode.delegator.distribution import Placement, Snapshot
from querynode.delegator.growing_specs import scalar_specs
from querynode.delegator.readable import wait_readable
from querynode.offload import concat_slices, run_sliced, search_cost
from querynode.worker.segment import search_rows
from segcore.index.base import search_params
from segcore.segments.growing import GrowingStore
from segcore.segments.growing_indexes import growing_filter
from segcore.segments.readmask import read_mask
from segcore.segments.reduce import merge_counts, merge_rows, merge_topk

_T = TypeVar("_T")
# Hits merged on the event loop up to this many (a millisecond or so); more in a thread.
INLINE_MERGE_ROWS = 4096


class Reads(DelegatorCore):
    """Searches and queries over the growing segments here and the sealed ones on workers."""

    def _check_readable(self) -> None:
        if not self.serviceable:
            raise NotReady(f"{self.vchannel}: its sealed segments are still loading")
        if not self.offline:
            return
        failed = [f for sid in sorted(self.offline) if (f := self.load_failures.get(sid)) is not None]
        if failed:
            raise NotReady(
                f"{self.vchannel}: {failed[0].describe()}; reads fail until it is loaded (retried), so that no "
                "answer leaves its rows out"
            )
        raise NotReady(
            f"{self.vchannel}: sealed segments {sorted(self.offline)} are being loaded again; retry or use "
            "another replica"
        )

    @contextlib.asynccontextmanager
    async def _read_view(self, plan: ReadPlan) -> AsyncIterator[tuple[dict[Placement, list[int]], list[GrowingStore]]]:
        """The sealed segments a read covers (by worker, pinned until the block ends) and its growing
        segments, as of one moment: a handoff takes a segment out of the growing ones and puts it in
        the snapshot in one step under the data lock, so both are read under it. (Pinned before the
        lock, the snapshot could predate a handoff that held the lock across its worker calls,
        and the growing segments read after it: the read would see neither copy.)"""
        with contextlib.ExitStack() as pins:
            async with self._lock:
                snap = pins.enter_context(self.dist.pinned())
                sealed, stores = self._sealed_in(snap, plan), self._growing_in(plan)
            yield sealed, stores

    async def _remote(self, placement: Placement, sids: list[int], call: Awaitable[_T]) -> _T:
        """``call``'s answer; a worker's failure becomes ``_read_failed`` for its segments."""
        try:
            return await call
        except (grpc.aio.AioRpcError, StrataError) as err:
            raise self._read_failed(placement, sids, err) from err

    def _growing_in(self, plan: ReadPlan) -> list[GrowingStore]:
        """The growing segments a read covers (call under the data lock): none with ``ignore_growing``."""
        if plan.ignore_growing:
            return []
        if plan.partitions is None:
            return list(self.data.growing.values())
        return [s for sid, s in self.data.growing.items() if self._partition_of.get(sid) in plan.partitions]

    def _sealed_in(self, snap: Snapshot, plan: ReadPlan) -> dict[Placement, list[int]]:
        """The pinned snapshot's sealed segments a read covers, by worker."""
        if plan.partitions is None:
            return snap.by_worker()
        out: dict[Placement, list[int]] = {}
        for placement, sids in snap.by_worker().items():
            mine = [sid for sid in sids if self._partition_of.get(sid) in plan.partitions]
            if mine:
                out[placement] = mine
        return out

    @traced("delegator.search")
    async def search(self, plan: ReadPlan, query: VectorQuery) -> pa.Table:
        """This vchannel's top ``query.topk`` hits per query vector: the growing segments searched
        here, the sealed ones on their workers, merged."""
        read_ts = await wait_readable(self.tsafe, self._ticks, self.pchannel, plan.guarantee_ts,
                                      timeout=plan.timeout, what=f"search {self.vchannel}")
        self._check_readable()
        if query.metric.upper() == "BM25":  # text queries: term frequencies weighted by this shard's IDF
            built = bm25_params(next((dict(i.params) for i in self.indexes if i.field_name == query.anns_field), {}))
            weighed, weights = self.bm25.weigh(query.anns_field, query.vectors, dict(query.params), built,
                                               self.data.growing)
            query = replace(query, vectors=weighed, params=weights)
        field, vectors, metric, topk = query.anns_field, query.vectors, query.metric, query.topk

        def on_worker(placement: Placement, sids: list[int]) -> Awaitable[pa.Table]:
            worker = self._workers.at(placement.address)
            return self._remote(placement, sids, worker.search(self.collection_id, sids, read_ts, plan, query))

        async def growing(stores: list[GrowingStore]) -> list[pa.Table]:
            if not stores:
                return []
            expr = plan.expr
            parsed = search_params(dict(query.params))  # the workers parse them for the sealed segments
            specs = scalar_specs(self.schema, self.indexes)  # growing rows read per-chunk indexes of them
            # A store's filter mask, kept while no insert has grown it (rows only ever get appended).
            masks: dict[int, tuple[int, np.ndarray | None]] = {}

            def mask(i: int, store: GrowingStore) -> np.ndarray | None:
                kept = masks.get(i)
                if kept is None or kept[0] != store.num_rows:
                    indexes = growing_filter(store, specs) if expr is not None else None
                    kept = masks[i] = (store.num_rows, read_mask(store, expr=expr, expire_before=plan.expire_before,
                                                                 indexes=indexes))
                return kept[1]

            def run(part: slice, _threads: int) -> list[pa.Table]:  # exact search: numpy picks its threads
                return [
                    search_rows(
                        store,
                        None,
                        field_name=field,
                        queries=vectors[part],
                        metric=metric,
                        topk=topk,
                        read_ts=read_ts,
                        mask=mask(i, store),
                        params=parsed,
                        output_fields=plan.output_fields,
                    )
                    for i, store in enumerate(stores)
                ]

            size = plan.filter_cost
            cost = sum(search_cost(s.num_rows, None, vectors, parsed, filter_size=size) for s in stores)
            # Slice by slice under the data lock (no message is applied to the stores meanwhile): the
            # WAL's messages, and so tsafe and the reads waiting for it, move on between slices. A row
            # inserted or deleted between two slices is later than read_ts, so every slice sees the same.
            slices, answers = await run_sliced(
                run, nq=len(vectors), cost=cost, guard=lambda: self._lock, parallel=False
            )
            return [concat_slices([a[i] for a in answers], slices) for i in range(len(stores))]

        async with self._read_view(plan) as (sealed, stores):
            if not stores and len(sealed) == 1:  # one worker holds all of it: no task to gather
                [(placement, sids)] = sealed.items()
                parts = [await on_worker(placement, sids)]
            else:
                # The workers' searches start first (their walks run in threads); hits keep the growing
                # segments first, as merge_topk ranks ties in input order.
                *others, local = await asyncio.gather(*(on_worker(p, s) for p, s in sealed.items()), growing(stores))
                parts = [*local, *others]
        if not parts:
            empty = GrowingStore(self.schema)
            none = np.empty(0, dtype=np.int64)
            return empty.hits_table(none, none, np.empty(0, np.float32), plan.output_fields)
        if len(parts) == 1:
            return parts[0]
        merge = functools.partial(merge_topk, parts, topk=topk, metric=metric, pk_field=self._pk)
        return merge() if sum(p.num_rows for p in parts) <= INLINE_MERGE_ROWS else await asyncio.to_thread(merge)

    async def query(self, plan: ReadPlan, *, limit: int | None, count_only: bool) -> tuple[pa.Table | None, int]:
        """This vchannel's rows (sorted by key, at most ``limit``) or, ``count_only``, their count."""
        read_ts = await wait_readable(self.tsafe, self._ticks, self.pchannel, plan.guarantee_ts,
                                      timeout=plan.timeout, what=f"query {self.vchannel}")
        self._check_readable()
        asked = plan
        if not count_only:  # rows carry their _ts: a key in two partitions keeps its newest row
            plan = replace(plan, output_fields=(*plan.output_fields, TIMESTAMP_COLUMN))

        def remote(placement: Placement, sids: list[int]) -> Awaitable[tuple[pa.Table | None, int]]:
            worker = self._workers.at(placement.address)
            return self._remote(placement, sids, worker.query(self.collection_id, sids, read_ts, plan, limit, count_only))

        async def growing(stores: list[GrowingStore]) -> list[tuple[pa.Table | None, int]]:
            if not stores:
                return []

            specs = scalar_specs(self.schema, self.indexes)  # growing rows read per-chunk indexes of them

            def mask(store: GrowingStore) -> np.ndarray | None:
                indexes = growing_filter(store, specs) if plan.expr is not None else None
                return read_mask(store, expr=plan.expr, expire_before=plan.expire_before, indexes=indexes)

            async with self._lock:

                def run() -> list[tuple[pa.Table | None, int]]:
                    if count_only:
                        return [(None, s.count(read_ts=read_ts, mask=mask(s))) for s in stores]
                    parts = [
                        s.query(read_ts=read_ts, mask=mask(s), output_fields=plan.output_fields, limit=limit)
                        for s in stores
                    ]
                    return [(p, p.num_rows) for p in parts]

                return await asyncio.to_thread(run)

        async with self._read_view(plan) as (sealed, stores):
            if not stores and len(sealed) == 1:  # one worker holds all of it: no task to gather
                [(placement, sids)] = sealed.items()
                results = [await remote(placement, sids)]
            else:
                local, *others = await asyncio.gather(growing(stores), *(remote(p, s) for p, s in sealed.items()))
                results = [*local, *others]
        if count_only:
            return None, merge_counts([n for _, n in results])
        tables = [t for t, _ in results if t is not None and t.num_rows]
        if not tables:
            empty = GrowingStore(self.schema).query(read_ts=read_ts, output_fields=asked.output_fields)
            return empty, 0
        keep_ts = TIMESTAMP_COLUMN in asked.output_fields
        merge = functools.partial(merge_rows, tables, pk_field=self._pk, limit=limit, keep_ts=keep_ts)
        table = merge() if sum(t.num_rows for t in tables) <= INLINE_MERGE_ROWS else await asyncio.to_thread(merge)
        return table, table.num_rows
