"""Row data between Milvus ``FieldData`` columns and Arrow tables.

Insert (``insert_to_table``, here): pymilvus sends one ``FieldData`` per field.
A nullable field, or one with a default value, carries ``valid_data`` (one flag
per row) and only the valid values ("compact", as Milvus expects); a
full-length column with placeholders is accepted too. Row keys pymilvus could
not place in a schema field arrive as JSON objects in a ``$meta`` FieldData
marked ``is_dynamic``. An ``ARRAY`` column arrives as ``scalars.array_data``:
one ``ScalarField`` per (valid) row, in the slot of the element type; a cell
with no slot set is an empty array. A ``BINARY_VECTOR`` column arrives as
``vectors.binary_vector``: the rows' ``dim / 8`` bytes each, one after the
other, with ``vectors.dim`` the field's dim in bits. FLOAT16, BFLOAT16 and
INT8 vector columns are read by ``narrow``.

The result direction (Arrow -> FieldData, output field resolution) lives in
``output`` and primary keys in ``ids``; both are re-exported here so the row
API reads as one module.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeAlias

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pymilvus.grpc_gen import schema_pb2

from common.errors import InvalidArgument
from common.fulltext.functions import bm25_outputs
from common.fulltext.outputs import refuse_output, with_function_outputs
from common.jsonvalue import load_json
from common.schema import DYNAMIC_FIELD_NAME, CollectionSchema, DataType, FieldSchema
from proxy.convert import narrow
from proxy.convert.field_read import Values, empty_values, read_values
from proxy.convert.ids import ids_from_proto, ids_to_proto
from proxy.convert.nullvectors import with_nulls
from proxy.convert.output import (
    OutputFields,
    column_to_field_data,
    resolve_output_fields,
    table_to_fields_data,
)

__all__ = [
    "OutputFields",
    "column_to_field_data",
    "ids_from_proto",
    "ids_to_proto",
    "filler_column",
    "given_columns",
    "insert_to_table",
    "resolve_output_fields",
    "table_to_fields_data",
]

# Called with (value index, parsed JSON value) for each JSON cell of an insert.
_JsonCheck: TypeAlias = Callable[[int, Any], None]


def insert_to_table(
    fields_data: Sequence[schema_pb2.FieldData],
    num_rows: int,
    schema: CollectionSchema,
    *,
    auto_ids: np.ndarray | None = None,
    allow_insert_auto_id: bool = False,
) -> pa.Table:
    """Validate an insert's columns and build the rows as an Arrow table.

    The table has exactly the schema's fields in order
    (``schema.arrow_schema(with_timestamp=False)``). Missing nullable fields
    become nulls, missing fields with a default take it, a missing ``$meta``
    becomes ``{}`` per row.

    Args:
        fields_data: the request's columns.
        num_rows: the request's row count.
        schema: the collection's schema.
        auto_ids: int64 ids, one per row, for an auto-id primary key (stringified
            for a VarChar key). Required when the key is auto id and not given.
        allow_insert_auto_id: the collection lets clients supply auto-id keys
            (Milvus' ``allow_insert_auto_id`` property).

    Raises:
        InvalidArgument: the data does not fit the schema; the message names
            the field.
    """
    if num_rows <= 0:
        raise InvalidArgument(f"invalid num_rows {num_rows}: num_rows should be greater than 0")
    by_name = _fields_by_name(fields_data, schema)
    columns: list[pa.Array] = []
    outputs = bm25_outputs(schema)
    for field in schema.fields:
        fd = by_name.get(field.name)
        if field.name in outputs:  # computed below from its input text
            columns.append(pa.nulls(num_rows, pa.binary()))
        elif field.is_primary and field.auto_id and (fd is None or not allow_insert_auto_id):
            if fd is not None:
                raise InvalidArgument(
                    f"can not assign primary field data when auto id enabled and "
                    f"allow_insert_auto_id is false {field.name}"
                )
            columns.append(_auto_id_column(field, auto_ids, num_rows))
        elif field.is_dynamic:
            columns.append(_dynamic_column(field, fd, num_rows, schema))
        else:
            columns.append(_column(field, fd, num_rows))
    table = pa.Table.from_arrays(columns, schema=schema.arrow_schema(with_timestamp=False))
    return with_function_outputs(schema, table) if outputs else table


def given_columns(
    fields_data: Sequence[schema_pb2.FieldData], num_rows: int, schema: CollectionSchema
) -> dict[str, pa.Array]:
    """The columns a request gives (a partial update's), each validated as an insert's, by field name.

    Fields the request leaves out are absent (``filler_column`` makes one); the primary key is
    read like any field, auto id or not.
    """
    if num_rows <= 0:
        raise InvalidArgument(f"invalid num_rows {num_rows}: num_rows should be greater than 0")
    by_name = _fields_by_name(fields_data, schema)
    out: dict[str, pa.Array] = {}
    for field in schema.fields:
        fd = by_name.get(field.name)
        if fd is not None:
            out[field.name] = _dynamic_column(field, fd, num_rows, schema) if field.is_dynamic else _column(
                field, fd, num_rows
            )
    return out


def filler_column(field: FieldSchema, num_rows: int) -> pa.Array:
    """The column an insert gives a field it leaves out: nulls, the default value, or ``{}`` per row
    of the dynamic field; ``InvalidArgument`` for a field that needs a value."""
    if field.is_dynamic:
        return pa.array(["{}"] * num_rows, type=pa.string())
    return _column(field, None, num_rows)


def _fields_by_name(fields_data: Sequence[schema_pb2.FieldData], schema: CollectionSchema) -> dict[str, schema_pb2.FieldData]:
    """The request's columns by field name; a repeated or unknown field is refused."""
    dynamic = schema.dynamic_field
    by_name: dict[str, schema_pb2.FieldData] = {}
    for fd in fields_data:
        name = DYNAMIC_FIELD_NAME if fd.is_dynamic else fd.field_name
        if name in by_name:
            raise InvalidArgument(f"duplicated field {name} found")
        refuse_output(schema, name)
        if name == DYNAMIC_FIELD_NAME and dynamic is None:
            raise InvalidArgument(
                f"without dynamic schema enabled, the field name cannot be set to {DYNAMIC_FIELD_NAME}"
            )
        if name != DYNAMIC_FIELD_NAME and not schema.has_field(name):
            if dynamic is None:
                raise InvalidArgument(
                    f"Attempt to insert an unexpected field `{name}` to collection without enabling dynamic field"
                )
            raise InvalidArgument(
                f"field `{name}` does not exist in collection {schema.name}; "
                f"dynamic keys travel in the {DYNAMIC_FIELD_NAME} field"
            )
        by_name[name] = fd
    return by_name


def _auto_id_column(field: FieldSchema, auto_ids: np.ndarray | None, num_rows: int) -> pa.Array:
    if auto_ids is None or len(auto_ids) != num_rows:
        got = "none" if auto_ids is None else str(len(auto_ids))
        raise ValueError(f"auto id field {field.name} needs {num_rows} auto_ids, got {got}")
    ids = np.asarray(auto_ids, dtype=np.int64)
    if field.dtype == DataType.VARCHAR:
        return pa.array([str(i) for i in ids.tolist()], type=pa.string())
    return pa.array(ids, type=pa.int64())


def _dynamic_column(
    field: FieldSchema, fd: schema_pb2.FieldData | None, num_rows: int, schema: CollectionSchema
) -> pa.Array:
    if fd is None:
        return pa.array(["{}"] * num_rows, type=pa.string())
    static = frozenset(f.name for f in schema.fields if not f.is_dynamic)

    def check(row: int, obj: Any) -> None:
        if not isinstance(obj, dict):
            raise InvalidArgument(f"dynamic field data must be a JSON object, got {type(obj).__name__} at row {row}")
        if DYNAMIC_FIELD_NAME in obj:
            raise InvalidArgument(f"cannot set json key to: {DYNAMIC_FIELD_NAME}")
        clash = static.intersection(obj)
        if clash:
            raise InvalidArgument(f"dynamic field name cannot include the static field name: {min(clash)}")

    return _column(field, fd, num_rows, json_check=check)


def _column(
    field: FieldSchema,
    fd: schema_pb2.FieldData | None,
    num_rows: int,
    *,
    json_check: _JsonCheck | None = None,
) -> pa.Array:
    """One schema field's column, validated, nulls and defaults applied."""
    if fd is None:
        if field.default_value is None and not field.nullable:
            raise InvalidArgument(
                f"Insert missed an field `{field.name}` to collection without set nullable==true or set default_value"
            )
        empty = _expand(empty_values(field), np.zeros(num_rows, dtype=bool))
        return _to_arrow(field, empty, np.zeros(num_rows, dtype=bool))

    values = read_values(field, fd)
    count = len(values)
    if len(fd.valid_data) == 0:
        if count != num_rows:
            raise InvalidArgument(
                f"the num_rows ({count}) of field ({field.name}) is not equal to passed num_rows ({num_rows})"
            )
        return _finish(field, values, None, json_check)

    valid = np.array(fd.valid_data, dtype=bool)
    if len(valid) != num_rows:
        raise InvalidArgument(
            f"the length ({len(valid)}) of valid_data of field ({field.name}) is not "
            f"equal to passed num_rows ({num_rows})"
        )
    if not valid.all():
        if field.dtype.is_vector and not field.nullable:
            raise InvalidArgument(f"vector field ({field.name}) does not support null")
        if not field.nullable and field.default_value is None:
            raise InvalidArgument(
                f"field ({field.name}) is not nullable and has no default value, but null values were given"
            )
    n_valid = int(valid.sum())
    if count == n_valid:
        if n_valid != num_rows:
            values = _expand(values, valid)
    elif count != num_rows:
        raise InvalidArgument(
            f"the number of values ({count}) of field ({field.name}) does not match "
            f"its valid_data ({n_valid} valid of {num_rows} rows)"
        )
    elif isinstance(values, list):
        values = [v if ok else None for v, ok in zip(values, valid.tolist(), strict=True)]
    return _finish(field, values, valid, json_check)


def _finish(field: FieldSchema, values: Values, valid: np.ndarray | None, json_check: _JsonCheck | None) -> pa.Array:
    """Check full-length values (JSON is parsed here, null rows skipped), build Arrow."""
    if field.dtype == DataType.JSON:
        assert isinstance(values, list)
        for row, text in enumerate(values):
            if text is None:
                continue
            try:
                value = load_json(text)
            except ValueError as err:
                raise InvalidArgument(f"invalid JSON in field ({field.name}) at row {row}: {err}") from None
            if json_check is not None:
                json_check(row, value)
    return _to_arrow(field, values, valid)


def _expand(values: Values, valid: np.ndarray) -> Values:
    """Spread compact values (only the valid rows) over all rows."""
    if isinstance(values, list):
        it = iter(values)
        return [next(it) if ok else None for ok in valid.tolist()]
    full = np.zeros((len(valid), *values.shape[1:]), dtype=values.dtype)
    full[valid] = values
    return full


def _to_arrow(field: FieldSchema, values: Values, valid: np.ndarray | None) -> pa.Array:
    """Build the Arrow column; rows with ``valid`` false take the default or null."""
    if field.dtype.is_vector and valid is not None and not valid.all():
        return with_nulls(_to_arrow(field, values, None), valid)  # a nullable vector field
    if field.dtype == DataType.FLOAT_VECTOR:
        assert isinstance(values, np.ndarray)
        flat = pa.array(np.ascontiguousarray(values).reshape(-1), type=pa.float32())
        return pa.FixedSizeListArray.from_arrays(flat, field.dim)
    if field.dtype == DataType.BINARY_VECTOR:
        assert isinstance(values, np.ndarray)
        codes = np.ascontiguousarray(values, dtype=np.uint8)
        return pa.FixedSizeBinaryArray.from_buffers(field.arrow_type(), len(codes), [None, pa.py_buffer(codes)])
    if field.dtype.is_narrow_vector:
        assert isinstance(values, np.ndarray)
        return narrow.to_arrow(field, values)
    if valid is not None and valid.all():
        valid = None
    if valid is not None and field.default_value is not None:
        if isinstance(values, list):
            default = field.default_value
            values = [default if v is None else v for v in values]
        else:
            values = values.copy()
            values[~valid] = field.default_value
        valid = None
    if isinstance(values, list):
        array = pa.array(values, type=field.arrow_type())
    else:
        array = pa.array(values, type=field.arrow_type(), mask=None if valid is None else ~valid)
    if field.dtype == DataType.VARCHAR and len(array) > 0:
        _check_max_length(field, array)
    if field.dtype == DataType.ARRAY and len(array) > 0:
        _check_arrays(field, array)
    return array


def _check_max_length(field: FieldSchema, array: pa.Array) -> None:
    sizes = pc.fill_null(pc.binary_length(array), 0).to_numpy(zero_copy_only=False)
    too_long = sizes > field.max_length
    if too_long.any():
        row = int(np.argmax(too_long))
        raise InvalidArgument(
            f"length of varchar field {field.name} exceeds max length, row number: {row}, "
            f"length: {int(sizes[row])}, max length: {field.max_length}"
        )


def _check_arrays(field: FieldSchema, array: pa.ListArray) -> None:
    """No row holds more than ``max_capacity`` elements or a too long VARCHAR element."""
    lengths = pc.fill_null(pc.list_value_length(array), 0).to_numpy(zero_copy_only=False)
    too_many = lengths > field.max_capacity
    if too_many.any():
        row = int(np.argmax(too_many))
        raise InvalidArgument(
            f"the length ({int(lengths[row])}) of the array at row {row} of field "
            f"({field.name}) exceeds max capacity ({field.max_capacity})"
        )
    if field.element_type != DataType.VARCHAR:
        return
    # ``array`` was just built from Python lists: no slicing and null rows are
    # empty, so its offsets index the flattened values directly.
    sizes = pc.binary_length(pc.list_flatten(array)).to_numpy(zero_copy_only=False)
    too_long = sizes > field.max_length
    if too_long.any():
        at = int(np.argmax(too_long))
        offsets = array.offsets.to_numpy()
        row = int(np.searchsorted(offsets, at, side="right")) - 1
        first = int(offsets[row])
        raise InvalidArgument(
            f"length of VarChar element of array field {field.name} exceeds max length, "
            f"row number: {row}, array index: {at - first}, length: {int(sizes[at])}, "
            f"max length: {field.max_length}"
        )
