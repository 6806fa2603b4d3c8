"""Validating imported columns against the collection schema, one file at a time.

``conform(columns, rows, schema, file=...)`` turns the columns read from one
import file (any Arrow types, by name) into the collection's insert rows
(``schema.arrow_schema(with_timestamp=False)``), or raises ``ImportFileError``
naming the file and the field. The rules follow the proxy's insert path:

* every field must be present, except a nullable one (nulls), one with a
  default value (the default), the dynamic field ``$meta`` (``{}``), and an
  auto-id primary key, which must be absent (its ids are assigned);
* values are cast to the field's type; a value that does not fit (overflow, a
  string in a number column) is an error, as is a null in a field that is not
  nullable and has no default;
* FLOAT_VECTOR: every row a list of exactly ``dim`` finite numbers;
* BINARY_VECTOR: every row ``dim / 8`` bytes, as Milvus' import takes them: a
  binary (or fixed-size binary) value of that many bytes, or a list of that many
  integers in [0, 255] (Parquet ``list<uint8>``, a JSON array, a 2-D uint8 ``.npy``);
* SPARSE_FLOAT_VECTOR: JSON (an object of index -> value, or ``indices`` and
  ``values`` lists), a Parquet struct of ``indices``/``values`` lists, or the
  packed pairs as binary (``sparse_conform.py``);
* FLOAT16_VECTOR, BFLOAT16_VECTOR, INT8_VECTOR: the rows' bytes or their values
  (``narrow_import.py``);
* a BM25 function's output: never in the file; computed from its input text;
* VARCHAR: at most ``max_length`` bytes; ARRAY: at most ``max_capacity``
  elements; JSON and ``$meta``: JSON text (``$meta`` an object).

``check_columns`` applies the name-and-type part to a file's column types
alone (a Parquet footer, a NumPy header), so the coordinator refuses a bad
file before any job starts.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from common.errors import InvalidArgument
from common.fulltext.functions import is_function_output
from common.fulltext.outputs import with_function_outputs
from common.jsonvalue import load_json
from common.schema import DYNAMIC_FIELD_NAME, CollectionSchema, DataType, FieldSchema
from jobs.narrow_import import narrow_column, narrow_type_fits
from jobs.sparse_conform import sparse_column, sparse_type_fits

#: Marks the message of an import error inside whatever Spark wraps it in (``main.py`` extracts it).
ERROR_MARKER = "STRATA-IMPORT-ERROR:"


class ImportFileError(InvalidArgument):
    """A file that does not fit the schema; the message names the file and the field."""

    def __init__(self, file: str, reason: str, *, field: str = "") -> None:
        where = f"file {file}" + (f", field {field}" if field else "")
        super().__init__(f"{where}: {reason}")
        self.file = file
        self.field = field

    def __str__(self) -> str:
        # Spark shows a task's exception as text inside a JVM error: the marker lets the
        # job's driver find this message in it (``main._message``).
        return f"{ERROR_MARKER} {self.message}"


def expected_columns(schema: CollectionSchema) -> list[FieldSchema]:
    """The fields an import file provides (every field but an auto-id primary key and a function's
    output, which the import computes from its input as an insert does)."""
    return [f for f in schema.fields if not (f.is_primary and f.auto_id) and not is_function_output(schema, f.name)]


def check_columns(columns: Mapping[str, pa.DataType], schema: CollectionSchema, *, file: str) -> None:
    """Refuse a file whose column names or types cannot fit ``schema`` (values are checked later).

    Raises:
        ImportFileError: naming the file and the first field at fault.
    """
    pk = schema.primary_field
    if pk.auto_id and pk.name in columns:
        raise ImportFileError(file, "the primary key is auto_id: the file must not provide it", field=pk.name)
    known = {f.name for f in schema.fields}
    for name in columns:
        if is_function_output(schema, name):
            raise ImportFileError(file, "the field is a function output: the import computes it", field=name)
        if name not in known:
            hint = " (the collection has no dynamic field)" if schema.dynamic_field is None else ""
            raise ImportFileError(file, f"column is not a field of collection {schema.name}{hint}", field=name)
    for f in expected_columns(schema):
        t = columns.get(f.name)
        if t is None:
            if not (f.nullable or f.default_value is not None or f.is_dynamic):
                raise ImportFileError(file, "the field is missing (it is not nullable and has no default)", field=f.name)
            continue
        if not _type_fits(f, t):
            raise ImportFileError(file, f"a column of type {t} cannot hold {f.dtype.name} values", field=f.name)


def _type_fits(f: FieldSchema, t: pa.DataType) -> bool:
    if pa.types.is_null(t):
        return True
    if f.dtype == DataType.FLOAT_VECTOR:
        return (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)) and (
            pa.types.is_floating(t.value_type) or pa.types.is_integer(t.value_type)
        )
    if f.dtype == DataType.BINARY_VECTOR:
        if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
            return True
        return (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)) and (
            pa.types.is_integer(t.value_type)
        )
    if f.dtype == DataType.SPARSE_FLOAT_VECTOR:
        return sparse_type_fits(t)
    if f.dtype.is_narrow_vector:
        return narrow_type_fits(t)
    if f.dtype == DataType.ARRAY:
        return pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)
    if f.dtype in (DataType.VARCHAR, DataType.JSON) or f.is_dynamic:
        return pa.types.is_string(t) or pa.types.is_large_string(t)
    if f.dtype == DataType.BOOL:
        return pa.types.is_boolean(t)
    if f.dtype.is_integer:
        return pa.types.is_integer(t)
    if f.dtype.is_floating:
        return pa.types.is_floating(t) or pa.types.is_integer(t)
    return False


def conform(
    columns: Mapping[str, pa.Array | pa.ChunkedArray], rows: int, schema: CollectionSchema, *, file: str
) -> pa.Table:
    """The file's rows as the collection's insert rows (no ``_ts``; an auto-id key left null).

    Raises:
        ImportFileError: the file and field at fault, and why.
    """
    check_columns({n: c.type for n, c in columns.items()}, schema, file=file)
    out = []
    for f in schema.fields:
        if (f.is_primary and f.auto_id) or is_function_output(schema, f.name):
            out.append(pa.nulls(rows, f.arrow_type()))  # assigned later / computed below
            continue
        column = columns.get(f.name)
        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks()
        if column is not None and len(column) != rows:
            raise ImportFileError(file, f"has {len(column)} values, other fields have {rows}", field=f.name)
        try:
            out.append(_field(f, column, rows))
        except ImportFileError:
            raise
        except InvalidArgument as err:
            raise ImportFileError(file, err.message, field=f.name) from None
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError, ValueError) as err:
            raise ImportFileError(file, f"values do not fit {f.dtype.name}: {err}", field=f.name) from None
    return with_function_outputs(schema, pa.Table.from_arrays(out, schema=schema.arrow_schema(with_timestamp=False)))


def _field(f: FieldSchema, column: pa.Array | None, rows: int) -> pa.Array:
    if column is None or pa.types.is_null(column.type):
        if f.is_dynamic:
            return pa.array(["{}"] * rows, pa.string())
        if f.default_value is not None:
            return pa.array([f.default_value] * rows, f.arrow_type())
        if f.nullable:
            return pa.nulls(rows, f.arrow_type())
        raise InvalidArgument("the field is missing (it is not nullable and has no default)")
    if f.dtype == DataType.FLOAT_VECTOR:
        return _vectors(f, column)
    if f.dtype == DataType.BINARY_VECTOR:
        return _binary_vectors(f, column)
    if f.dtype == DataType.SPARSE_FLOAT_VECTOR:
        return sparse_column(column)
    if f.dtype.is_narrow_vector:
        return narrow_column(f, column)
    array = column.cast(f.arrow_type(), safe=True)
    if array.null_count:
        if f.default_value is not None:
            array = pc.fill_null(array, pa.scalar(f.default_value, f.arrow_type()))
        elif not f.nullable:
            row = int(np.flatnonzero(~np.asarray(array.is_valid().to_numpy(zero_copy_only=False)))[0])
            raise InvalidArgument(f"null at row {row}, but the field is not nullable and has no default")
    if f.dtype.is_floating:
        values = np.asarray(pc.fill_null(array, 0).to_numpy(zero_copy_only=False))
        if not np.isfinite(values).all():
            raise InvalidArgument(f"NaN or Inf at row {int(np.flatnonzero(~np.isfinite(values))[0])}")
    if f.dtype == DataType.VARCHAR:
        sizes = np.asarray(pc.fill_null(pc.binary_length(array), 0).to_numpy(zero_copy_only=False))
        if f.max_length and (sizes > f.max_length).any():
            row = int(np.argmax(sizes > f.max_length))
            raise InvalidArgument(f"value at row {row} is {int(sizes[row])} bytes, max_length is {f.max_length}")
    if f.dtype == DataType.ARRAY:
        lengths = np.asarray(pc.fill_null(pc.list_value_length(array), 0).to_numpy(zero_copy_only=False))
        if f.max_capacity and (lengths > f.max_capacity).any():
            row = int(np.argmax(lengths > f.max_capacity))
            raise InvalidArgument(f"array at row {row} has {int(lengths[row])} elements, max_capacity is {f.max_capacity}")
    if f.dtype == DataType.JSON or f.is_dynamic:
        _check_json(f, array)
    return array


def _vectors(f: FieldSchema, column: pa.Array) -> pa.Array:
    if column.null_count:
        row = int(np.flatnonzero(~np.asarray(column.is_valid().to_numpy(zero_copy_only=False)))[0])
        raise InvalidArgument(f"null vector at row {row}")
    if pa.types.is_fixed_size_list(column.type):
        if column.type.list_size != f.dim:
            raise InvalidArgument(f"vectors have {column.type.list_size} dimensions, the field has dim {f.dim}")
    else:
        lengths = np.asarray(pc.list_value_length(column).to_numpy(zero_copy_only=False))
        bad = lengths != f.dim
        if bad.any():
            row = int(np.argmax(bad))
            raise InvalidArgument(f"vector at row {row} has {int(lengths[row])} dimensions, the field has dim {f.dim}")
    flat = np.asarray(pc.list_flatten(column).to_numpy(zero_copy_only=False), dtype=np.float32)
    if not np.isfinite(flat).all():
        row = int(np.flatnonzero(~np.isfinite(flat))[0]) // f.dim
        raise InvalidArgument(f"NaN or Inf in the vector at row {row}")
    return pa.FixedSizeListArray.from_arrays(pa.array(flat, pa.float32()), f.dim)


def _binary_vectors(f: FieldSchema, column: pa.Array) -> pa.Array:
    """Binary vectors given as bytes or as lists of byte values, as ``fixed_size_binary[dim / 8]``."""
    if column.null_count:
        row = int(np.flatnonzero(~np.asarray(column.is_valid().to_numpy(zero_copy_only=False)))[0])
        raise InvalidArgument(f"null vector at row {row}")
    width = f.code_size
    t = column.type
    if pa.types.is_fixed_size_binary(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t):
        lengths = np.asarray(pc.binary_length(column).to_numpy(zero_copy_only=False))
        _check_widths(f, lengths, "bytes")
        return column.cast(f.arrow_type())
    if pa.types.is_fixed_size_list(t):
        lengths = np.full(len(column), t.list_size)
    else:
        lengths = np.asarray(pc.list_value_length(column).to_numpy(zero_copy_only=False))
    _check_widths(f, lengths, "byte values")
    values = np.asarray(pc.list_flatten(column).to_numpy(zero_copy_only=False))
    bad = (values < 0) | (values > 255)
    if bad.any():
        row = int(np.argmax(bad)) // width
        raise InvalidArgument(f"the vector at row {row} holds a byte value outside [0, 255]")
    codes = np.ascontiguousarray(values, dtype=np.uint8)
    return pa.FixedSizeBinaryArray.from_buffers(f.arrow_type(), len(column), [None, pa.py_buffer(codes)])


def _check_widths(f: FieldSchema, lengths: np.ndarray, unit: str) -> None:
    bad = lengths != f.code_size
    if bad.any():
        row = int(np.argmax(bad))
        raise InvalidArgument(
            f"binary vector at row {row} has {int(lengths[row])} {unit}, the field (dim {f.dim}) needs {f.code_size}"
        )


def _check_json(f: FieldSchema, array: pa.Array) -> None:
    for row, text in enumerate(array.to_pylist()):
        if text is None:
            continue
        try:
            value = load_json(text)
        except ValueError as err:
            raise InvalidArgument(f"row {row} is not valid JSON: {err}") from None
        if f.is_dynamic and not isinstance(value, dict):
            raise InvalidArgument(f"row {row} must be a JSON object")


def numpy_column(values: np.ndarray) -> pa.Array:
    """A NumPy field's values as an Arrow column (2-D: one list per row)."""
    if values.ndim == 2:
        flat = pa.array(np.ascontiguousarray(values).reshape(-1))
        return pa.FixedSizeListArray.from_arrays(flat, values.shape[1])
    if values.ndim != 1:
        raise InvalidArgument(f"a NumPy field must have 1 or 2 dimensions, got shape {values.shape}")
    if values.dtype.kind in "US":
        return pa.array(values.astype(str).tolist(), pa.string())
    if values.dtype.kind == "O":
        return pa.array(values.tolist())
    return pa.array(values)


def json_rows_to_columns(
    rows: list[object], schema: CollectionSchema, *, file: str
) -> tuple[dict[str, pa.Array], int]:
    """Rows of a JSON file (objects) as columns; keys that are no field go to ``$meta`` if dynamic."""
    dynamic = schema.dynamic_field
    names = {f.name for f in schema.fields if not f.is_dynamic}
    values: dict[str, list[object]] = {f.name: [] for f in schema.fields if not f.is_dynamic}
    present: set[str] = set()
    extra: list[str] = []
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise ImportFileError(file, f"row {i} is not a JSON object")
        unknown = {k: v for k, v in row.items() if k not in names}
        if unknown:
            if dynamic is None:
                raise ImportFileError(file, f"row {i} has a key that is not a field of collection {schema.name}",
                                      field=min(unknown))
            if DYNAMIC_FIELD_NAME in unknown:
                inner = unknown.pop(DYNAMIC_FIELD_NAME)
                if not isinstance(inner, dict):
                    raise ImportFileError(file, f"row {i}: $meta must be an object", field=DYNAMIC_FIELD_NAME)
                unknown = {**inner, **unknown}
        if dynamic is not None:
            extra.append(json.dumps(unknown))
        for name in names:
            if name in row:
                present.add(name)
            values[name].append(row.get(name))
    columns: dict[str, pa.Array] = {}
    for f in schema.fields:
        if f.is_dynamic or f.name not in present:
            continue
        cells = values[f.name]
        if f.dtype in (DataType.JSON, DataType.SPARSE_FLOAT_VECTOR):
            cells = [None if c is None else json.dumps(c) for c in cells]
        try:
            columns[f.name] = pa.array(cells, type=_json_source_type(f))
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError) as err:
            raise ImportFileError(file, f"values do not fit {f.dtype.name}: {err}", field=f.name) from None
    if dynamic is not None:
        columns[dynamic.name] = pa.array(extra, pa.string())
    return columns, len(rows)


def _json_source_type(f: FieldSchema) -> pa.DataType:
    if f.dtype == DataType.FLOAT_VECTOR:
        return pa.list_(pa.float64())
    if f.dtype == DataType.BINARY_VECTOR:
        return pa.list_(pa.int64())
    if f.dtype.is_narrow_vector:
        return pa.list_(pa.float64())
    if f.dtype == DataType.FLOAT:
        return pa.float64()
    if f.dtype == DataType.SPARSE_FLOAT_VECTOR:
        return pa.string()  # each row's JSON text, parsed by sparse_conform
    return f.arrow_type()
