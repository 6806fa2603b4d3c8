"""Query and search result columns: Arrow -> Milvus ``FieldData``.

Milvus returns full-length columns with placeholders where ``valid_data`` is
false, vectors flattened in ``vectors.float_vector`` with ``dim``, binary
vectors as the rows' bytes one after the other in ``vectors.binary_vector``
with ``dim`` in bits (pymilvus cuts ``dim / 8`` bytes per row), JSON as
bytes, ARRAY cells as one ``ScalarField`` each in ``scalars.array_data`` (with
its ``element_type`` set: pymilvus decodes the cells by it), and the dynamic
keys a user asked for by name inside the ``$meta`` FieldData (``is_dynamic``);
the result's ``output_fields`` then names those keys, which is how pymilvus
knows to lift them into each row. Every result column's payload is present
even when empty (pymilvus rejects a column whose payload it cannot find).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from google.protobuf.message import Message
from pymilvus.grpc_gen import schema_pb2

from common.errors import InvalidArgument
from common.fulltext.functions import is_function_output
from common.schema import DYNAMIC_FIELD_NAME, CollectionSchema, DataType, FieldSchema
from proxy.convert import narrow
from proxy.convert.fieldtypes import NUMPY_TYPES, SCALAR_SLOTS
from proxy.convert.nullvectors import nullable_vector_field_data
from proxy.convert.sparse import sparse_field_data

_IDENTIFIER_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# The placeholder a null JSON cell carries (pymilvus reads valid_data first).
_JSON_NULL = b"null"


class OutputFields(NamedTuple):
    """What a query or search returns, resolved against the schema.

    ``fields`` are schema fields to fetch, in schema order (``$meta`` among
    them when dynamic keys are wanted). ``dynamic_keys`` are the dynamic keys
    asked for by name; empty with ``$meta`` in ``fields`` means every key.
    """

    fields: list[str]
    dynamic_keys: list[str]

    def user_fields(self) -> list[str]:
        """The names results echo in ``output_fields``, as Milvus does."""
        hide_meta = bool(self.dynamic_keys)
        names = [f for f in self.fields if not (hide_meta and f == DYNAMIC_FIELD_NAME)]
        return names + self.dynamic_keys


def resolve_output_fields(
    schema: CollectionSchema, output_fields: Sequence[str], *, include_pk: bool = True
) -> OutputFields:
    """Resolve a request's ``output_fields`` like Milvus' proxy.

    ``*`` means every field (vectors and all dynamic keys included); a name
    that is no schema field is a dynamic key when the collection has a
    dynamic field and an error otherwise. The primary key is always fetched
    for queries (``include_pk``); searches return it in ``ids`` instead.

    Raises:
        InvalidArgument: an unknown field, or a dynamic key that is not a
            plain name.
    """
    wanted: set[str] = set()
    dynamic_keys: list[str] = []
    all_dynamic = False
    dynamic = schema.dynamic_field
    for raw in output_fields:
        name = raw.strip()
        if not name:
            continue
        if name == "*":  # function outputs (BM25's) are never returned, as in Milvus
            wanted.update(f.name for f in schema.fields if not is_function_output(schema, f.name))
            all_dynamic = True
        elif is_function_output(schema, name):
            raise InvalidArgument(f"not allowed to retrieve raw data of field {name}")
        elif schema.has_field(name):
            wanted.add(name)
            all_dynamic = all_dynamic or schema.field(name).is_dynamic
        elif dynamic is None:
            raise InvalidArgument(f"field {name} not exist")
        elif not _IDENTIFIER_RE.fullmatch(name):
            raise InvalidArgument(
                f"parse output field name failed: {name} (getting subkeys of a JSON field is not supported)"
            )
        else:
            wanted.add(dynamic.name)
            if name not in dynamic_keys:
                dynamic_keys.append(name)
    if include_pk:
        wanted.add(schema.primary_field.name)
    fields = [f.name for f in schema.fields if f.name in wanted]
    return OutputFields(fields=fields, dynamic_keys=[] if all_dynamic else dynamic_keys)


def table_to_fields_data(
    table: pa.Table,
    schema: CollectionSchema,
    output_fields: Sequence[str],
    *,
    include_pk: bool = True,
) -> list[schema_pb2.FieldData]:
    """The result columns for a request's ``output_fields`` (see
    ``resolve_output_fields``); ``table`` must hold those fields' columns."""
    resolved = resolve_output_fields(schema, output_fields, include_pk=include_pk)
    out = []
    for name in resolved.fields:
        if name not in table.column_names:
            raise ValueError(f"result table lacks column {name}")
        out.append(column_to_field_data(schema.field(name), table.column(name), dynamic_keys=resolved.dynamic_keys))
    return out


def column_to_field_data(
    field: FieldSchema,
    column: pa.Array | pa.ChunkedArray,
    *,
    dynamic_keys: Sequence[str] = (),
) -> schema_pb2.FieldData:
    """One Arrow column as Milvus returns it in query and search results."""
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    fd = schema_pb2.FieldData(
        type=int(field.dtype),
        field_name=field.name,
        field_id=field.field_id,
        is_dynamic=field.is_dynamic,
    )
    if field.dtype.is_vector and field.nullable:
        return nullable_vector_field_data(field, array, column_to_field_data)
    if field.dtype == DataType.FLOAT_VECTOR:
        fd.vectors.dim = field.dim
        flat = array.flatten().to_numpy(zero_copy_only=False)
        append_packed(fd.vectors.float_vector, "data", flat, np.float32)
        return fd
    if field.dtype.is_narrow_vector:
        narrow.fill_field_data(fd, field, array)
        return fd
    if field.dtype == DataType.BINARY_VECTOR:
        fd.vectors.dim = field.dim
        fd.vectors.binary_vector = binary_codes(array, field.code_size).tobytes()
        return fd
    if field.dtype == DataType.SPARSE_FLOAT_VECTOR:
        sparse_field_data(fd, array)
        return fd
    if field.nullable:
        fd.valid_data.extend(array.is_valid().to_numpy(zero_copy_only=False).tolist())
    slot = getattr(fd.scalars, SCALAR_SLOTS[field.dtype])
    slot.SetInParent()
    if field.dtype == DataType.ARRAY:
        _array_cells(fd.scalars.array_data, field.element_type, array)
    elif field.dtype == DataType.JSON:
        slot.data.extend(_json_cells(array.to_pylist(), field.is_dynamic, dynamic_keys))
    elif field.dtype == DataType.VARCHAR:
        slot.data.extend(_filled(array, "").to_pylist())
    elif field.dtype.is_floating:
        filled = _filled(array, 0).to_numpy(zero_copy_only=False)
        append_packed(slot, "data", filled, NUMPY_TYPES[field.dtype])
    else:
        filler = False if field.dtype == DataType.BOOL else 0
        slot.data.extend(_filled(array, filler).to_numpy(zero_copy_only=False).tolist())
    return fd


def _filled(array: pa.Array, filler: object) -> pa.Array:
    """``array`` with its nulls as ``filler`` (no compute call when it has none: the usual case)."""
    return pc.fill_null(array, filler) if array.null_count else array


def binary_codes(array: pa.Array, code_size: int) -> np.ndarray:
    """A ``fixed_size_binary`` column's rows as a ``(rows, code_size)`` uint8 matrix (null rows: zeros)."""
    if len(array) == 0:
        return np.empty((0, code_size), dtype=np.uint8)
    data = array.buffers()[1]
    codes = np.frombuffer(data, np.uint8, len(array) * code_size, array.offset * code_size).reshape(-1, code_size)
    if array.null_count:
        codes = codes.copy()
        codes[~array.is_valid().to_numpy(zero_copy_only=False)] = 0
    return codes


def _array_cells(out: schema_pb2.ArrayArray, element_type: DataType, array: pa.Array) -> None:
    """One ``ScalarField`` per row (an empty one for a null row)."""
    out.element_type = int(element_type)
    attr = SCALAR_SLOTS[element_type]
    for cell in array.to_pylist():
        values = getattr(out.data.add(), attr)
        values.SetInParent()  # an empty cell still names its slot
        values.data.extend(cell or ())


def _json_cells(texts: list[str | None], dynamic: bool, keys: Sequence[str]) -> list[bytes]:
    if not (dynamic and keys):
        return [_JSON_NULL if t is None else t.encode() for t in texts]
    cells = []
    for text in texts:
        obj = json.loads(text) if text is not None else {}
        picked = {k: obj[k] for k in keys if isinstance(obj, dict) and k in obj}
        cells.append(json.dumps(picked, separators=(",", ":")).encode())
    return cells


def append_packed(message: Message, field_name: str, values: np.ndarray, dtype: type) -> None:
    """Append to a repeated float/double field by merging its packed wire bytes.

    Orders of magnitude faster than ``extend`` for large vectors and score lists.
    """
    number = message.DESCRIPTOR.fields_by_name[field_name].number
    raw = np.ascontiguousarray(values, dtype=np.dtype(dtype).newbyteorder("<")).tobytes()
    if not raw:
        message.SetInParent()
        return
    message.MergeFromString(_varint((number << 3) | 2) + _varint(len(raw)) + raw)


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)
