"""The sealed segments a loaded collection is served from, as Milvus's ``GetQuerySegmentInfo`` lists them. Pure, no I/O.

Milvus lists the sealed segments of its query nodes' distribution that are in
the collection's current target, one entry per segment with every node holding
it (a node per replica). Here a segment is listed once a delegator of the
collection serves it (it is in the delegator's sealed set) and the node that
holds it is known: for an L1 segment the worker the delegator routes it to,
once that worker reports holding it; for an L0 segment (deletes, read by the
delegator itself) the delegator's node. Growing data is not listed, as in
Milvus. The vector index reported is one in place on the first node listed
(the segment is searched through it; without one it is searched exactly).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from common.segment import SegmentLevel, SegmentMeta


@dataclass(frozen=True, slots=True, kw_only=True)
class DelegatorServing:
    """What one delegator serves: its node, replica, sealed segments and the worker of each L1 one."""

    node_id: int
    replica_id: int
    sealed: Collection[int]
    routes: Mapping[int, int]  # segment -> the worker it was placed on (confirmed by the delegator)


@dataclass(frozen=True, slots=True, kw_only=True)
class ServedSegment:
    segment: SegmentMeta
    node_ids: tuple[int, ...]  # in replica order, each once
    index_id: int  # a vector index in place on node_ids[0]; 0: none yet


def served_segments(
    delegators: Sequence[DelegatorServing],
    metas: Mapping[int, SegmentMeta],
    held: Mapping[int, Mapping[int, Sequence[int]]],
) -> list[ServedSegment]:
    """The segments the delegators serve, by segment id.

    ``metas``: the collection's FLUSHED segments; ``held``: node -> segment -> the index ids in place,
    for every segment a live worker reports holding.
    """
    nodes: dict[int, list[int]] = {}
    for d in sorted(delegators, key=lambda d: (d.replica_id, d.node_id)):
        for sid in sorted(d.sealed):
            meta = metas.get(sid)
            if meta is None:
                continue  # compacted or dropped away since the delegator reported
            node = d.node_id if meta.level == SegmentLevel.L0 else d.routes.get(sid)
            if node is None or (meta.level != SegmentLevel.L0 and sid not in held.get(node, {})):
                continue  # not on a worker yet
            listed = nodes.setdefault(sid, [])
            if node not in listed:
                listed.append(node)
    out = []
    for sid, on in sorted(nodes.items()):
        indexes = held.get(on[0], {}).get(sid, ())
        out.append(ServedSegment(segment=metas[sid], node_ids=tuple(on), index_id=min(indexes, default=0)))
    return out
