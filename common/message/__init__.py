"""WAL messages: typed messages over the ``common.Message`` envelope.

The envelope is the WAL's storage format, so it is protobuf; headers are JSON
documents and Insert/Delete bodies are Arrow IPC streams. Producers build a
typed message (``types.py``) and ``encode()`` it; consumers ``decode`` the
envelope and match on the class. Rows take the message timetick as their
timestamp (``_ts``), whatever the producer sent. See README.md.
"""

from __future__ import annotations

from common.message.envelope import size_bound
from common.message.outgoing import Outgoing
from common.message.types import (
    CreateCollection,
    CreateSegment,
    Delete,
    DropCollection,
    DropPartition,
    Flush,
    Insert,
    ManualFlush,
    SchemaChange,
    TimeTick,
    TypedMessage,
    decode,
)
from protos.common_pb2 import Message, MessageType

__all__ = [
    "Message",
    "Outgoing",
    "MessageType",
    "CreateCollection",
    "CreateSegment",
    "Delete",
    "DropCollection",
    "DropPartition",
    "Flush",
    "Insert",
    "ManualFlush",
    "SchemaChange",
    "TimeTick",
    "TypedMessage",
    "decode",
    "size_bound",
]
