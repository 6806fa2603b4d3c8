"""The coordinator's Prometheus metrics.

Counted as they happen: pchannel moves the streaming balancer makes. Read at
scrape time: segments by state and level (Milvus's ``milvus_datacoord_segment_num``),
offline jobs (compaction, import) by kind and state, and whether this
coordinator leads. Etcd sessions report themselves (``common/etcd/session.py``).
"""

from __future__ import annotations

from collections import Counter as Tally
from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client import Counter

from common.statemetrics import GaugeSample

if TYPE_CHECKING:
    from coordinator.data.datacoord import DataCoordinator

PCHANNEL_MOVES = Counter(
    "strata_coordinator_pchannel_moves", "pchannels the streaming balancer assigned to a (new) streaming node"
)


def coordinator_samples(data: DataCoordinator | None, *, leading: bool) -> Iterator[GaugeSample]:
    yield GaugeSample(name="strata_coordinator_leader", help="1 on the active coordinator, 0 on a standby",
                      labels={}, value=1 if leading else 0)
    if data is None:
        return
    segments = Tally((s.state.name, s.level.name) for s in data.segments())
    for (state, level), count in sorted(segments.items()):
        yield GaugeSample(name="milvus_datacoord_segment_num", help="Segments by state and level",
                          labels={"segment_state": state, "segment_level": level}, value=count)
    jobs = Tally((j.kind.value, j.state.value) for j in data.jobs())
    for (kind, state), count in sorted(jobs.items()):
        yield GaugeSample(name="strata_coordinator_jobs", help="Offline jobs (compaction, import) by kind and state",
                          labels={"kind": kind, "state": state}, value=count)
