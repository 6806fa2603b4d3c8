"""The streaming node's Prometheus metrics (Milvus 2.6 names them ``milvus_streaming_node_*``).

Per appended batch (the WAL's group commit): its latency, messages and bytes.
Per TimeTick published because a reader asked for one (``WAL.request_tick``): a count.
Per flush: the latency of each sync. At scrape time: each pchannel's term and
availability, each vchannel's checkpoint lag and its segments by state.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import Counter, Histogram

from common.statemetrics import GaugeSample
from common.tsoutil import physical_ms

WAL_APPEND_SECONDS = Histogram(
    "milvus_streaming_node_wal_append_batch_duration_seconds",
    "Latency of one group-commit append to the WAL backend, TimeTick included",
    ["channel_name"], buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)
WAL_BATCH_MESSAGES = Histogram(
    "milvus_streaming_node_wal_group_commit_messages", "Messages of one group-commit batch (its TimeTick excluded)",
    ["channel_name"], buckets=tuple(float(2**i) for i in range(13)),
)
WAL_APPEND_BYTES = Counter(
    "milvus_streaming_node_wal_append_message_bytes", "Bytes appended to the WAL backend", ["channel_name"]
)
WAL_APPEND_MESSAGES = Counter(
    "milvus_streaming_node_wal_append_message", "Messages appended to the WAL (TimeTicks included)", ["channel_name"]
)
WAL_REQUESTED_TICKS = Counter(
    "milvus_streaming_node_wal_requested_timetick", "TimeTicks published because a reader asked (Strong reads)",
    ["channel_name"],
)
FLUSH_SYNC_SECONDS = Histogram(
    "milvus_streaming_node_flush_sync_duration_seconds", "Latency of one flusher sync to object storage, by kind",
    ["channel_name", "kind"], buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
)


def observe_append(pchannel: str, seconds: float, messages: int, payloads: list[bytes]) -> None:
    """One group-commit batch appended: ``messages`` (its TimeTick excluded) in ``payloads`` (included)."""
    WAL_APPEND_SECONDS.labels(pchannel).observe(seconds)
    WAL_BATCH_MESSAGES.labels(pchannel).observe(messages)
    WAL_APPEND_BYTES.labels(pchannel).inc(sum(map(len, payloads)))
    WAL_APPEND_MESSAGES.labels(pchannel).inc(len(payloads))


def observe_requested_tick(pchannel: str) -> None:
    """One on-demand TimeTick published (many requests may share it)."""
    WAL_REQUESTED_TICKS.labels(pchannel).inc()


def wal_samples(pchannel: str, term: int, available: bool) -> Iterator[GaugeSample]:
    labels = {"channel_name": pchannel}
    yield GaugeSample(name="milvus_streaming_node_wal_term", help="Term of the WAL of each pchannel on this node",
                      labels=labels, value=term)
    yield GaugeSample(name="milvus_streaming_node_wal_available",
                      help="1 when the WAL of the pchannel takes appends, 0 when it is fenced or closing",
                      labels=labels, value=1 if available else 0)


def checkpoint_samples(pchannel: str, vchannel: str, wal_timetick: int | None, checkpoint_timetick: int | None,
                       segments: dict[str, int]) -> Iterator[GaugeSample]:
    labels = {"channel_name": pchannel, "vchannel": vchannel}
    if wal_timetick is not None and checkpoint_timetick is not None:
        lag = max(0, physical_ms(wal_timetick) - physical_ms(checkpoint_timetick)) / 1000
        yield GaugeSample(name="milvus_streaming_node_flush_checkpoint_lag_seconds",
                          help="How far a vchannel's checkpoint trails the WAL's last TimeTick (s)",
                          labels=labels, value=lag)
    for state, count in segments.items():
        yield GaugeSample(name="milvus_streaming_node_segment_num", help="Segments buffered by the flusher, by state",
                          labels={**labels, "state": state}, value=count)
