"""Collection schemas between Milvus' ``schema_pb2`` and Strata's domain schema.

``schema_from_proto`` is the CreateCollection edge: it validates the schema the
client built the way Milvus' proxy does (same rules, same wording where it
helps) and assigns field ids. ``schema_to_proto`` is the DescribeCollection
edge: it renders the schema the way Milvus returns it, which pymilvus then
caches and uses to pack inserts.

The dynamic field: a client never sends ``$meta``; it sets
``enable_dynamic_field`` and Milvus appends a JSON field ``$meta``
(``is_dynamic``) after the user's fields. DescribeCollection hides it again and
only reports ``enable_dynamic_field``; pymilvus then packs unknown row keys into
a ``$meta`` FieldData of its own.
"""

from __future__ import annotations

from typing import Any

from pymilvus.grpc_gen import common_pb2, schema_pb2

from common.errors import FieldNameInvalid, InvalidArgument
from common.fulltext.functions import check_text_field, function_to_proto, functions_from_proto, is_function_output
from common.jsonvalue import JsonTooDeep, load_json
from common.names import check_field_name
from common.schema import (
    ARRAY_ELEMENT_TYPES,
    DYNAMIC_FIELD_NAME,
    SUPPORTED_TYPES,
    TIMESTAMP_COLUMN,
    CollectionSchema,
    DataType,
    FieldSchema,
)
from proxy.convert.nullvectors import NULLABLE_VECTOR_TYPES

FIRST_FIELD_ID = 100
FIRST_FUNCTION_ID = 100
MAX_FIELDS = 64
#: Milvus' proxy.maxVectorFieldNum default (its range is [1, 10]): vector fields per collection.
MAX_VECTOR_FIELDS = 4
_VECTOR_TYPE_VALUES = frozenset(int(t) for t in DataType if t.is_vector)
MAX_VARCHAR_LENGTH = 65535
MAX_DIM = 32768
#: A binary vector's dim (bits): a multiple of 8, at most Milvus' proxy.maxDimension x 8.
MAX_BINARY_DIM = MAX_DIM * 8
MAX_ARRAY_CAPACITY = 4096
DIM_KEY = "dim"
MAX_LENGTH_KEY = "max_length"
MAX_CAPACITY_KEY = "max_capacity"
DYNAMIC_FIELD_DESCRIPTION = "dynamic schema"

_RESERVED_NAMES = frozenset({TIMESTAMP_COLUMN})
_KEY_TYPES = (DataType.INT64, DataType.VARCHAR)
_INT_RANGES = {
    DataType.INT8: (-(2**7), 2**7 - 1),
    DataType.INT16: (-(2**15), 2**15 - 1),
    DataType.INT32: (-(2**31), 2**31 - 1),
    DataType.INT64: (-(2**63), 2**63 - 1),
}


def type_name(dtype: int) -> str:
    """Milvus' spelling of a data type number (``Int64``, ``FloatVector``)."""
    try:
        return schema_pb2.DataType.Name(dtype)
    except ValueError:
        return str(dtype)


def validate_field_name(name: str) -> None:
    """Milvus' field name rule (``common/names.py``), and the system's own column names refused."""
    check_field_name(name)
    if name in _RESERVED_NAMES:
        raise FieldNameInvalid(f"Invalid field name: {name}. The name is reserved by the system.: field name invalid[field={name}]")


def schema_from_proto(pb: schema_pb2.CollectionSchema, *, collection_name: str) -> CollectionSchema:
    """Validate a client's schema and turn it into the domain schema.

    Field ids are assigned 100, 101, ... in the client's order; with
    ``enable_dynamic_field`` a ``$meta`` JSON field is appended last.

    Raises:
        InvalidArgument: the schema breaks one of Milvus' rules; the message
            names the rule and the field.
    """
    if pb.name and pb.name != collection_name:
        raise InvalidArgument(f"collection name ({collection_name}) does not match the schema name ({pb.name})")
    if len(pb.struct_array_fields) > 0:
        raise InvalidArgument(
            f"data type {type_name(schema_pb2.ArrayOfStruct)} is not supported yet "
            f"(field `{pb.struct_array_fields[0].name}`)"
        )
    if pb.enable_namespace:
        raise InvalidArgument("namespaces are not supported yet")
    if len(pb.fields) > MAX_FIELDS:
        raise InvalidArgument(f"maximum field's number should be limited to {MAX_FIELDS}")
    vectors = sum(1 for f in pb.fields if f.data_type in _VECTOR_TYPE_VALUES)
    if vectors > MAX_VECTOR_FIELDS:
        raise InvalidArgument(f"maximum vector field's number should be limited to {MAX_VECTOR_FIELDS}")

    seen: set[str] = set()
    for fpb in pb.fields:
        validate_field_name(fpb.name)
        if fpb.name in seen:
            raise InvalidArgument(f"duplicated field name {fpb.name} found")
        seen.add(fpb.name)
        if fpb.is_dynamic:
            raise InvalidArgument("cannot explicitly set a field as a dynamic field")
        if fpb.data_type not in SUPPORTED_TYPES:
            raise InvalidArgument(f"data type {type_name(fpb.data_type)} is not supported yet (field `{fpb.name}`)")
    _check_keys(pb)

    fields = [field_from_proto(fpb, FIRST_FIELD_ID + i, pb.autoID, collection_name) for i, fpb in enumerate(pb.fields)]
    for f in fields:
        check_text_field(f)
    functions = functions_from_proto(pb.functions, fields)
    if pb.enable_dynamic_field:
        fields.append(
            FieldSchema(
                field_id=FIRST_FIELD_ID + len(fields),
                name=DYNAMIC_FIELD_NAME,
                dtype=DataType.JSON,
                description=DYNAMIC_FIELD_DESCRIPTION,
                is_dynamic=True,
            )
        )
    return CollectionSchema(
        name=collection_name,
        fields=tuple(fields),
        description=pb.description,
        enable_dynamic_field=pb.enable_dynamic_field,
        functions=functions,
    )


def _check_keys(pb: schema_pb2.CollectionSchema) -> None:
    """Primary key, auto id, vector and partition key rules across fields."""
    primaries = [f for f in pb.fields if f.is_primary_key]
    if not primaries:
        raise InvalidArgument("primary key is not specified")
    if len(primaries) > 1:
        names = ", ".join(f.name for f in primaries)
        raise InvalidArgument(f"there are more than one primary key, field names: {names}")
    pk = primaries[0]
    if pk.data_type not in _KEY_TYPES:
        raise InvalidArgument(
            f"the data type of primary key should be Int64 or VarChar, "
            f"but field `{pk.name}` is {type_name(pk.data_type)}"
        )
    for f in pb.fields:
        if f.autoID and not f.is_primary_key:
            raise InvalidArgument(f"only primary field can specify AutoID with true, field name = {f.name}")
    if not any(DataType(f.data_type).is_vector for f in pb.fields):
        raise InvalidArgument("schema does not contain vector field")
    partition_keys = [f for f in pb.fields if f.is_partition_key]
    if len(partition_keys) > 1:
        names = ", ".join(f.name for f in partition_keys)
        raise InvalidArgument(f"there are more than one partition key, field names: {names}")
    for f in partition_keys:
        if f.is_primary_key:
            raise InvalidArgument("the partition key field must not be primary field")
        if f.data_type not in _KEY_TYPES:
            raise InvalidArgument(
                f"the data type of partition key should be Int64 or VarChar, "
                f"but field `{f.name}` is {type_name(f.data_type)}"
            )
        if f.nullable:
            raise InvalidArgument(f"partition key field `{f.name}` does not support nullable")


def field_from_proto(
    fpb: schema_pb2.FieldSchema, field_id: int, collection_auto_id: bool, collection: str
) -> FieldSchema:
    dtype = DataType(fpb.data_type)
    params: dict[str, str] = {}
    for kv in fpb.type_params:
        if kv.key in params:
            raise InvalidArgument(f"duplicated type param key {kv.key} in field `{fpb.name}`")
        params[kv.key] = kv.value

    dim = 0
    max_length = 0
    element_type = DataType.NONE
    max_capacity = 0
    if dtype == DataType.FLOAT_VECTOR or dtype.is_narrow_vector:
        dim = _parse_dim(fpb.name, params)
        params[DIM_KEY] = str(dim)
    if dtype == DataType.BINARY_VECTOR:
        dim = _parse_binary_dim(fpb.name, params)
        params[DIM_KEY] = str(dim)
    if dtype == DataType.SPARSE_FLOAT_VECTOR and DIM_KEY in params:
        raise InvalidArgument(f"dim should not be specified for sparse vector field {fpb.name}({field_id})")
    if dtype == DataType.ARRAY:
        element_type = _parse_element_type(fpb)
        max_capacity = _parse_max_capacity(fpb.name, params, collection)
        params[MAX_CAPACITY_KEY] = str(max_capacity)
    if dtype == DataType.VARCHAR or element_type == DataType.VARCHAR:
        max_length = _parse_max_length(fpb.name, params, collection)
        params[MAX_LENGTH_KEY] = str(max_length)

    if fpb.nullable and fpb.is_primary_key:
        raise InvalidArgument(f"primary field not support null, field name = {fpb.name}")
    if fpb.nullable and dtype.is_vector and dtype not in NULLABLE_VECTOR_TYPES:
        raise InvalidArgument(f"vector type not support null, field name = {fpb.name}")

    default: Any = None
    if fpb.HasField("default_value") and fpb.default_value.WhichOneof("data") is not None:
        if fpb.is_primary_key:
            raise InvalidArgument(f"primary key can't be with default value, field `{fpb.name}`")
        if dtype.is_vector:
            raise InvalidArgument(f"vector type not support default value, field `{fpb.name}`")
        if dtype == DataType.ARRAY:
            raise InvalidArgument(f"ARRAY type not support default value, field `{fpb.name}`")
        default = _default_from_proto(fpb.name, dtype, fpb.default_value, max_length)

    return FieldSchema(
        field_id=field_id,
        name=fpb.name,
        dtype=dtype,
        description=fpb.description,
        is_primary=fpb.is_primary_key,
        auto_id=fpb.is_primary_key and (fpb.autoID or collection_auto_id),
        dim=dim,
        max_length=max_length,
        nullable=fpb.nullable,
        is_partition_key=fpb.is_partition_key,
        default_value=default,
        type_params=params,
        element_type=element_type,
        max_capacity=max_capacity,
    )


def _parse_element_type(fpb: schema_pb2.FieldSchema) -> DataType:
    raw = fpb.element_type
    if raw == DataType.NONE:
        raise InvalidArgument(f"element data type None is not valid: set element_type for array field `{fpb.name}`")
    if raw == DataType.STRING:
        raise InvalidArgument(
            f"string data type not supported yet, please use VarChar type instead "
            f"(element type of array field `{fpb.name}`)"
        )
    if raw not in ARRAY_ELEMENT_TYPES:
        raise InvalidArgument(
            f"element type {type_name(raw)} is not supported for array field `{fpb.name}`; "
            f"use Bool, Int8, Int16, Int32, Int64, Float, Double or VarChar"
        )
    return DataType(raw)


def _parse_max_capacity(name: str, params: dict[str, str], collection: str) -> int:
    raw = params.get(MAX_CAPACITY_KEY)
    if raw is None:
        raise InvalidArgument(
            f"type param(max_capacity) should be specified for array field {name} of collection {collection}"
        )
    try:
        capacity = int(raw)
    except ValueError:
        raise InvalidArgument(
            f"the value for {MAX_CAPACITY_KEY} of field {name} must be an integer, got {raw!r}"
        ) from None
    if not 0 < capacity <= MAX_ARRAY_CAPACITY:
        raise InvalidArgument(
            f"the maximum capacity specified for a Array should be in (0, {MAX_ARRAY_CAPACITY}], "
            f"but got {capacity} for field {name}"
        )
    return capacity


def _parse_dim(name: str, params: dict[str, str]) -> int:
    raw = params.get(DIM_KEY)
    if raw is None:
        raise InvalidArgument(
            f"dimension is not defined in field type params of field {name}, check type param `dim` for vector field"
        )
    try:
        dim = int(raw)
    except ValueError:
        raise InvalidArgument(f"dim of field {name} must be an integer, got {raw!r}") from None
    if not 1 <= dim <= MAX_DIM:
        raise InvalidArgument(
            f"invalid dimension: {dim} of field {name}. float vector dimension should be in range 1 ~ {MAX_DIM}"
        )
    return dim


def _parse_binary_dim(name: str, params: dict[str, str]) -> int:
    """A ``BINARY_VECTOR`` field's dim, checked as Milvus' proxy does (multiple of 8 first)."""
    raw = params.get(DIM_KEY)
    if raw is None:
        raise InvalidArgument(
            f"dimension is not defined in field type params of field {name}, check type param `dim` for vector field"
        )
    try:
        dim = int(raw)
    except ValueError:
        raise InvalidArgument(f"dim of field {name} must be an integer, got {raw!r}") from None
    if dim <= 1:
        raise InvalidArgument(f"invalid dimension: {dim}. should be in range 2 ~ {MAX_DIM}")
    if dim % 8:
        raise InvalidArgument(
            f"invalid dimension: {dim} of field {name}. binary vector dimension should be multiple of 8. "
        )
    if dim > MAX_BINARY_DIM:
        raise InvalidArgument(
            f"invalid dimension: {dim} of field {name}. binary vector dimension should be in range 2 ~ {MAX_BINARY_DIM}"
        )
    return dim


def _parse_max_length(name: str, params: dict[str, str], collection: str) -> int:
    raw = params.get(MAX_LENGTH_KEY)
    if raw is None:
        raise InvalidArgument(
            f"type param(max_length) should be specified for the field({name}) of collection {collection}"
        )
    try:
        max_length = int(raw)
    except ValueError:
        raise InvalidArgument(f"max_length of field {name} must be an integer, got {raw!r}") from None
    if not 0 < max_length <= MAX_VARCHAR_LENGTH:
        raise InvalidArgument(
            f"the maximum length specified for the field({name}) should be in "
            f"(0, {MAX_VARCHAR_LENGTH}], but got {max_length} instead"
        )
    return max_length


# Which ValueField slots carry a default for each type. pymilvus sends every
# integer default in ``long_data`` (even for Int8), other SDKs use ``int_data``.
_DEFAULT_SLOTS: dict[DataType, tuple[str, ...]] = {
    DataType.BOOL: ("bool_data",),
    DataType.INT8: ("int_data", "long_data"),
    DataType.INT16: ("int_data", "long_data"),
    DataType.INT32: ("int_data", "long_data"),
    DataType.INT64: ("long_data", "int_data"),
    DataType.FLOAT: ("float_data", "double_data"),
    DataType.DOUBLE: ("double_data", "float_data"),
    DataType.VARCHAR: ("string_data",),
    DataType.JSON: ("bytes_data", "string_data"),
}


def _default_from_proto(name: str, dtype: DataType, value: schema_pb2.ValueField, max_length: int) -> Any:
    slot = value.WhichOneof("data")
    if slot not in _DEFAULT_SLOTS.get(dtype, ()):
        raise InvalidArgument(
            f"type ({type_name(dtype)}) of field ({name}) is not equal to the type({slot}) of default_value"
        )
    raw = getattr(value, slot)
    if dtype in _INT_RANGES:
        low, high = _INT_RANGES[dtype]
        if not low <= raw <= high:
            raise InvalidArgument(f"default value {raw} of field ({name}) is out of range of {type_name(dtype)}")
        return int(raw)
    if dtype == DataType.VARCHAR:
        size = len(raw.encode())
        if size > max_length:
            raise InvalidArgument(
                f"the length ({size}) of string exceeds max length ({max_length}) "
                f"in the default value of field ({name})"
            )
        return raw
    if dtype == DataType.JSON:
        text = raw.decode() if isinstance(raw, bytes) else raw
        try:
            load_json(text)
        except JsonTooDeep as err:
            raise InvalidArgument(f"default value of JSON field ({name}): {err}") from None
        except ValueError:
            raise InvalidArgument(f"default value of JSON field ({name}) is not valid JSON") from None
        return text
    return raw


def default_to_proto(dtype: DataType, value: Any) -> schema_pb2.ValueField:
    """The ValueField Milvus reports for a default value (pymilvus' slots)."""
    if dtype == DataType.BOOL:
        return schema_pb2.ValueField(bool_data=bool(value))
    if dtype.is_integer:
        return schema_pb2.ValueField(long_data=int(value))
    if dtype == DataType.FLOAT:
        return schema_pb2.ValueField(float_data=float(value))
    if dtype == DataType.DOUBLE:
        return schema_pb2.ValueField(double_data=float(value))
    if dtype == DataType.JSON:
        return schema_pb2.ValueField(bytes_data=str(value).encode())
    return schema_pb2.ValueField(string_data=str(value))


def field_to_proto(field: FieldSchema, *, function_output: bool = False) -> schema_pb2.FieldSchema:
    """One field as DescribeCollection reports it (type params as strings)."""
    params = dict(field.type_params)
    if field.dim:
        params[DIM_KEY] = str(field.dim)
    if field.max_length:
        params[MAX_LENGTH_KEY] = str(field.max_length)
    if field.max_capacity:
        params[MAX_CAPACITY_KEY] = str(field.max_capacity)
    pb = schema_pb2.FieldSchema(
        fieldID=field.field_id,
        name=field.name,
        is_primary_key=field.is_primary,
        description=field.description,
        data_type=int(field.dtype),
        type_params=[common_pb2.KeyValuePair(key=k, value=v) for k, v in params.items()],
        autoID=field.auto_id,
        is_dynamic=field.is_dynamic,
        is_partition_key=field.is_partition_key,
        nullable=field.nullable,
        element_type=int(field.element_type),
        is_function_output=function_output,
    )
    if field.default_value is not None:
        pb.default_value.CopyFrom(default_to_proto(field.dtype, field.default_value))
    return pb


def schema_to_proto(schema: CollectionSchema, *, include_dynamic: bool = False) -> schema_pb2.CollectionSchema:
    """The schema as Milvus' DescribeCollection returns it.

    Like Milvus, the ``$meta`` field is left out (``enable_dynamic_field`` says
    it exists); pass ``include_dynamic=True`` for the full internal form.
    """
    pk = next((f for f in schema.fields if f.is_primary), None)
    pb = schema_pb2.CollectionSchema(
        name=schema.name,
        description=schema.description,
        autoID=pk.auto_id if pk is not None else False,
        enable_dynamic_field=schema.enable_dynamic_field or schema.dynamic_field is not None,
    )
    for field in schema.fields:
        if field.is_dynamic and not include_dynamic:
            continue
        pb.fields.append(field_to_proto(field, function_output=is_function_output(schema, field.name)))
    for i, fn in enumerate(schema.functions):
        pb.functions.append(function_to_proto(fn, schema, FIRST_FUNCTION_ID + i))
    return pb
