"""Hybrid timestamps: ``(physical_ms << 18) | logical`` (the coordinator's TSO issues them)."""

from __future__ import annotations

LOGICAL_BITS = 18
LOGICAL_MASK = (1 << LOGICAL_BITS) - 1


def compose(physical_ms: int, logical: int = 0) -> int:
    return (physical_ms << LOGICAL_BITS) | logical


def physical_ms(ts: int) -> int:
    return ts >> LOGICAL_BITS


#: The longest a streaming node hands out timestamps from one range reserved
#: from the TSO (``streamingnode/wal/timestamps.py``), counted from its request.
#: Whoever needs every later write above a timestamp it took from the TSO waits
#: this long after taking it (``coordinator/data/importer.py``).
TIMESTAMP_RANGE_MAX_AGE_S = 0.05
