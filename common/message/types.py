"""Typed WAL messages: a frozen dataclass per message type, ``encode`` to the envelope, ``decode`` back.

The envelope (``common.Message``, protobuf) and the JSON header are the WAL's
storage format; only this module and ``header.py`` know their layout. Every
other module builds a typed message and calls ``encode()``, or calls
``decode(msg)`` and matches on the class. The timetick, term and
``last_confirmed`` a WAL stamps stay on the envelope (``msg.timetick``);
a typed message is what its producer said.

Header JSON (``json.dumps`` defaults, keys in this order) and body per type:

| type | header keys | body |
|---|---|---|
| Insert | collection_id, partition_id, rows, segment_id?, bytes? | Arrow IPC of the rows |
| Delete | collection_id, partition_id, rows | Arrow IPC of one column ``pk`` |
| CreateCollection | collection_id, schema (``CollectionSchema.to_json``) | — |
| DropCollection | collection_id | — |
| DropPartition | collection_id, partition_id | — |
| CreateSegment | collection_id, partition_id, segment_id | — |
| Flush | collection_id, partition_id, segment_id | — |
| ManualFlush | collection_id, flush_ts, segment_ids | — |
| SchemaChange | collection_id, schema | — |
| TimeTick | (none; the envelope's timetick) | — |

Messages written by older versions still decode: an Insert without
``segment_id`` (before segment assignment) has ``segment_id`` None; a Delete
without ``partition_id`` names every partition (``ALL_PARTITIONS``); a
ManualFlush without ``flush_ts``/``segment_ids`` has 0 and (). Keys a decoder
does not know are ignored. An unknown message type, a header that is not a
JSON object, or a missing or mistyped key raise ``MalformedMessage``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Self

import pyarrow as pa

from common.arrowio import ipc_to_table, table_to_ipc
from common.errors import MalformedMessage
from common.message.header import HeaderReader, dump_header
from common.schema import CollectionSchema
from common.storage.layout import ALL_PARTITIONS
from protos.common_pb2 import Message, MessageType


class _Encoded:
    """What every typed message shares: its envelope type and the way to the envelope."""

    __slots__ = ()
    TYPE: ClassVar[MessageType]
    vchannel: str

    def header_fields(self) -> dict[str, Any]:
        raise NotImplementedError

    def header(self) -> bytes:
        """The header as stored (JSON). A WAL restamping a message it owns sets only this."""
        return dump_header(self.header_fields())

    def body(self) -> bytes:
        return b""

    def encode(self) -> Message:
        """The envelope to append; the WAL stamps timetick, term and ``last_confirmed``."""
        return Message(type=self.TYPE, vchannel=self.vchannel, header=self.header(), body=self.body())


@dataclass(frozen=True, slots=True, kw_only=True)
class Insert(_Encoded):
    """Rows into one partition; the WAL adds the segment it assigned and the body's size."""

    TYPE: ClassVar[MessageType] = MessageType.INSERT
    vchannel: str
    collection_id: int
    partition_id: int
    rows: int
    ipc: bytes = field(repr=False)  # Arrow IPC stream: the schema's fields, no ``_ts``
    segment_id: int | None = None  # None until the WAL assigns one (and in logs from before it did)
    nbytes: int = 0  # len(ipc) as the WAL measured it for the segment's size

    @classmethod
    def of(cls, *, vchannel: str, collection_id: int, partition_id: int, table: pa.Table) -> Insert:
        """An Insert of ``table``; rows take the message's timetick as ``_ts``."""
        return cls(
            vchannel=vchannel,
            collection_id=collection_id,
            partition_id=partition_id,
            rows=table.num_rows,
            ipc=table_to_ipc(table),
        )

    def table(self) -> pa.Table:
        return ipc_to_table(self.ipc)

    def assigned(self, segment_id: int) -> Insert:
        """This Insert placed in ``segment_id``, its size measured."""
        return replace(self, segment_id=segment_id, nbytes=len(self.ipc))

    def header_fields(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "collection_id": self.collection_id,
            "partition_id": self.partition_id,
            "rows": self.rows,
        }
        if self.segment_id is not None:
            doc.update(segment_id=self.segment_id, bytes=self.nbytes)
        return doc

    def body(self) -> bytes:
        return self.ipc

    @classmethod
    def decode(cls, msg: Message, h: HeaderReader) -> Insert:
        return cls(
            vchannel=msg.vchannel,
            collection_id=h.integer("collection_id"),
            partition_id=h.integer("partition_id"),
            rows=h.integer("rows"),
            ipc=msg.body,
            segment_id=h.optional_integer("segment_id"),
            nbytes=h.integer("bytes", 0),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Delete(_Encoded):
    """Primary keys deleted in one partition (``ALL_PARTITIONS``: every one) as of its timetick."""

    TYPE: ClassVar[MessageType] = MessageType.DELETE
    vchannel: str
    collection_id: int
    partition_id: int = ALL_PARTITIONS
    rows: int
    ipc: bytes = field(repr=False)  # Arrow IPC stream of one column ``pk``

    @classmethod
    def of(cls, *, vchannel: str, collection_id: int, pks: pa.Array, partition_id: int = ALL_PARTITIONS) -> Delete:
        ipc = table_to_ipc(pa.table({"pk": pks}))
        return cls(vchannel=vchannel, collection_id=collection_id, partition_id=partition_id, rows=len(pks), ipc=ipc)

    def pks(self) -> pa.Array:
        return ipc_to_table(self.ipc).column("pk").combine_chunks()

    def header_fields(self) -> dict[str, Any]:
        return {"collection_id": self.collection_id, "partition_id": self.partition_id, "rows": self.rows}

    def body(self) -> bytes:
        return self.ipc

    @classmethod
    def decode(cls, msg: Message, h: HeaderReader) -> Delete:
        return cls(
            vchannel=msg.vchannel,
            collection_id=h.integer("collection_id"),
            partition_id=h.integer("partition_id", ALL_PARTITIONS),  # absent before partition-scoped deletes
            rows=h.integer("rows"),
            ipc=msg.body,
        )


def _schema(h: HeaderReader) -> CollectionSchema:
    text = h.string("schema")
    try:
        return CollectionSchema.from_json(text)
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        raise h.fail(f"header key 'schema' is not a collection schema ({type(err).__name__}: {err})") from err


@dataclass(frozen=True, slots=True, kw_only=True)
class _SchemaMessage(_Encoded):
    vchannel: str
    collection_id: int
    schema: CollectionSchema

    def header_fields(self) -> dict[str, Any]:
        return {"collection_id": self.collection_id, "schema": self.schema.to_json()}

    @classmethod
    def decode(cls, msg: Message, h: HeaderReader) -> Self:
        return cls(vchannel=msg.vchannel, collection_id=h.integer("collection_id"), schema=_schema(h))


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateCollection(_SchemaMessage):
    """The collection exists on ``vchannel`` with ``schema``."""

    TYPE: ClassVar[MessageType] = MessageType.CREATE_COLLECTION


@dataclass(frozen=True, slots=True, kw_only=True)
class SchemaChange(_SchemaMessage):
    """The collection's schema is now ``schema`` (a field was added): the WAL seals the growing
    segments on the vchannel first; readers take the schema if its version is newer."""

    TYPE: ClassVar[MessageType] = MessageType.SCHEMA_CHANGE


@dataclass(frozen=True, slots=True, kw_only=True)
class DropCollection(_Encoded):
    """The collection is gone from ``vchannel`` (from every vchannel of the pchannel when empty)."""

    TYPE: ClassVar[MessageType] = MessageType.DROP_COLLECTION
    vchannel: str
    collection_id: int

    def header_fields(self) -> dict[str, Any]:
        return {"collection_id": self.collection_id}

    @classmethod
    def decode(cls, msg: Message, h: HeaderReader) -> DropCollection:
        return cls(vchannel=msg.vchannel, collection_id=h.integer("collection_id"))


@dataclass(frozen=True, slots=True, kw_only=True)
class DropPartition(_Encoded):
    """Seal the partition's growing segments on ``vchannel``; later inserts into it are refused."""

    TYPE: ClassVar[MessageType] = MessageType.DROP_PARTITION
    vchannel: str
    collection_id: int
    partition_id: int

    def header_fields(self) -> dict[str, Any]:
        return {"collection_id": self.collection_id, "partition_id": self.partition_id}

    @classmethod
    def decode(cls, msg: Message, h: HeaderReader) -> DropPartition:
        return cls(
            vchannel=msg.vchannel, collection_id=h.integer("collection_id"), partition_id=h.integer("partition_id")
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class _SegmentMessage(_Encoded):
    vchannel: str
    collection_id: int
    partition_id: int
    segment_id: int

    def header_fields(self) -> dict[str, Any]:
        return {"collection_id": self.collection_id, "partition_id": self.partition_id, "segment_id": self.segment_id}

    @classmethod
    def decode(cls, msg: Message, h: HeaderReader) -> Self:
        return cls(
            vchannel=msg.vchannel,
            collection_id=h.integer("collection_id"),
            partition_id=h.integer("partition_id"),
            segment_id=h.integer("segment_id"),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateSegment(_SegmentMessage):
    """Written by the WAL before the first Insert into ``segment_id``."""

    TYPE: ClassVar[MessageType] = MessageType.CREATE_SEGMENT


@dataclass(frozen=True, slots=True, kw_only=True)
class Flush(_SegmentMessage):
    """Written by the WAL after the last Insert into ``segment_id``: the segment is sealed."""

    TYPE: ClassVar[MessageType] = MessageType.FLUSH


@dataclass(frozen=True, slots=True, kw_only=True)
class ManualFlush(_Encoded):
    """Seal every growing segment of the collection on ``vchannel``; the WAL lists what it sealed."""

    TYPE: ClassVar[MessageType] = MessageType.MANUAL_FLUSH
    vchannel: str
    collection_id: int
    flush_ts: int = 0
    segment_ids: tuple[int, ...] = ()  # filled in by the WAL, ascending

    def sealed(self, segment_ids: Iterable[int]) -> ManualFlush:
        """This ManualFlush listing ``segment_ids`` as the ones it sealed."""
        return replace(self, segment_ids=tuple(sorted(segment_ids)))

    def header_fields(self) -> dict[str, Any]:
        return {"collection_id": self.collection_id, "flush_ts": self.flush_ts, "segment_ids": list(self.segment_ids)}

    @classmethod
    def decode(cls, msg: Message, h: HeaderReader) -> ManualFlush:
        return cls(
            vchannel=msg.vchannel,
            collection_id=h.integer("collection_id"),
            flush_ts=h.integer("flush_ts", 0),
            segment_ids=h.integers("segment_ids"),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class TimeTick(_Encoded):
    """Everything of the pchannel up to ``timetick`` has been written (no vchannel, no header)."""

    TYPE: ClassVar[MessageType] = MessageType.TIME_TICK
    vchannel: str = ""
    timetick: int

    def header(self) -> bytes:
        return b""

    def encode(self) -> Message:
        return Message(type=self.TYPE, vchannel="", timetick=self.timetick)


#: Every message a Strata WAL holds.
TypedMessage = (
    Insert
    | Delete
    | CreateCollection
    | DropCollection
    | DropPartition
    | CreateSegment
    | Flush
    | ManualFlush
    | SchemaChange
    | TimeTick
)

_DECODERS: dict[int, Callable[[Message, HeaderReader], TypedMessage]] = {
    cls.TYPE: cls.decode
    for cls in (
        Insert,
        Delete,
        CreateCollection,
        DropCollection,
        DropPartition,
        CreateSegment,
        Flush,
        ManualFlush,
        SchemaChange,
    )
}


_NAMES = {value: MessageType.Name(value) for value in _DECODERS}
_TIME_TICK = MessageType.TIME_TICK


def decode(msg: Message) -> TypedMessage:
    """The typed form of ``msg``.

    Raises:
        MalformedMessage: ``msg`` has a type Strata does not write, or its header is not a JSON
            object with the keys (and value types) its type requires.
    """
    kind = msg.type
    if kind == _TIME_TICK:
        return TimeTick(timetick=msg.timetick)
    decoder = _DECODERS.get(kind)
    if decoder is None:
        name = MessageType.Name(kind) if kind in MessageType.values() else "not in common.proto"
        raise MalformedMessage(
            f"message on vchannel {msg.vchannel!r} has type {kind} ({name}), which Strata does not read"
        )
    return decoder(msg, HeaderReader(msg.header, _NAMES[kind], msg.vchannel))
