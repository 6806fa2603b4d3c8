"""A collection's time to live (``collection.ttl.seconds``): which rows have expired.

A row expires ``ttl`` seconds after it was written (its ``_ts``). Reads leave
expired rows out, as Milvus does (its proxy sends the read's timestamp less the
TTL down with the read); compaction drops them from the segments for good.
"""

from __future__ import annotations

from collections.abc import Mapping

from common.errors import InvalidArgument
from common.tsoutil import compose, physical_ms

TTL_PROPERTY = "collection.ttl.seconds"


def check_ttl(properties: Mapping[str, str]) -> None:
    """Refuse a TTL that is not a whole number of seconds >= 0 (0: rows never expire)."""
    ttl = properties.get(TTL_PROPERTY)
    if ttl is None:
        return
    try:
        ok = int(ttl) >= 0
    except ValueError:
        ok = False
    if not ok:
        raise InvalidArgument(f"{TTL_PROPERTY} must be a non-negative integer, got {ttl!r}")


def expire_before(properties: Mapping[str, str], now_ts: int) -> int:
    """The smallest ``_ts`` a row may have and not be expired at ``now_ts`` (0: no TTL)."""
    raw = properties.get(TTL_PROPERTY, "")
    try:
        ttl = int(raw) if raw else 0
    except ValueError:  # refused when set (check_ttl); an old catalog's value means no TTL
        return 0
    if ttl <= 0:
        return 0
    return compose(max(0, physical_ms(now_ts) - ttl * 1000), 0)
