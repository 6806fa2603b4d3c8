"""JSON headers of the messages the shard manager decides on and replays.

The caller builds the self-generated messages (CreateSegment, Flush) and the
segment fields of an Insert with these helpers, so that what it appends is
exactly what ``ShardManager.observe`` reads back after a restart.

| message | header keys read by ``observe`` |
|---|---|
| CreateCollection | ``collection_id`` (the message's vchannel is added to the collection) |
| DropCollection | ``collection_id`` (the message's vchannel is dropped; all of them if empty) |
| DropPartition | ``collection_id``, ``partition_id`` |
| CreateSegment | ``collection_id``, ``partition_id``, ``segment_id`` |
| Insert | ``segment_id``, ``rows``, ``bytes`` (no ``segment_id``: not counted) |
| Flush | ``segment_id`` (``collection_id``, ``partition_id`` for readers) |
| ManualFlush | ``collection_id``, ``flush_ts`` (``segment_ids``: what it sealed, for readers) |
| SchemaChange | ``collection_id`` (``schema``: the new schema's JSON, for readers) |
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from streamingnode.shard.instructions import SealInstruction

COLLECTION_ID = "collection_id"
PARTITION_ID = "partition_id"
SEGMENT_ID = "segment_id"
SEGMENT_IDS = "segment_ids"
ROWS = "rows"
BYTES = "bytes"
FLUSH_TS = "flush_ts"


def create_segment_header(*, segment_id: int, collection_id: int, partition_id: int) -> dict[str, Any]:
    """Header of the CreateSegment appended before the first Insert into ``segment_id``."""
    return {COLLECTION_ID: collection_id, PARTITION_ID: partition_id, SEGMENT_ID: segment_id}


def flush_header(seal: SealInstruction) -> dict[str, Any]:
    """Header of the Flush that carries out ``seal`` (appended on ``seal.vchannel``)."""
    return {COLLECTION_ID: seal.collection_id, PARTITION_ID: seal.partition_id, SEGMENT_ID: seal.segment_id}


def manual_flush_header(*, collection_id: int, flush_ts: int, segment_ids: Iterable[int]) -> dict[str, Any]:
    """Header of a ManualFlush, listing the segments its seal instructions named."""
    return {COLLECTION_ID: collection_id, FLUSH_TS: flush_ts, SEGMENT_IDS: sorted(segment_ids)}


def assign_insert(header: Mapping[str, Any], *, segment_id: int, nbytes: int) -> dict[str, Any]:
    """An Insert header (``{collection_id, partition_id, rows}``) plus its segment and byte size."""
    return {**header, SEGMENT_ID: segment_id, BYTES: nbytes}


def int_field(header: Mapping[str, Any], key: str, default: int | None = None) -> int:
    """``header[key]`` as an int; ``default`` when missing (KeyError when no default)."""
    value = header.get(key, default)
    if value is None:
        raise KeyError(key)
    return int(value)
