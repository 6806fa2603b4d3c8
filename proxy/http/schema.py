"""Collection schemas between the RESTful API's JSON and ``schema_pb2`` (``collections/create``,
``collections/describe``), with Milvus 2.6's names: ``fieldName``, ``dataType``, ``isPrimary``,
``elementTypeParams``, ``elementDataType``, ``isPartitionKey``, ``nullable``, ``defaultValue``."""

from __future__ import annotations

from typing import Any

from pymilvus.grpc_gen import common_pb2, milvus_pb2, schema_pb2

from proxy.http.body import Body
from proxy.http.errors import invalid, missing

VECTOR_TYPES = frozenset({
    schema_pb2.FloatVector, schema_pb2.BinaryVector, schema_pb2.Float16Vector, schema_pb2.BFloat16Vector,
    schema_pb2.SparseFloatVector, schema_pb2.Int8Vector,
})

_TYPE_NAMES = frozenset(schema_pb2.DataType.keys()) - {"None"}
_FUNCTION_TYPES = frozenset(schema_pb2.FunctionType.keys())
_LEVELS = frozenset(common_pb2.ConsistencyLevel.keys())


def consistency(name: Any) -> int:
    """A ``ConsistencyLevel`` from its Milvus name (``Strong``, ``Bounded``, ``Session``, ``Eventually``)."""
    if not isinstance(name, str) or name not in _LEVELS:
        raise invalid(f"invalid consistencyLevel: {name!r}")
    return int(common_pb2.ConsistencyLevel.Value(name))


def data_type(name: Any, what: str) -> int:
    """A ``DataType`` from its Milvus name (``Int64``, ``FloatVector``, ...)."""
    if not isinstance(name, str) or name not in _TYPE_NAMES:
        raise invalid(f"invalid {what}: {name!r}")
    return int(schema_pb2.DataType.Value(name))


def _params(values: dict[str, Any]) -> list[common_pb2.KeyValuePair]:
    return [common_pb2.KeyValuePair(key=k, value=str(v).lower() if isinstance(v, bool) else str(v))
            for k, v in values.items()]


def _default_value(kind: int, value: Any) -> schema_pb2.ValueField:
    if kind == schema_pb2.Bool:
        return schema_pb2.ValueField(bool_data=bool(value))
    if kind in (schema_pb2.Int8, schema_pb2.Int16, schema_pb2.Int32):
        return schema_pb2.ValueField(int_data=int(value))
    if kind == schema_pb2.Int64:
        return schema_pb2.ValueField(long_data=int(value))
    if kind == schema_pb2.Float:
        return schema_pb2.ValueField(float_data=float(value))
    if kind == schema_pb2.Double:
        return schema_pb2.ValueField(double_data=float(value))
    if kind in (schema_pb2.VarChar, schema_pb2.String):
        return schema_pb2.ValueField(string_data=str(value))
    raise invalid(f"a default value is not supported for {schema_pb2.DataType.Name(kind)}")


def field_from_json(raw: Any, auto_id: bool) -> schema_pb2.FieldSchema:
    if not isinstance(raw, dict):
        raise invalid("each of `schema.fields` must be an object")
    f = Body(raw)
    kind = data_type(f.required("dataType"), "dataType")
    field = schema_pb2.FieldSchema(
        name=f.name("fieldName"),
        data_type=kind,  # an int of the enum
        description=f.text("description"),
        is_primary_key=f.flag("isPrimary", False),
        is_partition_key=f.flag("isPartitionKey", False),
        is_clustering_key=f.flag("isClusteringKey", False),
        nullable=f.flag("nullable", False),
        type_params=_params(f.mapping("elementTypeParams")),
    )
    if field.is_primary_key:
        field.autoID = auto_id
    if kind == schema_pb2.Array:
        field.element_type = data_type(f.required("elementDataType"), "elementDataType")
    if f.raw("defaultValue") is not None:
        field.default_value.CopyFrom(_default_value(kind, f.raw("defaultValue")))
    return field


def custom_schema(name: str, body: Body) -> schema_pb2.CollectionSchema:
    """``schema``: ``{"autoId", "enableDynamicField", "fields": [...], "functions": [...]}``."""
    s = Body(body.mapping("schema"))
    fields = s.raw("fields")
    if not isinstance(fields, list) or not fields:
        raise missing("schema.fields")
    auto_id = s.flag("autoId", s.flag("autoID", False))
    dynamic = s.flag("enableDynamicField", s.flag("enabledDynamicField", False))
    schema = schema_pb2.CollectionSchema(name=name, description=body.text("description"), enable_dynamic_field=dynamic)
    schema.fields.extend(field_from_json(f, auto_id) for f in fields)
    for raw in s.raw("functions") or []:
        fn = Body(raw if isinstance(raw, dict) else {})
        kind = fn.required("type")
        if kind not in _FUNCTION_TYPES:
            raise invalid(f"invalid function type: {kind!r}")
        schema.functions.append(schema_pb2.FunctionSchema(
            name=fn.name("name"), description=fn.text("description"),
            type=schema_pb2.FunctionType.Value(kind),
            input_field_names=fn.strings("inputFieldNames"), output_field_names=fn.strings("outputFieldNames"),
            params=_params(fn.mapping("params")),
        ))
    return schema


def quick_schema(name: str, body: Body) -> schema_pb2.CollectionSchema:
    """Quick setup: a primary key (``idType`` Int64 or VarChar) and one FloatVector of ``dimension``,
    dynamic fields on (Milvus's defaults: ``id`` and ``vector``)."""
    dim = body.integer("dimension", 0)
    id_type = body.text("idType", "Int64")
    pk_kind = data_type(id_type, "idType")
    if pk_kind not in (schema_pb2.Int64, schema_pb2.VarChar):
        raise invalid(f"idType must be Int64 or VarChar, got {id_type!r}")
    params = body.mapping("params")
    pk = schema_pb2.FieldSchema(name=body.text("primaryFieldName", "id"), data_type=pk_kind,
                                is_primary_key=True, autoID=body.flag("autoID", body.flag("autoId", False)))
    if pk_kind == schema_pb2.VarChar:
        pk.type_params.append(common_pb2.KeyValuePair(key="max_length", value=str(params.get("max_length", 65535))))
    vector = schema_pb2.FieldSchema(name=body.text("vectorFieldName", "vector"), data_type=schema_pb2.FloatVector,
                                    type_params=[common_pb2.KeyValuePair(key="dim", value=str(dim))])
    dynamic = params.get("enableDynamicField", True)
    return schema_pb2.CollectionSchema(name=name, fields=[pk, vector], enable_dynamic_field=bool(dynamic))


def _field_json(f: schema_pb2.FieldSchema) -> dict[str, Any]:
    out: dict[str, Any] = {
        "autoId": f.autoID, "clusteringKey": f.is_clustering_key, "description": f.description, "id": f.fieldID,
        "name": f.name, "nullable": f.nullable, "partitionKey": f.is_partition_key, "primaryKey": f.is_primary_key,
        "type": schema_pb2.DataType.Name(f.data_type),
    }
    if f.type_params:
        out["params"] = [{"key": p.key, "value": p.value} for p in f.type_params]
    if f.data_type == schema_pb2.Array:
        out["elementType"] = schema_pb2.DataType.Name(f.element_type)
    if f.HasField("default_value"):
        kind = f.default_value.WhichOneof("data")
        out["defaultValue"] = getattr(f.default_value, kind) if kind else None
    return out


def describe_json(resp: milvus_pb2.DescribeCollectionResponse, indexes: list[dict[str, Any]], load: str,
                  partitions: int) -> dict[str, Any]:
    s = resp.schema
    return {
        "aliases": list(resp.aliases),
        "autoId": any(f.autoID for f in s.fields if f.is_primary_key),
        "collectionID": resp.collectionID,
        "collectionName": resp.collection_name,
        "consistencyLevel": common_pb2.ConsistencyLevel.Name(resp.consistency_level),
        "description": s.description,
        "enableDynamicField": s.enable_dynamic_field,
        "fields": [_field_json(f) for f in s.fields if f.name != "$meta"],
        "functions": [
            {"name": fn.name, "description": fn.description, "type": schema_pb2.FunctionType.Name(fn.type),
             "inputFieldNames": list(fn.input_field_names), "outputFieldNames": list(fn.output_field_names),
             "params": [{"key": p.key, "value": p.value} for p in fn.params]}
            for fn in s.functions
        ],
        "indexes": indexes,
        "load": load,
        "partitionsNum": partitions,
        "properties": [{"key": p.key, "value": p.value} for p in resp.properties],
        "shardsNum": resp.shards_num,
    }
