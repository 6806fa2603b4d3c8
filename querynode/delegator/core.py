"""What every part of the delegator shares: its state, the PK oracle, and taking segments offline.

``DelegatorCore`` holds one vchannel's state (growing data, cut log, oracle, distribution,
offline and failed segments, tsafe, the data lock); the consume loop (``consume.py``), the
distribution changes (``loading.py``) and the reads (``reads.py``) are its subclasses, joined
in ``Delegator`` (``delegator.py``). Forwarding cuts to sealed segments is here because both
the consume loop and a load's publication do it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import grpc
import numpy as np
import pyarrow as pa
import structlog

from common.errors import ErrorCode, NotReady, StrataError
from common.position import Position
from common.schema import CollectionSchema
from common.segment import SegmentMeta
from common.storage.objectstore import ObjectStore
from common.tasks import BackgroundTasks
from protos import querynode_pb2 as qpb
from querynode.delegator.bm25_oracle import Bm25Oracle
from querynode.delegator.cutlog import CutLog
from querynode.delegator.distribution import Distribution, Placement
from querynode.delegator.load_failures import LoadFailures
from querynode.delegator.planning import Oracle, PlacedSegment, forward_plan
from querynode.delegator.shard_data import ShardData
from querynode.delegator.tsafe import TSafe
from querynode.worker.client import WorkerClient
from streamingnode.client.assignment import AssignmentSource
from streamingnode.client.timetick import TimeTickRequester

# Worker answers that mean the segments there may be gone or stale: reload before reading them.
WORKER_LOST = {ErrorCode.SEGMENT_NOT_FOUND, ErrorCode.NOT_READY, ErrorCode.UNAVAILABLE, ErrorCode.NODE_NOT_FOUND}


class DelegatorCore:
    """The delegator's state, and the cuts and offline segments every part of it may cause."""

    def __init__(
        self,
        *,
        collection_id: int,
        vchannel: str,
        pchannel: str,
        schema: CollectionSchema,
        source: AssignmentSource,
        storage: ObjectStore,
        workers: WorkerClient,
        checkpoint: Position | None = None,
        l0_segments: Sequence[SegmentMeta] = (),
        placements: Sequence[PlacedSegment] = (),
        indexes: Sequence[qpb.IndexSpec] = (),
        replica_id: int = 0,
        excluded: Sequence[int] = (),
        ticks: TimeTickRequester | None = None,
    ) -> None:
        self.collection_id = collection_id
        self.vchannel = vchannel
        self.pchannel = pchannel
        self.schema = schema
        self.replica_id = replica_id
        self._source = source
        self._ticks = ticks  # asks the pchannel's owner for a TimeTick a read waits for (readable.py)
        self._storage = storage
        self._workers = workers
        self._checkpoint = checkpoint
        self._initial_l0 = list(l0_segments)
        self._initial = list(placements)
        self.indexes = list(indexes)
        self.data = ShardData(schema)  # growing segments only: sealed ones live on workers
        self.cutlog = CutLog(schema.primary_field.arrow_type())
        self.oracle = Oracle()
        self.bm25 = Bm25Oracle()
        self.dist = Distribution()
        self.l0_segments: set[int] = set()
        self.offline: set[int] = set()
        # Segments whose last load failed (and why); those with no other copy here are offline too.
        self.load_failures = LoadFailures()
        self.failure = ""  # why the delegator broke, when it did
        # Segments whose rows come from elsewhere (released, or compacted away): their inserts are skipped.
        self.excluded: set[int] = set(excluded)
        self._rows: dict[int, int] = {}  # rows per sealed segment served
        self._partition_of: dict[int, int] = {}  # segment -> partition, growing and sealed
        self.tsafe = TSafe()
        self.serviceable = False
        self.broken = False
        self._lock = asyncio.Lock()  # data: no message, load or forward is half-applied while reading
        self._sync_lock = asyncio.Lock()  # one distribution change at a time
        self._arrow_schema = schema.arrow_schema()
        self._pk = schema.primary_field.name
        self._log = structlog.get_logger().bind(component="delegator", vchannel=vchannel, replica=replica_id)
        self._tasks = BackgroundTasks("delegator", vchannel=vchannel, replica=replica_id)

    @property
    def sealed_segments(self) -> list[int]:
        """Every segment served from object storage, L1 (on workers) and L0 (deletes here)."""
        return sorted([*self.dist.current.sealed, *self.l0_segments])

    @property
    def sealed_rows(self) -> int:
        return sum(self._rows.get(sid, 0) for sid in self.dist.current.sealed)


    async def _forward(
        self, pks: pa.Array, ts: np.ndarray, partition: int, *, exclude: int | None = None,
        skip: set[int] | None = None,
    ) -> None:
        """Send cuts to the sealed segments of ``partition`` (``ALL_PARTITIONS``: of every one) whose PK
        stats may hold the keys (call under the data lock)."""
        per_worker = forward_plan(self.dist.current.sealed, self._partition_of, self.oracle, pks, ts, partition,
                                  exclude=exclude, skip=skip)
        for placement, cuts in per_worker.items():
            try:
                await self._workers.at(placement.address).cut(self.collection_id, cuts)
            except (grpc.aio.AioRpcError, StrataError) as err:
                self._take_offline(list(cuts), f"forwarding to node {placement.node_id} failed: {err}")

    def _take_offline(self, segment_ids: list[int], reason: str) -> None:
        """These segments may miss a cut or a worker: serve none of them until they are loaded again."""
        self.dist.update(remove=segment_ids)
        self.offline.update(segment_ids)
        self._log.warning("segments offline", segments=segment_ids, reason=reason)

    def _read_failed(self, placement: Placement, sids: list[int], err: Exception) -> StrataError:
        """The error a failed worker read becomes. A worker that cannot be reached or no longer holds
        the segments takes them offline (they may miss cuts); an error the read itself caused (a
        filter that cannot be evaluated, say) is the caller's and leaves the distribution alone."""
        if isinstance(err, StrataError) and err.code not in WORKER_LOST:
            return err
        self._take_offline(sids, f"read on node {placement.node_id} failed: {err}")
        return NotReady(f"{self.vchannel}: worker {placement.node_id} failed: {err}")
