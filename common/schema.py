"""The collection schema as Strata's domain code sees it.

Protobuf stops at the service edges: the proxy converts Milvus' ``schema_pb2``
messages into these frozen dataclasses, and every internal component stores
and ships them as JSON (``to_json``/``from_json``).

Data travels as Arrow. ``arrow_schema()`` is the one place that decides the
Arrow type of each Milvus data type:

* scalars map to the matching Arrow primitive (``VARCHAR`` -> ``string``);
* ``JSON`` (and the dynamic field ``$meta``) -> ``string`` holding JSON text;
* ``ARRAY`` -> ``list<element>``, the element's scalar Arrow type (an
  ``ARRAY`` of ``VARCHAR`` is ``list<string>``); elements are never null;
* ``FLOAT_VECTOR`` -> ``fixed_size_list<float32>[dim]``;
* ``BINARY_VECTOR`` -> ``fixed_size_binary[dim / 8]``: the ``dim`` bits of a row
  packed into bytes exactly as the client sent them (pymilvus: ``bytes`` of
  ``dim / 8`` per row, usually ``np.packbits``; every metric counts bits, so
  the bit order within a byte does not matter); one value buffer of exactly
  ``rows * dim / 8`` bytes, so a column is a ``(rows, dim / 8)`` uint8 matrix
  without a copy, and Parquet stores it as ``FIXED_LEN_BYTE_ARRAY``;
* ``SPARSE_FLOAT_VECTOR`` -> ``binary``: each row's ``(index, value)`` pairs
  packed exactly as Milvus stores and sends them (little-endian uint32 index,
  float32 value, 8 bytes a pair, indices ascending; an empty row is zero
  bytes). Variable length, so no fixed-size type fits; ``binary`` is Parquet's
  ``BYTE_ARRAY`` and Spark's ``BinaryType``, and its offsets / 8 and data
  buffer are the row pointers, indices and values of a CSR matrix without a
  copy (``segcore/segments/sparse_rows.py``); a sparse field has no ``dim``;
* ``FLOAT16_VECTOR`` / ``BFLOAT16_VECTOR`` -> ``fixed_size_binary[dim * 2]``, the
  little-endian IEEE half / bfloat16 bits of each element as the client sent them;
  ``INT8_VECTOR`` -> ``fixed_size_binary[dim]``; a column is a ``(rows, dim)``
  float16 / uint16 (bfloat16 bits) / int8 matrix without a copy
  (``common/narrow_vectors.py``), Parquet stores it as ``FIXED_LEN_BYTE_ARRAY``;
* every row also carries the system column ``_ts`` (uint64 hybrid timestamp
  of the WAL message that carried it).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from enum import IntEnum
from typing import Any

import pyarrow as pa

TIMESTAMP_COLUMN = "_ts"
DYNAMIC_FIELD_NAME = "$meta"


class DataType(IntEnum):
    """Milvus data type numbers (``schema.proto`` ``DataType``)."""

    NONE = 0
    BOOL = 1
    INT8 = 2
    INT16 = 3
    INT32 = 4
    INT64 = 5
    FLOAT = 10
    DOUBLE = 11
    STRING = 20
    VARCHAR = 21
    ARRAY = 22
    JSON = 23
    BINARY_VECTOR = 100
    FLOAT_VECTOR = 101
    FLOAT16_VECTOR = 102
    BFLOAT16_VECTOR = 103
    SPARSE_FLOAT_VECTOR = 104
    INT8_VECTOR = 105

    @property
    def is_vector(self) -> bool:
        return self.value >= 100

    @property
    def is_binary_vector(self) -> bool:
        return self is DataType.BINARY_VECTOR

    @property
    def is_sparse_vector(self) -> bool:
        return self is DataType.SPARSE_FLOAT_VECTOR

    @property
    def is_narrow_vector(self) -> bool:
        """A dense vector of 2- or 1-byte elements: FLOAT16, BFLOAT16 or INT8 (``narrow_vectors.py``)."""
        return self in (DataType.FLOAT16_VECTOR, DataType.BFLOAT16_VECTOR, DataType.INT8_VECTOR)

    @property
    def is_integer(self) -> bool:
        return self in (DataType.INT8, DataType.INT16, DataType.INT32, DataType.INT64)

    @property
    def is_floating(self) -> bool:
        return self in (DataType.FLOAT, DataType.DOUBLE)


#: Types this build can store and serve. Others are refused at create time.
SUPPORTED_TYPES = frozenset(
    {
        DataType.BOOL,
        DataType.INT8,
        DataType.INT16,
        DataType.INT32,
        DataType.INT64,
        DataType.FLOAT,
        DataType.DOUBLE,
        DataType.VARCHAR,
        DataType.JSON,
        DataType.ARRAY,
        DataType.FLOAT_VECTOR,
        DataType.BINARY_VECTOR,
        DataType.SPARSE_FLOAT_VECTOR,
        DataType.FLOAT16_VECTOR,
        DataType.BFLOAT16_VECTOR,
        DataType.INT8_VECTOR,
    }
)

#: Types an ``ARRAY`` field's elements may have.
ARRAY_ELEMENT_TYPES = frozenset(
    {
        DataType.BOOL,
        DataType.INT8,
        DataType.INT16,
        DataType.INT32,
        DataType.INT64,
        DataType.FLOAT,
        DataType.DOUBLE,
        DataType.VARCHAR,
    }
)

_SCALAR_ARROW: dict[DataType, pa.DataType] = {
    DataType.BOOL: pa.bool_(),
    DataType.INT8: pa.int8(),
    DataType.INT16: pa.int16(),
    DataType.INT32: pa.int32(),
    DataType.INT64: pa.int64(),
    DataType.FLOAT: pa.float32(),
    DataType.DOUBLE: pa.float64(),
    DataType.VARCHAR: pa.string(),
    DataType.STRING: pa.string(),
    DataType.JSON: pa.string(),
}


@dataclass(frozen=True, slots=True, kw_only=True)
class FieldSchema:
    """One field of a collection.

    ``max_length`` bounds a ``VARCHAR`` value, or each element of an ``ARRAY``
    of ``VARCHAR``. ``element_type`` and ``max_capacity`` (the most elements
    a row may hold) are set for ``ARRAY`` fields only. ``added`` marks a field
    added to the live collection (``AddCollectionField``): files written before
    it lack its column, which readers fill (``common/schema_evolution.py``).
    """

    field_id: int
    name: str
    dtype: DataType
    description: str = ""
    is_primary: bool = False
    auto_id: bool = False
    dim: int = 0
    max_length: int = 0
    nullable: bool = False
    is_dynamic: bool = False
    is_partition_key: bool = False
    default_value: Any = None
    type_params: dict[str, str] = field(default_factory=dict)
    element_type: DataType = DataType.NONE
    max_capacity: int = 0
    added: bool = False

    @property
    def code_size(self) -> int:
        """Bytes per row of a ``BINARY_VECTOR`` field (``dim / 8``), of a FLOAT16 or BFLOAT16
        one (``dim * 2``) or an INT8 one (``dim``); 0 for other types."""
        if self.dtype == DataType.BINARY_VECTOR:
            return self.dim // 8
        if self.dtype in (DataType.FLOAT16_VECTOR, DataType.BFLOAT16_VECTOR):
            return self.dim * 2
        return self.dim if self.dtype == DataType.INT8_VECTOR else 0

    def arrow_type(self) -> pa.DataType:
        """The Arrow type this field's column has everywhere in Strata."""
        if self.dtype == DataType.FLOAT_VECTOR:
            return pa.list_(pa.float32(), self.dim)
        if self.dtype == DataType.BINARY_VECTOR or self.dtype.is_narrow_vector:
            return pa.binary(self.code_size)
        if self.dtype == DataType.SPARSE_FLOAT_VECTOR:
            return pa.binary()
        if self.dtype == DataType.ARRAY:
            if self.element_type not in ARRAY_ELEMENT_TYPES:
                raise ValueError(f"ARRAY field {self.name} has element type {self.element_type.name}")
            return pa.list_(_SCALAR_ARROW[self.element_type])
        try:
            return _SCALAR_ARROW[self.dtype]
        except KeyError:
            raise ValueError(f"data type {self.dtype.name} has no Arrow mapping") from None


@dataclass(frozen=True, slots=True, kw_only=True)
class FunctionSchema:
    """A function of the collection (Milvus ``FunctionSchema``): the server computes its output
    fields from its input fields. ``kind`` is Milvus' ``FunctionType`` number (1 = BM25; see
    ``common/fulltext/functions.py``)."""

    name: str
    kind: int
    input_field_names: tuple[str, ...]
    output_field_names: tuple[str, ...]
    description: str = ""
    params: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class CollectionSchema:
    """A collection's fields. Field order is the user's order; a field added to a live collection
    (``AddCollectionField``) comes last, with the next field id.

    ``version`` counts the schema's changes (0 at create, +1 per added or altered field): a
    component that holds the schema takes a changed one only if its version is higher
    (``common/schema_evolution.py``).
    """

    name: str
    fields: tuple[FieldSchema, ...]
    description: str = ""
    enable_dynamic_field: bool = False
    version: int = 0
    functions: tuple[FunctionSchema, ...] = ()

    @property
    def primary_field(self) -> FieldSchema:
        for f in self.fields:
            if f.is_primary:
                return f
        raise ValueError(f"collection {self.name} has no primary key field")

    @property
    def vector_fields(self) -> tuple[FieldSchema, ...]:
        return tuple(f for f in self.fields if f.dtype.is_vector)

    @property
    def dynamic_field(self) -> FieldSchema | None:
        for f in self.fields:
            if f.is_dynamic:
                return f
        return None

    def field(self, name: str) -> FieldSchema:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(name)

    def has_field(self, name: str) -> bool:
        return any(f.name == name for f in self.fields)

    @property
    def next_field_id(self) -> int:
        """The id a field added now gets: one above every id in use."""
        return max(f.field_id for f in self.fields) + 1

    def arrow_schema(self, *, with_timestamp: bool = True) -> pa.Schema:
        """Arrow schema of stored rows: user fields in order, then ``_ts``."""
        cols = [pa.field(f.name, f.arrow_type(), nullable=True) for f in self.fields]
        if with_timestamp:
            cols.append(pa.field(TIMESTAMP_COLUMN, pa.uint64(), nullable=False))
        return pa.schema(cols)

    def to_json(self) -> str:
        d = asdict(self)
        d["fields"] = [_field_dict(f) for f in self.fields]
        if not self.functions:
            d.pop("functions")  # the JSON of a schema without functions stays as it was
        return json.dumps(d, sort_keys=True)

    @staticmethod
    def from_json(text: str | bytes) -> CollectionSchema:
        """The schema ``to_json`` wrote; JSON from before ARRAY fields (or versions) reads too."""
        d = json.loads(text)
        fields = tuple(_field_from_dict(f) for f in d.pop("fields"))
        functions = tuple(
            FunctionSchema(**{**f, "input_field_names": tuple(f["input_field_names"]),
                              "output_field_names": tuple(f["output_field_names"])})
            for f in d.pop("functions", ())
        )
        return CollectionSchema(fields=fields, functions=functions, **d)


def field_to_json(field: FieldSchema) -> str:
    """One field as JSON (``AddCollectionField`` ships the new field so)."""
    return json.dumps(_field_dict(field), sort_keys=True)


def field_from_json(text: str | bytes) -> FieldSchema:
    return _field_from_dict(json.loads(text))


def _field_dict(field: FieldSchema) -> dict[str, Any]:
    d = asdict(field)
    d["dtype"] = int(field.dtype)
    d["element_type"] = int(field.element_type)
    return d


def _field_from_dict(d: dict[str, Any]) -> FieldSchema:
    return FieldSchema(
        **{**d, "dtype": DataType(d["dtype"]), "element_type": DataType(d.get("element_type", DataType.NONE))}
    )
