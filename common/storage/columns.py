"""Column groups: how a segment's columns split into Parquet files, and their field ids.

Group 0 holds the primary key, then ``_ts``, then every other non-vector field
(scalars, JSON, ``$meta``) in schema order. Each vector field gets a group of its
own whose id is the field's ``field_id``, so a search can load vectors without the
scalars and a filter can read scalars without the vectors.

Every Parquet column carries its Arrow field id (``PARQUET:field_id`` field
metadata, which pyarrow writes as the Parquet schema's ``field_id``): the user
field's ``field_id`` (user ids start at 100, as in Milvus), and the reserved
``TIMESTAMP_FIELD_ID`` = 1 for ``_ts``. Ids 0-99 are reserved for system columns.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from common.errors import InvalidArgument
from common.schema import TIMESTAMP_COLUMN, CollectionSchema

#: Group id of the primary key, ``_ts`` and the scalar fields.
SCALAR_GROUP_ID = 0
#: Field id of the ``_ts`` column in every Parquet file (Milvus' ``TimeStampField`` id).
TIMESTAMP_FIELD_ID = 1
#: Smallest field id a user field may have; smaller ids are reserved for system columns.
FIRST_USER_FIELD_ID = 100
#: Arrow field-metadata key that pyarrow maps to the Parquet schema's ``field_id``.
FIELD_ID_KEY = b"PARQUET:field_id"


@dataclass(frozen=True, slots=True, kw_only=True)
class ColumnGroup:
    """One Parquet file per insert log: the columns it holds, in file order."""

    group_id: int
    fields: tuple[str, ...]


def column_groups(schema: CollectionSchema) -> list[ColumnGroup]:
    """The column groups of ``schema``: group 0 first, then vector groups in schema order.

    Raises:
        InvalidArgument: a field id is reserved or used twice.
    """
    field_ids(schema)  # validates
    pk = schema.primary_field
    scalars = [f.name for f in schema.fields if not f.dtype.is_vector and f.name != pk.name]
    groups = [ColumnGroup(group_id=SCALAR_GROUP_ID, fields=(pk.name, TIMESTAMP_COLUMN, *scalars))]
    groups.extend(ColumnGroup(group_id=f.field_id, fields=(f.name,)) for f in schema.vector_fields)
    return groups


def field_ids(schema: CollectionSchema) -> dict[str, int]:
    """Column name -> Parquet field id, for every stored column including ``_ts``."""
    ids: dict[str, int] = {}
    seen: set[int] = set()
    for f in schema.fields:
        if f.field_id < FIRST_USER_FIELD_ID:
            raise InvalidArgument(f"field {f.name!r} has id {f.field_id}; ids below {FIRST_USER_FIELD_ID} are reserved")
        if f.field_id in seen:
            raise InvalidArgument(f"field id {f.field_id} is used by more than one field")
        seen.add(f.field_id)
        ids[f.name] = f.field_id
    ids[TIMESTAMP_COLUMN] = TIMESTAMP_FIELD_ID
    return ids


def group_arrow_schema(schema: CollectionSchema, group: ColumnGroup) -> pa.Schema:
    """The Arrow schema of ``group``'s Parquet file: the schema's types plus field ids."""
    arrow = schema.arrow_schema()
    ids = field_ids(schema)
    return pa.schema([with_field_id(arrow.field(name), ids[name]) for name in group.fields])


def with_field_id(field: pa.Field, field_id: int) -> pa.Field:
    """``field`` with its ``PARQUET:field_id`` metadata set to ``field_id``."""
    metadata = dict(field.metadata or {})
    metadata[FIELD_ID_KEY] = str(field_id).encode()
    return field.with_metadata(metadata)


def group_of(groups: list[ColumnGroup], column: str) -> ColumnGroup:
    """The group holding ``column``.

    Raises:
        InvalidArgument: no group holds it.
    """
    for group in groups:
        if column in group.fields:
            return group
    raise InvalidArgument(f"column {column!r} is not stored in this collection's segments")
