"""Where each segment file lives, relative to the object-store root.

The only module that spells paths; every writer and reader builds them here::

    insert_log/<collection>/<partition>/<segment>/<group>/<log_id>.parquet
    delta_log/<collection>/<partition>/<segment>/<log_id>.parquet
    stats_log/<collection>/<partition>/<segment>/<log_id>
    manifests/<collection>/<partition>/<segment>/<version:012d>.json

Ids are decimal integers. The partition id may be ``-1`` (``ALL_PARTITIONS``): an L0
delete segment that covers every partition of the collection. Manifest versions are
zero-padded to 12 digits so their names sort in version order.
"""

from __future__ import annotations

from common.errors import InvalidArgument

INSERT_LOG = "insert_log"
DELTA_LOG = "delta_log"
STATS_LOG = "stats_log"
MANIFESTS = "manifests"

#: Partition id of an L0 delete segment that applies to all partitions.
ALL_PARTITIONS = -1

_MAX_VERSION = 10**12 - 1
_MANIFEST_SUFFIX = ".json"


def _check_id(what: str, value: int, *, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgument(f"{what} must be an integer, got {value!r}")
    if value < minimum:
        raise InvalidArgument(f"{what} must be at least {minimum}, got {value}")
    return value


def _segment_dir(collection_id: int, partition_id: int, segment_id: int) -> str:
    coll = _check_id("collection id", collection_id)
    part = _check_id("partition id", partition_id, minimum=ALL_PARTITIONS)
    seg = _check_id("segment id", segment_id)
    return f"{coll}/{part}/{seg}"


def insert_log_path(collection_id: int, partition_id: int, segment_id: int, group_id: int, log_id: int) -> str:
    """The Parquet file of one column group of one insert log."""
    seg = _segment_dir(collection_id, partition_id, segment_id)
    return f"{INSERT_LOG}/{seg}/{_check_id('group id', group_id)}/{_check_id('log id', log_id)}.parquet"


def delta_log_path(collection_id: int, partition_id: int, segment_id: int, log_id: int) -> str:
    """The Parquet file of one delta (delete) log."""
    seg = _segment_dir(collection_id, partition_id, segment_id)
    return f"{DELTA_LOG}/{seg}/{_check_id('log id', log_id)}.parquet"


def stats_log_path(collection_id: int, partition_id: int, segment_id: int, log_id: int) -> str:
    """The stats file (PK bloom filter and min/max) of the insert log ``log_id``."""
    seg = _segment_dir(collection_id, partition_id, segment_id)
    return f"{STATS_LOG}/{seg}/{_check_id('log id', log_id)}"


def manifest_path(collection_id: int, partition_id: int, segment_id: int, version: int) -> str:
    """The JSON manifest of one version of a segment."""
    if _check_id("manifest version", version) > _MAX_VERSION:
        raise InvalidArgument(f"manifest version must have at most 12 digits, got {version}")
    return f"{manifest_prefix(collection_id, partition_id, segment_id)}/{version:012d}{_MANIFEST_SUFFIX}"


def manifest_prefix(collection_id: int, partition_id: int, segment_id: int) -> str:
    """The directory holding every manifest version of a segment."""
    return f"{MANIFESTS}/{_segment_dir(collection_id, partition_id, segment_id)}"


def manifest_version(path: str) -> int | None:
    """The version encoded in a manifest path, or None if ``path`` is not a manifest name."""
    name = path.rsplit("/", 1)[-1]
    digits = name.removesuffix(_MANIFEST_SUFFIX)
    if digits == name or len(digits) != 12 or not (digits.isascii() and digits.isdigit()):
        return None
    return int(digits)


def segment_prefixes(collection_id: int, partition_id: int, segment_id: int) -> list[str]:
    """The directories holding every file of one segment (insert, delta, stats, manifests)."""
    seg = _segment_dir(collection_id, partition_id, segment_id)
    return [f"{kind}/{seg}" for kind in (INSERT_LOG, DELTA_LOG, STATS_LOG, MANIFESTS)]


def collection_prefixes(collection_id: int) -> list[str]:
    """The directories holding every segment file of one collection."""
    coll = _check_id("collection id", collection_id)
    return [f"{kind}/{coll}" for kind in (INSERT_LOG, DELTA_LOG, STATS_LOG, MANIFESTS)]


def index_prefix(collection_id: int, segment_id: int) -> str:
    """Every index file of a segment: ``index_files/<collection>/<segment>`` (``segcore/index/store.py``)."""
    return f"index_files/{_check_id('collection id', collection_id)}/{_check_id('segment id', segment_id)}"


def text_index_dir(collection_id: int, segment_id: int, field_id: int) -> str:
    """The text-match index of one field of a segment: ``index_files/<collection>/<segment>/text-<field>``
    (``segcore/index/text/store.py``; not a catalog index, so not counted as one)."""
    return f"{index_prefix(collection_id, segment_id)}/text-{_check_id('field id', field_id)}"


#: The file whose presence means an index of a segment is complete (written last).
INDEX_META_FILE = "meta.json"


def collection_index_prefix(collection_id: int) -> str:
    """Every index file of a collection: ``index_files/<collection>``."""
    return f"index_files/{_check_id('collection id', collection_id)}"
