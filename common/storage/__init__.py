"""Object storage and the segment file format (insert, delta and stats logs, manifests).

``ObjectStore`` is a root in a local directory or an S3 prefix with atomic writes;
``SegmentWriter`` / ``SegmentReader`` write and read a segment's files as laid out
by ``layout``; a ``SegmentManifest`` names every file of a segment version. All of
it blocks: call it from worker threads. See README.md in this package.
"""

from common.storage.bloom import PkBloomFilter
from common.storage.columns import TIMESTAMP_FIELD_ID, ColumnGroup, column_groups
from common.storage.errors import CorruptObject, ObjectNotFound
from common.storage.layout import (
    ALL_PARTITIONS,
    collection_prefixes,
    delta_log_path,
    insert_log_path,
    manifest_path,
    segment_prefixes,
    stats_log_path,
)
from common.storage.manifest import DeltaLog, InsertLog, SegmentLevel, SegmentManifest
from common.storage.objectstore import FileEntry, ObjectStore
from common.storage.segment_io import SegmentReader, SegmentWriter
from common.storage.stats import SegmentStats

__all__ = [
    "ALL_PARTITIONS",
    "TIMESTAMP_FIELD_ID",
    "ColumnGroup",
    "CorruptObject",
    "DeltaLog",
    "FileEntry",
    "InsertLog",
    "ObjectNotFound",
    "ObjectStore",
    "PkBloomFilter",
    "SegmentLevel",
    "SegmentManifest",
    "SegmentReader",
    "SegmentStats",
    "SegmentWriter",
    "collection_prefixes",
    "column_groups",
    "delta_log_path",
    "insert_log_path",
    "manifest_path",
    "segment_prefixes",
    "stats_log_path",
]
