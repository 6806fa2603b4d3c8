"""Distribution planning without I/O: which segments to load, which cuts go to which worker.

The delegator's I/O (worker calls, object storage) stays in ``loading.py`` and ``core.py``;
what they send where is decided here from the distribution, the PK oracle and the partitions,
so each decision can be read, and tested, on its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from common.segment import SegmentMeta
from common.storage.layout import ALL_PARTITIONS
from common.storage.stats import SegmentStats
from querynode.delegator.distribution import Placement
from querynode.delegator.load_failures import LoadFailures
from querynode.delegator.shard_data import reaches

#: Cuts for sealed segments: segment -> (keys, the timestamps that end their older versions).
Cuts = dict[int, tuple[pa.Array, np.ndarray]]


@dataclass(frozen=True, slots=True)
class PlacedSegment:
    meta: SegmentMeta
    placement: Placement


class Oracle:
    """PK statistics of each sealed segment: which segments may hold a key."""

    def __init__(self) -> None:
        self.stats: dict[int, list[SegmentStats]] = {}

    def may_contain(self, segment_id: int, pks: pa.Array) -> np.ndarray:
        stats = self.stats.get(segment_id)
        if not stats:
            return np.ones(len(pks), dtype=bool)
        hit = np.zeros(len(pks), dtype=bool)
        for s in stats:
            hit |= s.may_contain(pks)
        return hit


def forward_plan(
    sealed: Mapping[int, Placement],
    partition_of: Mapping[int, int],
    oracle: Oracle,
    pks: pa.Array,
    ts: np.ndarray,
    partition: int,
    *,
    exclude: int | None = None,
    skip: set[int] | None = None,
) -> dict[Placement, Cuts]:
    """The cuts ``(pks, ts)`` owes the sealed segments of ``partition`` (``ALL_PARTITIONS``: of every
    one) whose PK stats may hold the keys, by worker; ``exclude`` and ``skip`` get none."""
    per_worker: dict[Placement, Cuts] = {}
    for sid, placement in sealed.items():
        if sid == exclude or (skip is not None and sid in skip):
            continue
        if not reaches(partition, partition_of.get(sid, ALL_PARTITIONS)):
            continue
        hit = oracle.may_contain(sid, pks)
        if hit.any():
            per_worker.setdefault(placement, {})[sid] = (pks.filter(pa.array(hit)), ts[hit])
    return per_worker


def loads_due(
    sealed: Mapping[int, Placement], placements: Iterable[PlacedSegment], failures: LoadFailures
) -> tuple[list[tuple[PlacedSegment, Placement | None]], list[int]]:
    """The segments a sync loads (each with the placement it moves from, if served elsewhere) and
    those it defers (failed lately: tried again after their backoff). One already served by its
    node is neither."""
    load: list[tuple[PlacedSegment, Placement | None]] = []
    deferred: list[int] = []
    for placed in placements:
        current = sealed.get(placed.meta.segment_id)
        if current is not None and current.node_id == placed.placement.node_id:
            continue
        if not failures.due(placed.meta.segment_id):
            deferred.append(placed.meta.segment_id)
            continue
        load.append((placed, current))
    return load, deferred


def with_batch_versions(
    pks: pa.Array, ts: np.ndarray, segment_id: int, partition: int, oracle: Oracle,
    others: Sequence[tuple[int, pa.Array, np.ndarray]],
) -> tuple[pa.Array, np.ndarray]:
    """``(pks, ts)`` plus the rows of the other segments published with this one (``others``: their
    partition, keys and timestamps) in its partition that it may hold (the cut log has those later)."""
    for other_partition, keys, stamps in others:
        if len(keys) and other_partition == partition:
            hit = oracle.may_contain(segment_id, keys)
            if hit.any():
                pks = pa.concat_arrays([pks, keys.filter(pa.array(hit)).cast(pks.type)])
                ts = np.concatenate([ts, stamps[hit]])
    return pks, ts


def group_by_worker(held: Mapping[int, Placement]) -> dict[Placement, list[int]]:
    out: dict[Placement, list[int]] = {}
    for sid, p in held.items():
        out.setdefault(p, []).append(sid)
    return out
