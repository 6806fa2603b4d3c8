"""The database properties Milvus 2.6 acts on (``pkg/common/common.go``), and how to read them.

- ``database.max.collections``: how many collections the database may hold (else 65536, Milvus'
  ``quotaAndLimits.limits.maxCollectionNumPerDB``); a create over it is code 102,
  ``exceeded the limit number of collections[dbName=<db>][limit=<n>]``.
- ``database.force.deny.writing`` / ``database.force.deny.reading``: "true" refuses inserts,
  upserts, deletes and imports / searches and queries of the database's collections with
  Milvus' quota error, code 9, ``quota exceeded[reason=access has been disabled by the administrator]``.
- ``database.replica.number``: the replicas a load of one of its collections gets when the
  request leaves the number to the server.

Other keys are kept and shown, as Milvus keeps any key.
"""

from __future__ import annotations

from collections.abc import Mapping

from common.errors import CollectionNumLimitExceeded, ForceDenied, InvalidArgument

MAX_COLLECTIONS = "database.max.collections"
FORCE_DENY_WRITING = "database.force.deny.writing"
FORCE_DENY_READING = "database.force.deny.reading"
REPLICA_NUMBER = "database.replica.number"
RESOURCE_GROUPS = "database.resource_groups"
DEFAULT_MAX_COLLECTIONS_PER_DB = 65536
FORCE_DENY_REASON = "access has been disabled by the administrator"


def _int_property(props: Mapping[str, str], key: str) -> int | None:
    raw = props.get(key, "")
    if raw == "":
        return None
    try:
        return int(raw)
    except ValueError:
        raise InvalidArgument(f"parse value of property fail, key:{key}, value:{raw}") from None


def check_collection_count(db_name: str, props: Mapping[str, str], count: int) -> None:
    """Refuse one more collection in a database that holds ``count`` (code 102)."""
    limit = _int_property(props, MAX_COLLECTIONS)
    limit = DEFAULT_MAX_COLLECTIONS_PER_DB if limit is None else limit
    if count >= limit:
        raise CollectionNumLimitExceeded(f"exceeded the limit number of collections[dbName={db_name}][limit={limit}]")


def _denied(props: Mapping[str, str], key: str) -> bool:
    return props.get(key, "").strip().lower() == "true"


def check_writing(props: Mapping[str, str]) -> None:
    if _denied(props, FORCE_DENY_WRITING):
        raise ForceDenied(f"quota exceeded[reason={FORCE_DENY_REASON}]")


def check_reading(props: Mapping[str, str]) -> None:
    if _denied(props, FORCE_DENY_READING):
        raise ForceDenied(f"quota exceeded[reason={FORCE_DENY_REASON}]")


def replica_number(props: Mapping[str, str]) -> int | None:
    """The database's replica number for loads that leave it to the server, if it sets one."""
    return _int_property(props, REPLICA_NUMBER)
