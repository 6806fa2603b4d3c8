"""CreateCollection schema conversion of the quick form (``create_collection(name, dimension=...)``: pymilvus builds
the schema client side), driven by pymilvus."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from pymilvus.grpc_gen import schema_pb2

from common.errors import InvalidArgument
from common.schema import DataType
from proxy.convert import schema_from_proto


def test_quick_form_int_id(quick_create: Callable[..., schema_pb2.CollectionSchema]) -> None:
    pb = quick_create("quick", dimension=8)
    # pymilvus builds the schema client side: id Int64 pk, vector dim 8, dynamic on.
    assert [(f.name, f.data_type) for f in pb.fields] == [
        ("id", schema_pb2.Int64),
        ("vector", schema_pb2.FloatVector),
    ]
    assert pb.enable_dynamic_field and not pb.autoID

    schema = schema_from_proto(pb, collection_name="quick")
    assert [(f.field_id, f.name, f.dtype) for f in schema.fields] == [
        (100, "id", DataType.INT64),
        (101, "vector", DataType.FLOAT_VECTOR),
        (102, "$meta", DataType.JSON),
    ]
    assert schema.primary_field.name == "id" and not schema.primary_field.auto_id
    assert schema.field("vector").dim == 8
    meta = schema.dynamic_field
    assert meta is not None and meta.is_dynamic and meta.description == "dynamic schema"


def test_quick_form_string_id_and_auto_id(
    quick_create: Callable[..., schema_pb2.CollectionSchema],
) -> None:
    pb = quick_create("q2", dimension=4, id_type="string", max_length=64, primary_field_name="key")
    schema = schema_from_proto(pb, collection_name="q2")
    assert schema.primary_field.dtype == DataType.VARCHAR
    assert schema.primary_field.max_length == 64

    pb = quick_create("q3", dimension=4, auto_id=True, vector_field_name="emb")
    assert pb.autoID
    schema = schema_from_proto(pb, collection_name="q3")
    assert schema.primary_field.auto_id
    assert [f.name for f in schema.vector_fields] == ["emb"]


def test_quick_form_string_id_without_max_length_is_refused(
    quick_create: Callable[..., schema_pb2.CollectionSchema],
) -> None:
    # pymilvus sends a VarChar key with no max_length; Milvus refuses it too.
    pb = quick_create("q4", dimension=4, id_type="string")
    with pytest.raises(InvalidArgument, match=r"max_length\) should be specified.*id"):
        schema_from_proto(pb, collection_name="q4")
