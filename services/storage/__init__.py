"""Object storage and the segment file format (insert, delta and stats logs, manifests).

``ObjectStore`` is a root in a local directory or an S3 prefix with atomic writes;
``SegmentWriter`` / ``SegmentReader`` write and read a segment's files as laid out
by ``layout``; a ``SegmentManifest`` names every file of a segment version. All of
it blocks: call it from worker threads. See README.md in this package.
"""

from services.storage.bloom import PkBloomFilter
from services.storage.columns import TIMESTAMP_FIELD_ID, ColumnGroup, column_groups
from services.storage.errors import CorruptObject, ObjectNotFound
from services.storage.layout import (
    ALL_PARTITIONS,
    collection_prefixes,
    delta_log_path,
    insert_log_path,
    manifest_path,
    segment_prefixes,
    stats_log_path,
)
from services.storage.manifest import DeltaLog, InsertLog, SegmentLevel, SegmentManifest
from services.storage.objectstore import FileEntry, ObjectStore
from services.storage.segment_io import SegmentReader, SegmentWriter
from services.storage.stats import SegmentStats

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
