"""``ShardSnapshot`` <-> JSON-ready dicts, for the WAL's recovery snapshots.

A snapshot taken between two writer batches has no in-flight reservations;
``from_snapshot`` drops any anyway. The encoding is plain JSON types so it can
live in etcd and be read by a human.
"""

from __future__ import annotations

from typing import Any

from streamingnode.shard.manager import CollectionShard, ShardSnapshot
from streamingnode.shard.policy import SealReason
from streamingnode.shard.segments import GrowingSegment, SegmentState


def snapshot_to_dict(snap: ShardSnapshot) -> dict[str, Any]:
    return {
        "collections": [
            {
                "collection_id": c.collection_id,
                "vchannels": sorted(c.vchannels),
                "dropped_partitions": sorted(c.dropped_partitions),
                "last_flush_ts": c.last_flush_ts,
            }
            for c in snap.collections
        ],
        "segments": [
            {
                "segment_id": s.segment_id,
                "collection_id": s.collection_id,
                "partition_id": s.partition_id,
                "vchannel": s.vchannel,
                "rows": s.rows,
                "bytes": s.bytes,
                "created_ms": s.created_ms,
                "last_write_ms": s.last_write_ms,
                "state": s.state.value,
                "seal_reason": None if s.seal_reason is None else s.seal_reason.value,
            }
            for s in snap.segments
        ],
        "open_segments": list(snap.open_segments),
    }


def snapshot_from_dict(d: dict[str, Any]) -> ShardSnapshot:
    return ShardSnapshot(
        collections=tuple(
            CollectionShard(
                collection_id=int(c["collection_id"]),
                vchannels=frozenset(c["vchannels"]),
                dropped_partitions=frozenset(int(p) for p in c["dropped_partitions"]),
                last_flush_ts=int(c["last_flush_ts"]),
            )
            for c in d["collections"]
        ),
        segments=tuple(
            GrowingSegment(
                segment_id=int(s["segment_id"]),
                collection_id=int(s["collection_id"]),
                partition_id=int(s["partition_id"]),
                vchannel=s["vchannel"],
                rows=int(s["rows"]),
                bytes=int(s["bytes"]),
                created_ms=int(s["created_ms"]),
                last_write_ms=int(s["last_write_ms"]),
                state=SegmentState(s["state"]),
                seal_reason=None if s["seal_reason"] is None else SealReason(s["seal_reason"]),
            )
            for s in d["segments"]
        ),
        open_segments=tuple(int(x) for x in d["open_segments"]),
    )
