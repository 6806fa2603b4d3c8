"""The delegator of one vchannel in one replica: growing data here, sealed segments on workers.

Lifetime (``start`` to ``stop``), one task and its consumer:

1. read the deletes of the FLUSHED L0 segments ``WatchChannel`` named, then
   load its FLUSHED L1 segments onto the workers it named (``sync``); from
   then on the delegator is *serviceable*;
2. meanwhile, from the start, consume the vchannel from the checkpoint:
   inserts go to growing segments (skipping segments served sealed), deletes
   everywhere; each TimeTick advances tsafe. What arrives while a segment
   loads reaches it as in any handoff (below).

What ends a version of a key — a delete, or an insert of the key in another
segment of its partition — is applied to growing data here and **forwarded** to
the sealed segments of that partition (a delete naming none: of every one)
whose PK statistics (the *PK oracle*: bloom filter + min/max of each sealed
segment) may hold the key, on their workers, before the next message is
applied; so by the time tsafe passes it, every segment has it. Everything is
also kept in the ``CutLog`` for segments loaded later. Rows of one key in two
partitions (or twice in one insert) are all live, as in Milvus: ``count(*)``
counts each, and a query keeps the newest per key (``merge_rows``, ``segcore/segments/reduce.py``).

**Loading a sealed segment** (no gap, no duplicate): read its PK stats and its
rows' ``(pk, ts)`` from object storage; note the cut log's position; ask the
worker to load it with every cut recorded so far that may concern it; then,
under the data lock, forward what arrived meanwhile, cut older versions
elsewhere by its rows, drop its growing copy and publish it in the
distribution, all in one step.

One ``SyncDistribution`` changes the distribution in one step: every segment
it loads is loaded and cut first, then all of them are published and the
segments it releases removed in a single snapshot. A compaction's outputs
therefore replace its inputs at once (never both, never neither); if a load
fails while the sync also releases segments, nothing changes and the
coordinator asks again. A released segment is *excluded*: inserts of it that
the consume loop meets later (a compacted segment's rows after an old
checkpoint) are skipped, as ``WatchChannel``'s ``excluded_segments`` are. A
segment's own delta logs (deletes an L0 compaction folded into it) are applied
when it loads.

The distribution is versioned (``distribution.py``): reads pin a snapshot and
a released segment leaves its worker only once no pinned snapshot names it.
A forward or read that fails on a worker takes that worker's segments out of
the distribution (*offline*); reads then fail with NOT_READY until the
coordinator has them loaded again (possibly elsewhere), and the proxy can use
another replica meanwhile. A segment whose load fails is recorded with its
reason (``load_failures.py``) and retried with a backoff; with no other copy of
its rows here it is offline too, so no read answers without them.

A SchemaChange (a field added to the collection) is applied in WAL order: the
growing segments get the field (old rows read its default or null), inserts
converted with an older schema get it filled, then every worker holding a
sealed segment of the vchannel is given the schema (``update_schema``) before the
next message, so tsafe passes the change only once every copy has the field;
the proxy's reads wait for that (their guarantee timestamp is at least the
schema's update timestamp). A worker that cannot be told takes its segments
offline until they are loaded again (with the new schema).

If the WAL no longer holds the position to resume from (``PositionTruncated``),
the delegator stops and reports itself *broken*; the coordinator watches the
channel again with a fresh checkpoint.

The parts, one module each: the shared state and forwarding (``core.py``), the
consume loop (``consume.py``), distribution changes (``loading.py``) and their
planning without I/O (``planning.py``), reads (``reads.py``); ``Delegator`` here
joins them and owns the lifetime.
"""

from __future__ import annotations

import asyncio

from common.errors import PositionTruncated
from querynode.delegator.consume import ConsumeLoop
from querynode.delegator.loading import SegmentLoading
from querynode.delegator.planning import PlacedSegment
from querynode.delegator.reads import Reads

__all__ = ["Delegator", "PlacedSegment"]


class Delegator(ConsumeLoop, SegmentLoading, Reads):
    """One vchannel in one replica; see the module docstring."""

    def start(self) -> None:
        self._tasks.start(self._run(), name=f"delegator-{self.vchannel}")

    async def stop(self) -> None:
        await self._tasks.stop()

    # -- lifetime ---------------------------------------------------------------------------

    async def _run(self) -> None:
        try:
            async with asyncio.TaskGroup() as tg:
                # Consume from the checkpoint while the sealed segments load, as after a handoff: the
                # cut log takes what arrives meanwhile to them. The delegator keeps its place near the
                # WAL's head instead of asking, after a long load, for a position truncated meanwhile.
                tg.create_task(self._consume(), name=f"delegator-consume-{self.vchannel}")
                await self.sync(l0=self._initial_l0, placements=self._initial)
                self.serviceable = True
                self._log.info("delegator serviceable", sealed=len(self.dist.current.sealed),
                               l0=len(self.l0_segments), offline=sorted(self.offline))
        except* PositionTruncated as group:
            reason = "; ".join(str(e) for e in group.exceptions)
            self.failure = f"resume position truncated: {reason}"
            self.broken = True
            self._log.warning("resume position truncated, the channel must be watched again", reason=reason)
        except* Exception as group:  # task boundary: report broken so the coordinator watches the channel again
            err = group.exceptions[0]
            self.failure = f"{type(err).__name__}: {err}"
            self.broken = True
            self._log.error("delegator failed", exc_info=err)
