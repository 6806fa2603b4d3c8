"""A collection schema that changes while the collection lives.

Milvus 2.6 adds a field to a live collection (``AddCollectionField``) only if it is
nullable: rows written before the change have no value for it, and wherever they
are read they carry the field's default value when it has one, else null (they are
*filled*). Three places meet rows of an older schema:

* segment files written before the change lack the column (a scalar field) or its
  whole file (a vector field's column group): ``SegmentReader`` fills them, so
  loads, compaction and index builds see every column;
* an insert a proxy converted with an older schema (its cache, or a client's)
  reaches the flusher or a delegator after the change: ``conform_table`` fills it;
* rows held in memory (growing segments, loaded sealed ones) gain the column:
  ``GrowingStore.add_fields``.

Only a *fillable* field (nullable, or with a default value) is ever filled in
memory; in files, only a field ``added`` after the collection was created
(``fillable_in_files``): a missing column of any other field is a foreign or
corrupt file, and stays an error.

Every holder of a schema (flusher pipeline, delegator, worker) takes a changed
one only when its ``version`` is higher (``is_newer``), so a change that reaches
it twice (a WAL replay, a load that carries it again) is applied once.
"""

from __future__ import annotations

import pyarrow as pa

from common.schema import CollectionSchema, FieldSchema


def fillable(field: FieldSchema) -> bool:
    """Rows without a value for ``field`` can be given one: its default, or null."""
    return field.nullable or field.default_value is not None


def fillable_in_files(field: FieldSchema) -> bool:
    """Segment files may lack ``field``'s column: it was added after they were written."""
    return field.added and fillable(field)


def fill_column(field: FieldSchema, rows: int) -> pa.Array:
    """``rows`` values of ``field`` for rows written before it existed: its default value, else nulls."""
    arrow_type = field.arrow_type()
    if field.default_value is not None:
        return pa.repeat(pa.scalar(field.default_value, arrow_type), rows)
    return pa.nulls(rows, arrow_type)


def is_newer(current: CollectionSchema, candidate: CollectionSchema) -> bool:
    """Whether a holder of ``current`` should take ``candidate`` (a later change of the same collection)."""
    return candidate.version > current.version


def added_fields(old: CollectionSchema, new: CollectionSchema) -> list[FieldSchema]:
    """The fields of ``new`` that ``old`` lacks, in ``new``'s order."""
    return [f for f in new.fields if not old.has_field(f.name)]


def conform_table(table: pa.Table, target: pa.Schema, schema: CollectionSchema) -> pa.Table:
    """``table`` with exactly ``target``'s columns, in its order and types.

    A column ``table`` lacks is filled (``fill_column``) when it is a fillable field of
    ``schema``; ``target`` is ``schema``'s Arrow schema, or a selection of it.

    Raises:
        ValueError: a column is missing and cannot be filled, a column is not in
            ``target``, or a column cannot be cast to its type.
    """
    if table.schema.names == target.names:
        return _cast(table, target)
    extra = [n for n in table.column_names if target.get_field_index(n) < 0]
    if extra:
        raise ValueError(f"unexpected columns {extra}; expected {target.names}")
    columns: list[pa.Array | pa.ChunkedArray] = []
    for f in target:
        if f.name in table.column_names:
            columns.append(table.column(f.name))
            continue
        if not schema.has_field(f.name) or not fillable(schema.field(f.name)):
            raise ValueError(f"column {f.name!r} is missing (its field is neither nullable nor defaulted)")
        columns.append(fill_column(schema.field(f.name), table.num_rows))
    return _cast(pa.Table.from_arrays(columns, names=target.names), target)


def _cast(table: pa.Table, target: pa.Schema) -> pa.Table:
    try:
        return table.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, TypeError) as err:
        raise ValueError(f"rows do not fit the schema: {err}") from None
