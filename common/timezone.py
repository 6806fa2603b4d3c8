"""A collection's time zone property (``timezone``), kept as Milvus 2.6 keeps it.

Milvus gives every new collection a ``timezone`` property: the one the request sets, else its
database's, else ``UTC`` (rootcoord ``createCollectionTask.Prepare``), so ``describe_collection``
shows ``{"timezone": "UTC"}`` for a collection created without properties. Altering it must name a
zone the IANA database knows, on a collection and on a database alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from common.errors import InvalidArgument

TIMEZONE_PROPERTY = "timezone"
DEFAULT_TIMEZONE = "UTC"


def with_default_timezone(properties: Mapping[str, str], database: Mapping[str, str] | None = None) -> dict[str, str]:
    """``properties`` with ``timezone`` set, unless it is, to the ``database`` properties' one, else ``UTC``."""
    if TIMEZONE_PROPERTY in properties:
        return {**properties}
    return {**properties, TIMEZONE_PROPERTY: (database or {}).get(TIMEZONE_PROPERTY, DEFAULT_TIMEZONE)}


def check_timezone(properties: Mapping[str, str]) -> None:
    """Refuse a ``timezone`` that names no IANA zone (Milvus' text and code 1100)."""
    tz = properties.get(TIMEZONE_PROPERTY)
    if tz is None:
        return
    try:
        ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError):
        raise InvalidArgument(f"unknown or invalid IANA Time Zone ID: {tz}: invalid parameter") from None
