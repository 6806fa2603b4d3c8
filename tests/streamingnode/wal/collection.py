"""The CreateCollection the WAL tests append: a collection's schema matters to them only as a name."""

from __future__ import annotations

from dataclasses import replace

from common.message import CreateCollection, SchemaChange
from common.schema import CollectionSchema, DataType, FieldSchema
from protos.common_pb2 import Message

SCHEMA = CollectionSchema(
    name="c",
    fields=(
        FieldSchema(field_id=100, name="id", dtype=DataType.INT64, is_primary=True),
        FieldSchema(field_id=101, name="v", dtype=DataType.FLOAT_VECTOR, dim=2),
    ),
)


def create_collection(vchannel: str, collection_id: int) -> Message:
    return CreateCollection(vchannel=vchannel, collection_id=collection_id, schema=SCHEMA).encode()


def schema_change(vchannel: str, collection_id: int, version: int) -> Message:
    """The collection's schema at ``version`` (fields unchanged)."""
    return SchemaChange(vchannel=vchannel, collection_id=collection_id, schema=replace(SCHEMA, version=version)).encode()
