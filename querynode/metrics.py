"""The query node's Prometheus metrics, under Milvus's names (``milvus_querynode_*``).

Per search or query a delegator serves: its count by status and its latency
(ms). At scrape time: how far each delegator's tsafe trails the wall clock
(its WAL's TimeTicks stop coming: a lag that grows), and the sealed segments
the worker holds per collection.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator

from prometheus_client import Counter, Histogram

from common.statemetrics import GaugeSample
from common.tsoutil import physical_ms

SQ_COUNT = Counter(
    "milvus_querynode_sq_req_count", "Searches and queries served by delegators, by type and status",
    ["node_id", "query_type", "status"],
)
SQ_LATENCY = Histogram(
    "milvus_querynode_sq_req_latency", "Latency of the searches and queries delegators serve (ms)",
    ["node_id", "query_type"], buckets=tuple(float(2**i) for i in range(18)),
)


def observe(node_id: int, query_type: str, ok: bool, started: float) -> None:
    """One search or query finished; ``started`` is its ``time.perf_counter()`` at the start."""
    SQ_COUNT.labels(str(node_id), query_type, "success" if ok else "fail").inc()
    SQ_LATENCY.labels(str(node_id), query_type).observe((time.perf_counter() - started) * 1000)


def tsafe_samples(node_id: int, tsafes: Iterable[tuple[str, int]], segments: dict[int, int]) -> Iterator[GaugeSample]:
    """``tsafes``: (vchannel, tsafe) of each delegator; ``segments``: sealed segments per collection id."""
    now_ms = time.time() * 1000
    for vchannel, ts in tsafes:
        lag = max(0.0, now_ms - physical_ms(ts)) / 1000 if ts else 0.0
        yield GaugeSample(name="milvus_querynode_tsafe_lag_seconds",
                          help="How far each delegator's tsafe trails the wall clock (s)",
                          labels={"node_id": str(node_id), "vchannel": vchannel}, value=lag)
    for collection_id, count in sorted(segments.items()):
        yield GaugeSample(name="milvus_querynode_segment_num", help="Sealed segments loaded, per collection",
                          labels={"node_id": str(node_id), "collection_id": str(collection_id),
                                  "segment_state": "Sealed"}, value=count)
