"""A field for ``AddCollectionField`` and properties for ``AlterCollectionField``, checked as Milvus 2.6 does.

``added_field_from_proto`` runs Milvus 2.6's proxy checks of an added field, in its
order and with its messages (``addCollectionFieldTask.PreExecute``: the field count,
the type, system names, primary key, auto id, partition key, the vector count and
dimension, nullable; then the field's own rules, as at create). As in Milvus 2.6.18,
a nullable vector field may be added. The coordinator then refuses a name in use
("field already exists, name: X") and assigns the id.

``check_field_properties`` runs ``alterCollectionFieldTask.PreExecute``'s checks of
``max_length``, ``max_capacity`` and ``mmap.enabled`` (the only keys Milvus 2.6 lets
a field change) and of the keys to remove (``mmap.enabled`` only).
"""

from __future__ import annotations

from dataclasses import dataclass

from pymilvus.grpc_gen import schema_pb2

from common.errors import InvalidArgument
from common.schema import DYNAMIC_FIELD_NAME, SUPPORTED_TYPES, CollectionSchema, DataType, FieldSchema
from proxy.convert.schema import (
    MAX_ARRAY_CAPACITY,
    MAX_FIELDS,
    MAX_VARCHAR_LENGTH,
    MAX_VECTOR_FIELDS,
    field_from_proto,
    type_name,
    validate_field_name,
)

#: Names Milvus keeps for its own columns (``RowID``, ``Timestamp``, the dynamic field).
SYSTEM_FIELD_NAMES = frozenset({"RowID", "Timestamp", DYNAMIC_FIELD_NAME})
_DENSE_VECTORS = frozenset(
    {
        DataType.FLOAT_VECTOR,
        DataType.BINARY_VECTOR,
        DataType.FLOAT16_VECTOR,
        DataType.BFLOAT16_VECTOR,
        DataType.INT8_VECTOR,
    }
)
_KNOWN_TYPES = frozenset(schema_pb2.DataType.values())

MMAP_ENABLED_KEY = "mmap.enabled"
_MMAP_ENABLED_OLD_KEY = "mmap_enabled"  # renamed to MMAP_ENABLED_KEY, as Milvus does
MAX_LENGTH_KEY = "max_length"
MAX_CAPACITY_KEY = "max_capacity"
ALTERABLE_KEYS = (MAX_LENGTH_KEY, MMAP_ENABLED_KEY, MAX_CAPACITY_KEY)
DROPPABLE_KEYS = (MMAP_ENABLED_KEY,)


def added_field_from_proto(fpb: schema_pb2.FieldSchema, schema: CollectionSchema) -> FieldSchema:
    """The field a client asks to add to the collection of ``schema`` (its id is assigned later).

    Raises:
        InvalidArgument: one of Milvus' rules is broken; the message is Milvus'.
    """
    name = fpb.name
    if len(schema.fields) >= MAX_FIELDS:
        raise InvalidArgument(f"The number of fields has reached the maximum value {MAX_FIELDS}")
    if fpb.data_type not in _KNOWN_TYPES or fpb.data_type == DataType.NONE:
        raise InvalidArgument(
            f"invalid parameter[expected=valid field][actual=field data type: {type_name(fpb.data_type)} is not supported]"
        )
    if name in SYSTEM_FIELD_NAMES:
        raise InvalidArgument(f"not support to add system field, field name = {name}")
    if fpb.is_primary_key:
        raise InvalidArgument(f"not support to add pk field, field name = {name}")
    if fpb.autoID:
        raise InvalidArgument(f"only primary field can speficy AutoID with true, field name = {name}")
    if fpb.is_partition_key:
        raise InvalidArgument(f"not support to add partition key field, field name  = {name}")
    is_vector = DataType.BINARY_VECTOR <= fpb.data_type < 200  # the vector types, ArrayOfVector too
    if is_vector and len(schema.vector_fields) >= MAX_VECTOR_FIELDS:
        raise InvalidArgument(f"maximum vector field's number should be limited to {MAX_VECTOR_FIELDS}")
    if fpb.data_type in _DENSE_VECTORS and not fpb.type_params:
        raise InvalidArgument(f"vector field must have dimension specified, field name = {name}")
    if not fpb.nullable:
        raise InvalidArgument(f"added field must be nullable, please check it, field name = {name}")
    validate_field_name(name)
    if fpb.is_dynamic:
        raise InvalidArgument("cannot explicitly set a field as a dynamic field")
    if fpb.data_type not in SUPPORTED_TYPES:
        raise InvalidArgument(f"data type {type_name(fpb.data_type)} is not supported yet (field `{name}`)")
    return field_from_proto(fpb, 0, False, schema.name)


@dataclass(frozen=True, slots=True)
class FieldChange:
    """What ``AlterCollectionField`` sets and removes, keys as Milvus stores them."""

    properties: dict[str, str]
    delete_keys: list[str]
    touches_mmap: bool


def field_change(
    schema: CollectionSchema, field_name: str, properties: dict[str, str], delete_keys: list[str]
) -> FieldChange:
    """Check ``AlterCollectionField``'s properties against the field (Milvus' messages; a field that does
    not exist is the coordinator's to refuse, as Milvus' root coordinator does).

    Raises:
        InvalidArgument: a key that may not be set or removed, or a bad value.
    """
    field = schema.field(field_name) if schema.has_field(field_name) else None
    props = {_renamed(k): v for k, v in properties.items()}
    for key, value in props.items():
        if key not in ALTERABLE_KEYS:
            raise InvalidArgument(f"{key} does not allow update in collection field param")
        if key == MAX_LENGTH_KEY:
            _check_max_length(field, value)
        elif key == MAX_CAPACITY_KEY:
            _check_max_capacity(field, value)
    dropped = []
    for key in delete_keys:
        if _renamed(key) not in DROPPABLE_KEYS:
            raise InvalidArgument(f"{key} is not allowed to drop in collection field param")
        dropped.append(_renamed(key))
    return FieldChange(props, dropped, touches_mmap=MMAP_ENABLED_KEY in props or bool(dropped))


def _renamed(key: str) -> str:
    return MMAP_ENABLED_KEY if key == _MMAP_ENABLED_OLD_KEY else key


def _check_max_length(field: FieldSchema | None, value: str) -> None:
    is_string = field is not None and (field.dtype == DataType.VARCHAR or field.element_type == DataType.VARCHAR)
    if not is_string:
        # Milvus names the field only when it found a string field: the name is empty here.
        raise InvalidArgument(" can not modify the maxlength for non-string types")
    try:
        length = int(value)
    except ValueError:
        raise InvalidArgument(f"{MAX_LENGTH_KEY} should be an integer, but got string") from None
    if length > MAX_VARCHAR_LENGTH:
        raise InvalidArgument(f"{value} exceeds the maximum allowed value {MAX_VARCHAR_LENGTH}")


def _check_max_capacity(field: FieldSchema | None, value: str) -> None:
    if field is None or field.dtype != DataType.ARRAY:
        raise InvalidArgument(" can not modify the maxcapacity for non-array types")
    try:
        capacity = int(value)
    except ValueError:
        raise InvalidArgument(f"the value for {MAX_CAPACITY_KEY} of field {field.name} must be an integer") from None
    if not 0 < capacity <= MAX_ARRAY_CAPACITY:
        raise InvalidArgument(f"the maximum capacity specified for a Array should be in (0, {MAX_ARRAY_CAPACITY}]")
