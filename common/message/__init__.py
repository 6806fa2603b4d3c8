"""WAL messages: builders and typed accessors over the ``common.Message`` envelope.

The envelope is the WAL's storage format, so it is protobuf; headers are JSON
documents and Insert/Delete bodies are Arrow IPC streams. Rows take the
message timetick as their timestamp (``_ts``), whatever the producer sent.
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from common.arrowio import ipc_to_table, table_to_ipc
from common.storage.layout import ALL_PARTITIONS
from protos.common_pb2 import Message, MessageType

__all__ = [
    "Message",
    "MessageType",
    "new_insert",
    "new_delete",
    "delete_partition",
    "new_create_collection",
    "new_drop_collection",
    "new_drop_partition",
    "new_manual_flush",
    "new_schema_change",
    "new_time_tick",
    "header",
    "body_table",
    "size_bound",
]

# Every Message field but the properties, without its bytes: one-byte tags, lengths and varints
# (type, timetick, wal_term) at their largest (5 and 10 bytes): 3 x (1 + 10) + 4 x (1 + 5).
_FIXED_BOUND = 57
# One properties entry without its key and value: the entry's tag and length, two tags, two lengths.
_PROPERTY_BOUND = 18


def _msg(kind: MessageType, vchannel: str, head: dict[str, Any], body: bytes = b"") -> Message:
    return Message(type=kind, vchannel=vchannel, header=json.dumps(head).encode(), body=body)


def new_insert(vchannel: str, collection_id: int, partition_id: int, table: pa.Table) -> Message:
    """An Insert of ``table`` (schema fields, no ``_ts``) into ``vchannel``."""
    head = {"collection_id": collection_id, "partition_id": partition_id, "rows": table.num_rows}
    return _msg(MessageType.INSERT, vchannel, head, table_to_ipc(table))


def new_delete(vchannel: str, collection_id: int, pks: pa.Array, partition_id: int = ALL_PARTITIONS) -> Message:
    """A Delete of the primary keys ``pks`` in ``partition_id`` (``ALL_PARTITIONS``: every partition);
    it hides rows inserted before its timetick."""
    table = pa.table({"pk": pks})
    head = {"collection_id": collection_id, "partition_id": partition_id, "rows": len(pks)}
    return _msg(MessageType.DELETE, vchannel, head, table_to_ipc(table))


def delete_partition(msg: Message) -> int:
    """The partition a Delete names: ``ALL_PARTITIONS`` for every one (also a Delete written before
    deletes named partitions)."""
    return int(header(msg).get("partition_id", ALL_PARTITIONS))


def new_create_collection(vchannel: str, collection_id: int, schema_json: str) -> Message:
    return _msg(MessageType.CREATE_COLLECTION, vchannel, {"collection_id": collection_id, "schema": schema_json})


def new_drop_collection(vchannel: str, collection_id: int) -> Message:
    return _msg(MessageType.DROP_COLLECTION, vchannel, {"collection_id": collection_id})


def new_drop_partition(vchannel: str, collection_id: int, partition_id: int) -> Message:
    """Seal the partition's growing segments on ``vchannel``; later inserts into it are refused."""
    return _msg(MessageType.DROP_PARTITION, vchannel, {"collection_id": collection_id, "partition_id": partition_id})


def new_schema_change(vchannel: str, collection_id: int, schema_json: str) -> Message:
    """The collection's schema is now ``schema_json`` (a field was added): the WAL seals its growing
    segments on ``vchannel`` first; readers of the vchannel take the schema if its version is newer."""
    return _msg(MessageType.SCHEMA_CHANGE, vchannel, {"collection_id": collection_id, "schema": schema_json})


def new_manual_flush(vchannel: str, collection_id: int, flush_ts: int) -> Message:
    """Seal every growing segment of the collection on ``vchannel`` (the WAL lists them)."""
    return _msg(MessageType.MANUAL_FLUSH, vchannel, {"collection_id": collection_id, "flush_ts": flush_ts})


def size_bound(msg: Message) -> int:
    """An upper bound of ``msg``'s encoded size, for batching limits.

    ``Message.ByteSize()`` encodes the whole message to measure it (0.24 ms for a
    512 KiB Insert), where this adds up the lengths of its byte strings.
    """
    size = _FIXED_BOUND + len(msg.vchannel.encode()) + len(msg.last_confirmed) + len(msg.header) + len(msg.body)
    for key, value in msg.properties.items():
        size += _PROPERTY_BOUND + len(key.encode()) + len(value.encode())
    return size


def new_time_tick(timetick: int) -> Message:
    return Message(type=MessageType.TIME_TICK, vchannel="", timetick=timetick)


def header(msg: Message) -> dict[str, Any]:
    return json.loads(msg.header) if msg.header else {}


def body_table(msg: Message) -> pa.Table:
    return ipc_to_table(msg.body)
