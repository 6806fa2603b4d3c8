"""Typed WAL messages: every type round-trips, messages written before the types still decode, and a
message Strata cannot read is refused with an error that names what is wrong."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from common.errors import ErrorCode, InvalidArgument, MalformedMessage
from common.message import (
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
from common.schema import CollectionSchema, DataType, FieldSchema
from common.storage.layout import ALL_PARTITIONS
from protos.common_pb2 import Message, MessageType

SCHEMA = CollectionSchema(
    name="c",
    fields=(
        FieldSchema(field_id=100, name="id", dtype=DataType.INT64, is_primary=True),
        FieldSchema(field_id=101, name="v", dtype=DataType.FLOAT_VECTOR, dim=2),
    ),
)
TABLE = pa.table({"id": pa.array([7, 8], pa.int64())})

EVERY_TYPE: list[TypedMessage] = [
    Insert.of(vchannel="v0", collection_id=1, partition_id=2, table=TABLE),
    Insert.of(vchannel="v0", collection_id=1, partition_id=2, table=TABLE).assigned(5),
    Delete.of(vchannel="v0", collection_id=1, pks=pa.array([7], pa.int64()), partition_id=2),
    Delete.of(vchannel="v0", collection_id=1, pks=pa.array(["a", "b"], pa.string())),
    CreateCollection(vchannel="v0", collection_id=1, schema=SCHEMA),
    DropCollection(vchannel="", collection_id=1),
    DropPartition(vchannel="v0", collection_id=1, partition_id=2),
    CreateSegment(vchannel="v0", collection_id=1, partition_id=2, segment_id=5),
    Flush(vchannel="v0", collection_id=1, partition_id=2, segment_id=5),
    ManualFlush(vchannel="v0", collection_id=1, flush_ts=9),
    ManualFlush(vchannel="v0", collection_id=1, flush_ts=9).sealed([6, 5]),
    SchemaChange(vchannel="v0", collection_id=1, schema=SCHEMA),
    TimeTick(timetick=123),
]


@pytest.mark.parametrize("typed", EVERY_TYPE, ids=lambda m: type(m).__name__)
def test_every_type_round_trips_through_the_stored_bytes(typed: TypedMessage) -> None:
    msg = typed.encode()
    assert msg.type == typed.TYPE
    assert decode(Message.FromString(msg.SerializeToString())) == typed


def test_bodies_carry_the_rows_and_keys() -> None:
    ins = decode(Insert.of(vchannel="v0", collection_id=1, partition_id=2, table=TABLE).encode())
    assert isinstance(ins, Insert) and ins.rows == 2 and ins.table().equals(TABLE)
    assert ins.assigned(5).nbytes == len(ins.ipc)
    dele = decode(Delete.of(vchannel="v0", collection_id=1, pks=pa.array([3, 4], pa.int64())).encode())
    assert isinstance(dele, Delete) and dele.pks().to_pylist() == [3, 4] and dele.partition_id == ALL_PARTITIONS


def test_headers_are_the_json_the_wal_always_held() -> None:
    """The same keys in the same order as before the types, so that a node of the previous version
    reads what this one writes (a ManualFlush only gains an empty ``segment_ids`` before the WAL fills it)."""
    ins = Insert(vchannel="v0", collection_id=1, partition_id=2, rows=1, ipc=b"x" * 288)
    assert ins.encode().header == b'{"collection_id": 1, "partition_id": 2, "rows": 1}'
    assert (
        ins.assigned(5).header() == b'{"collection_id": 1, "partition_id": 2, "rows": 1, "segment_id": 5, "bytes": 288}'
    )
    dele = Delete(vchannel="v0", collection_id=1, partition_id=2, rows=1, ipc=b"")
    assert dele.header() == b'{"collection_id": 1, "partition_id": 2, "rows": 1}'
    seg = CreateSegment(vchannel="v0", collection_id=1, partition_id=2, segment_id=5)
    assert seg.header() == b'{"collection_id": 1, "partition_id": 2, "segment_id": 5}'
    sealed = ManualFlush(vchannel="v0", collection_id=1, flush_ts=9).sealed([6, 5])
    assert sealed.header() == b'{"collection_id": 1, "flush_ts": 9, "segment_ids": [5, 6]}'
    created = CreateCollection(vchannel="v0", collection_id=1, schema=SCHEMA)
    assert json.loads(created.header()) == {"collection_id": 1, "schema": SCHEMA.to_json()}
    assert TimeTick(timetick=5).encode().SerializeToString() == bytes.fromhex("08011805")


# A stamped Insert as the WAL stored it before the typed messages (type, vchannel, timetick 100,
# header with its segment, an Arrow IPC body of one int64 column ``id`` = [7]).
OLD_INSERT = bytes.fromhex(
    "080212027630186432517b22636f6c6c656374696f6e5f6964223a20312c2022706172746974696f6e5f6964223a20322c20"
    "22726f7773223a20312c20227365676d656e745f6964223a20352c20226279746573223a203238387d3aa002ffffffff7800"
    "00001000000000000a000c000600050008000a000000000104000c0000000800080000000400080000000400000001000000"
    "14000000100014000800060007000c00000010001000000000000102100000001c0000000400000000000000020000006964"
    "000008000c0008000700080000000000000140000000ffffffff8800000014000000000000000c0016000600050008000c00"
    "0c0000000003040018000000080000000000000000000a0018000c00040008000a0000003c00000010000000010000000000"
    "0000000000000200000000000000000000000000000000000000000000000000000008000000000000000000000001000000"
    "010000000000000000000000000000000700000000000000ffffffff00000000"
)


def _old(kind: MessageType, header: bytes, vchannel: str = "v0") -> Message:
    return Message(type=kind, vchannel=vchannel, header=header)


def test_messages_of_an_older_wal_decode() -> None:
    msg = Message.FromString(OLD_INSERT)
    ins = decode(msg)
    assert ins == Insert(vchannel="v0", collection_id=1, partition_id=2, rows=1, ipc=msg.body, segment_id=5, nbytes=288)
    assert isinstance(ins, Insert) and ins.table().column("id").to_pylist() == [7] and msg.timetick == 100
    # An Insert from before segment assignment: no segment, not counted by a replay.
    unassigned = decode(_old(MessageType.INSERT, b'{"collection_id": 1, "partition_id": 2, "rows": 3}'))
    assert isinstance(unassigned, Insert) and unassigned.segment_id is None and unassigned.nbytes == 0
    # A Delete from before partition-scoped deletes reaches every partition.
    dele = decode(_old(MessageType.DELETE, b'{"collection_id": 1, "rows": 1}'))
    assert isinstance(dele, Delete) and dele.partition_id == ALL_PARTITIONS
    # A ManualFlush as the coordinator sent it (the WAL had not listed its segments).
    asked = decode(_old(MessageType.MANUAL_FLUSH, b'{"collection_id": 1, "flush_ts": 9}'))
    assert asked == ManualFlush(vchannel="v0", collection_id=1, flush_ts=9, segment_ids=())
    # A schema written before ARRAY fields, nullability and versions.
    old_schema = {"name": "c", "description": "", "enable_dynamic_field": False, "fields": [
        {"field_id": 100, "name": "id", "dtype": 5, "is_primary": True, "auto_id": False, "dim": 0,
         "max_length": 0, "is_partition_key": False, "description": "", "is_dynamic": False},
    ]}  # fmt: skip
    head = json.dumps({"collection_id": 1, "schema": json.dumps(old_schema)}).encode()
    created = decode(_old(MessageType.CREATE_COLLECTION, head))
    assert isinstance(created, CreateCollection) and created.schema.version == 0
    assert [f.name for f in created.schema.fields] == ["id"]
    # Keys a newer writer adds are ignored.
    later = decode(_old(MessageType.DROP_COLLECTION, b'{"collection_id": 1, "reason": "user"}'))
    assert later == DropCollection(vchannel="v0", collection_id=1)


@pytest.mark.parametrize(
    ("msg", "says"),
    [
        (_old(MessageType.IMPORT, b"{}"), "type 11 (IMPORT), which Strata does not read"),
        (_old(MessageType.MESSAGE_TYPE_UNKNOWN, b""), "type 0 (MESSAGE_TYPE_UNKNOWN)"),
        (Message(type=99, vchannel="v0"), "type 99 (not in common.proto)"),  # type: ignore[arg-type]
        (_old(MessageType.INSERT, b"not json"), "INSERT message on vchannel 'v0': header is not JSON"),
        (_old(MessageType.INSERT, b"[1, 2]"), "header is a JSON list, not an object"),
        (_old(MessageType.INSERT, b'{"collection_id": 1, "partition_id": 2}'), "header key 'rows' is missing"),
        (_old(MessageType.FLUSH, b""), "FLUSH message on vchannel 'v0': header key 'collection_id' is missing"),
        (
            _old(MessageType.DELETE, b'{"collection_id": "1", "rows": 1}'),
            "header key 'collection_id' is '1', not an integer",
        ),
        (
            _old(MessageType.CREATE_SEGMENT, b'{"collection_id": 1, "partition_id": 2, "segment_id": true}'),
            "not an integer",
        ),
        (_old(MessageType.MANUAL_FLUSH, b'{"collection_id": 1, "segment_ids": [1, "2"]}'), "not a list of integers"),
        (
            _old(MessageType.SCHEMA_CHANGE, b'{"collection_id": 1, "schema": 3}'),
            "header key 'schema' is 3, not a string",
        ),
        (
            _old(MessageType.SCHEMA_CHANGE, b'{"collection_id": 1, "schema": "{}"}'),
            "'schema' is not a collection schema",
        ),
        (
            _old(MessageType.CREATE_COLLECTION, b'{"collection_id": 1, "schema": "{"}'),
            "'schema' is not a collection schema",
        ),
        (_old(MessageType.INSERT, b"\xff\xfe"), "header is not JSON"),
    ],
)
def test_a_message_strata_cannot_read_is_refused_with_what_is_wrong(msg: Message, says: str) -> None:
    with pytest.raises(MalformedMessage) as caught:
        decode(msg)
    assert says in caught.value.message
    # An argument error at every edge: a producer that sends one hears INVALID_ARGUMENT.
    assert isinstance(caught.value, InvalidArgument) and caught.value.code is ErrorCode.INVALID_ARGUMENT
