"""Upsert as Milvus 2.6 does it: replace whole rows (override mode) or merge some fields (partial update).

Both end as one delete and one insert per vchannel at one timetick (``writes.upsert_table``):

* **override**: the request's rows are inserted and every key it names is deleted. In an
  auto-id collection the rows get *new* keys (allocated like an insert's) and the keys
  the request names are the ones deleted (``proxy/task_upsert.go``, ``checkUpsertPrimaryFieldData``).
* **partial update** (``partial_update=True``): the rows of the named keys are read first
  (a Strong query, in the request's partition, or in every partition of a partition-key
  collection); a key found keeps the values of the fields the request leaves out, a key not
  found becomes a new row, which needs every field that has no default and is not nullable
  (``fieldSchema(<name>) has no corresponding fieldData pass in``). Dynamic keys merge: the
  request's keys replace or join the row's, the others stay. Only the keys found are deleted.

Checks in Milvus's order: the key column (``must assign pk when upsert``), duplicate keys,
then the field data.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pymilvus.grpc_gen import schema_pb2

from common.errors import InvalidArgument
from common.fulltext.functions import is_function_output
from common.fulltext.outputs import with_function_outputs
from common.jsonvalue import load_json
from common.schema import CollectionSchema, DataType, FieldSchema
from proxy.convert.rows import filler_column, given_columns, insert_to_table
from proxy.metacache import CollectionEntry
from proxy.readplans import plan_read
from proxy.reads import ReadRouter

# Reads the live rows of these keys (every field), in the partitions the upsert replaces rows of.
ReadRows = Callable[[pa.Array], Awaitable[pa.Table]]
AllocateIds = Callable[[int], Awaitable[np.ndarray]]


@dataclass(frozen=True, slots=True, kw_only=True)
class UpsertPlan:
    """What an upsert writes: ``rows`` (the schema's fields, final keys) and the keys whose rows it deletes."""

    rows: pa.Table
    deleted: pa.Array


async def plan_upsert(
    fields_data: Sequence[schema_pb2.FieldData],
    num_rows: int,
    schema: CollectionSchema,
    *,
    partial: bool,
    allocate_ids: AllocateIds,
    read_rows: ReadRows,
) -> UpsertPlan:
    """The rows and deletes of an upsert request; ``InvalidArgument`` names what is wrong."""
    if num_rows <= 0:
        raise InvalidArgument("num_rows should be greater than 0")
    pk = schema.primary_field
    key_data = [fd for fd in fields_data if fd.field_name == pk.name and not fd.is_dynamic]
    if not key_data:
        raise InvalidArgument(f"must assign pk when upsert, primary field: {pk.name}")
    keys = given_columns(key_data[:1], num_rows, schema)[pk.name]
    if len(pc.unique(keys)) != len(keys):
        raise InvalidArgument("duplicate primary keys are not allowed in the same batch")
    if partial:
        given = given_columns(fields_data, num_rows, schema)
        rows, deleted = merge_partial(schema, given, await read_rows(keys), num_rows)
        rows = with_function_outputs(schema, rows)
    else:
        rows = insert_to_table(fields_data, num_rows, schema, allow_insert_auto_id=True)
        deleted = keys
    if pk.auto_id:
        rows = rows.set_column(
            rows.schema.get_field_index(pk.name), rows.schema.field(pk.name), _auto_keys(pk, await allocate_ids(num_rows))
        )
    return UpsertPlan(rows=rows, deleted=deleted)


async def live_rows(
    reads: ReadRouter, coll: CollectionEntry, keys: pa.Array, *, partition_id: int | None, guarantee_ts: int,
    timeout: float,
) -> pa.Table:
    """Every field of the live rows of ``keys`` in partition ``partition_id`` (None: every partition,
    for a partition-key collection), read at ``guarantee_ts``."""
    schema = coll.schema
    names = [f.name for f in schema.fields]
    read = await plan_read(
        schema, guarantee_ts=guarantee_ts, filter=f"{schema.primary_field.name} in {{keys}}",
        filter_params={"keys": keys.to_pylist()}, output_fields=names, timeout=timeout,
        partitions=None if partition_id is None else [partition_id],
    )
    tables, _ = await reads.query(coll, read=read, limit=0, count_only=False)
    if not tables:
        return schema.arrow_schema(with_timestamp=False).empty_table()
    return pa.concat_tables([t.select(names) for t in tables])


def merge_partial(
    schema: CollectionSchema, given: dict[str, pa.Array], existing: pa.Table, num_rows: int
) -> tuple[pa.Table, pa.Array]:
    """The rows a partial update writes and the keys it deletes (those ``existing`` holds).

    ``given`` has the request's columns by field name (the key's among them), ``existing``
    the live rows of those keys, one per key, with every field.
    """
    pk = schema.primary_field
    keys = given[pk.name]
    found = pc.index_in(keys, value_set=existing.column(pk.name).combine_chunks())  # row in existing, or null
    at = np.asarray(found.fill_null(-1).to_numpy(zero_copy_only=False), dtype=np.int64)
    old = at >= 0
    if not old.all():
        missing = [
            f.name for f in schema.fields
            if f.name not in given and not f.is_dynamic and not f.nullable and f.default_value is None
            and not (f.is_primary and f.auto_id) and not is_function_output(schema, f.name)
        ]
        if missing:
            raise InvalidArgument(f"fieldSchema({missing[0]}) has no corresponding fieldData pass in")
    columns: list[pa.Array] = []
    for f in schema.fields:
        target = schema.arrow_schema(with_timestamp=False).field(f.name).type
        if f.name in given and not (f.is_dynamic and old.any()):
            columns.append(given[f.name].cast(target))
            continue
        if is_function_output(schema, f.name):  # computed from the merged input (with_function_outputs)
            columns.append(pa.nulls(num_rows, target))
            continue
        if not old.any():
            columns.append(filler_column(f, num_rows).cast(target))
            continue
        kept = _column(existing, f.name, target).take(pa.array(np.where(old, at, 0)))
        if f.name not in given and old.all():
            columns.append(kept)
            continue
        # Rows of new keys: the value given, or what an insert gives a field it leaves out.
        new = (given[f.name] if f.name in given else filler_column(f, num_rows)).cast(target)
        columns.append(_merge_dynamic(kept, new, old) if f.is_dynamic else _pick(kept, new, old))
    rows = pa.Table.from_arrays(columns, schema=schema.arrow_schema(with_timestamp=False))
    return rows, keys.filter(pa.array(old))


def _column(table: pa.Table, name: str, target: pa.DataType) -> pa.Array:
    column = table.column(name).combine_chunks() if name in table.column_names else pa.nulls(table.num_rows, target)
    return column.cast(target) if column.type != target else column


def _pick(kept: pa.Array, new: pa.Array, old: np.ndarray) -> pa.Array:
    """Row ``i`` from ``kept`` where ``old[i]``, else from ``new`` (any type)."""
    both = pa.concat_arrays([kept, new])
    n = len(old)
    return both.take(pa.array(np.where(old, np.arange(n), n + np.arange(n))))


def _merge_dynamic(kept: pa.Array, given: pa.Array, old: np.ndarray) -> pa.Array:
    """The dynamic field of each row: the row's keys with the request's keys replacing or joining them."""
    out: list[str | None] = []
    for was, text, here in zip(kept.to_pylist(), given.to_pylist(), old.tolist(), strict=True):
        if not here or was is None:
            out.append(text)
            continue
        merged = load_json(was)
        if isinstance(merged, dict) and text is not None:
            merged.update(load_json(text))
        out.append(json.dumps(merged, ensure_ascii=False, separators=(",", ":")))
    return pa.array(out, type=pa.string())


def _auto_keys(field: FieldSchema, ids: np.ndarray) -> pa.Array:
    if field.dtype == DataType.VARCHAR:
        return pa.array([str(i) for i in ids.tolist()], type=pa.string())
    return pa.array(np.asarray(ids, dtype=np.int64), type=pa.int64())


__all__ = ["UpsertPlan", "live_rows", "merge_partial", "plan_upsert"]
