"""When buffered data is written to object storage: the sync policies. Pure decisions, no I/O.

| policy | what syncs | why |
|---|---|---|
| sealed | a segment's last rows, final (``SaveBinlogPaths(flushed)``) | a Flush was consumed (``pipeline``) |
| manual flush | the vchannel's deletes | a ManualFlush: the checkpoint must pass its timestamp |
| buffer full | a growing segment's buffered rows / a vchannel's deletes | ``segment_buffer_bytes`` / ``delete_buffer_bytes`` |
| stale | the same | buffered longer than ``stale_seconds`` / ``delete_stale_seconds`` |
| memory pressure | the largest growing buffers | all buffers together above ``memory_limit_bytes``: sync until under half |

A growing segment synced early keeps growing: its manifest gains an insert log
per sync and the final sync completes it. Only final syncs and delete syncs
move the checkpoint; the others bound the streaming node's memory.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from common.errors import InvalidArgument
from streamingnode.flusher.pipeline import ChannelPipeline, SyncDeletes, SyncSegment, Work

MiB = 1 << 20


@dataclass(frozen=True, slots=True, kw_only=True)
class SyncOptions:
    segment_buffer_bytes: int = 16 * MiB
    stale_seconds: float = 120.0
    memory_limit_bytes: int = 256 * MiB
    delete_buffer_bytes: int = 4 * MiB
    # Buffered deletes hold the checkpoint (and WAL truncation) back: write them soon.
    delete_stale_seconds: float = 10.0
    checkpoint_interval_seconds: float = 1.0
    truncate_interval_seconds: float = 10.0

    def validate(self) -> None:
        for name in ("segment_buffer_bytes", "memory_limit_bytes", "delete_buffer_bytes"):
            if getattr(self, name) <= 0:
                raise InvalidArgument(f"sync option {name} must be positive")
        for name in ("stale_seconds", "delete_stale_seconds", "checkpoint_interval_seconds", "truncate_interval_seconds"):
            if getattr(self, name) <= 0:
                raise InvalidArgument(f"sync option {name} must be positive")


def due_syncs(
    pipelines: Iterable[ChannelPipeline],
    options: SyncOptions,
    now: float,
    queued: set[tuple[str, int]],
) -> list[Work]:
    """Syncs due now by size, age or memory; ``queued`` holds ``(vchannel, segment or -1)`` already owed."""
    work: list[Work] = []
    growing: list[tuple[int, str, int]] = []  # (bytes, vchannel, segment) of unsealed buffers
    total = 0
    for p in pipelines:
        if p.dropped:
            continue
        total += p.buffered_bytes
        for buf in p.segments.values():
            if buf.sealed or not buf.tables or (p.vchannel, buf.segment_id) in queued:
                continue
            if buf.nbytes >= options.segment_buffer_bytes:
                work.append(SyncSegment(p.vchannel, buf.segment_id, False, "buffer full"))
            elif buf.buffered_since is not None and now - buf.buffered_since >= options.stale_seconds:
                work.append(SyncSegment(p.vchannel, buf.segment_id, False, "stale"))
            else:
                growing.append((buf.nbytes, p.vchannel, buf.segment_id))
        d = p.deletes
        if d.pks and (p.vchannel, -1) not in queued:
            if d.nbytes >= options.delete_buffer_bytes:
                work.append(SyncDeletes(p.vchannel, "buffer full"))
            elif d.buffered_since is not None and now - d.buffered_since >= options.delete_stale_seconds:
                work.append(SyncDeletes(p.vchannel, "stale"))
    if total > options.memory_limit_bytes:
        for nbytes, vchannel, segment_id in sorted(growing, reverse=True):
            if total <= options.memory_limit_bytes // 2:
                break
            work.append(SyncSegment(vchannel, segment_id, False, "memory pressure"))
            total -= nbytes
    return work
