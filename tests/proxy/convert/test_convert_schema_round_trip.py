"""CreateCollection / DescribeCollection schema conversion of a full schema, driven by pymilvus: what a client
sends comes back from DescribeCollection as it was sent, and pymilvus reads it as Milvus's."""

from __future__ import annotations

from typing import Any

from pymilvus import CollectionSchema as OrmCollectionSchema
from pymilvus import DataType as PmType
from pymilvus import FieldSchema as OrmFieldSchema
from pymilvus import MilvusClient
from pymilvus.client.abstract import CollectionSchema as DescribedSchema
from pymilvus.client.prepare import Prepare
from pymilvus.grpc_gen import milvus_pb2, schema_pb2

from common.schema import CollectionSchema
from proxy.convert import schema_from_proto, schema_to_proto


def sent(schema: OrmCollectionSchema, name: str = "c") -> schema_pb2.CollectionSchema:
    """The schema proto pymilvus sends in CreateCollection."""
    return Prepare.get_schema_from_collection_schema(name, schema)


def described(schema: CollectionSchema) -> dict[str, Any]:
    """What pymilvus' describe_collection makes of our DescribeCollection answer."""
    resp = milvus_pb2.DescribeCollectionResponse(schema=schema_to_proto(schema))
    return DescribedSchema(resp).dict()


def full_schema() -> OrmCollectionSchema:
    s = MilvusClient.create_schema(enable_dynamic_field=True, description="books")
    s.add_field("pk", PmType.VARCHAR, is_primary=True, max_length=32)
    s.add_field("flag", PmType.BOOL, default_value=True)
    s.add_field("i8", PmType.INT8, default_value=5)
    s.add_field("i16", PmType.INT16, nullable=True)
    s.add_field("i32", PmType.INT32)
    s.add_field("i64", PmType.INT64, is_partition_key=True)
    s.add_field("f", PmType.FLOAT, default_value=1.5)
    s.add_field("d", PmType.DOUBLE, nullable=True, default_value=2.5)
    s.add_field("title", PmType.VARCHAR, max_length=10, default_value="x", description="hi")
    s.add_field("meta", PmType.JSON, nullable=True)
    s.add_field("vec", PmType.FLOAT_VECTOR, dim=4, mmap_enabled=True)
    return s


def test_full_schema_round_trip() -> None:
    pb = sent(full_schema())
    schema = schema_from_proto(pb, collection_name="c")
    assert [f.field_id for f in schema.fields] == list(range(100, 112))
    assert schema.description == "books"
    f = schema.field("i8")
    assert f.default_value == 5 and not f.nullable
    assert schema.field("d").default_value == 2.5 and schema.field("d").nullable
    assert schema.field("flag").default_value is True
    assert schema.field("title").default_value == "x"
    assert schema.field("title").description == "hi"
    assert schema.field("i64").is_partition_key
    assert schema.field("vec").type_params == {"mmap.enabled": "true", "dim": "4"}

    back = schema_to_proto(schema)
    assert back.name == "c" and back.enable_dynamic_field
    # Every field comes back as the client sent it, with its id filled in.
    for ours, theirs in zip(back.fields, pb.fields, strict=True):
        theirs.fieldID = ours.fieldID
        assert ours == theirs
    # And it survives the domain's own JSON form.
    assert CollectionSchema.from_json(schema.to_json()) == schema


def test_describe_hides_dynamic_field_like_milvus() -> None:
    schema = schema_from_proto(sent(full_schema()), collection_name="c")
    info = described(schema)
    assert "$meta" not in [f["name"] for f in info["fields"]]
    assert info["enable_dynamic_field"] is True
    assert info["auto_id"] is False
    vec = next(f for f in info["fields"] if f["name"] == "vec")
    assert vec["params"]["dim"] == 4 and vec["field_id"] == 110
    title = next(f for f in info["fields"] if f["name"] == "title")
    assert title["params"]["max_length"] == 10
    assert title["default_value"].string_data == "x"

    full = schema_to_proto(schema, include_dynamic=True)
    assert full.fields[-1].name == "$meta" and full.fields[-1].is_dynamic


def test_orm_schema_and_collection_level_auto_id() -> None:
    fields = [
        OrmFieldSchema("id", PmType.INT64, is_primary=True),
        OrmFieldSchema("emb", PmType.FLOAT_VECTOR, dim=2),
    ]
    pb = sent(OrmCollectionSchema(fields, auto_id=True))
    schema = schema_from_proto(pb, collection_name="c")
    assert schema.primary_field.auto_id
    assert schema.dynamic_field is None
    assert described(schema)["auto_id"] is True

    pb.fields[0].autoID = False
    pb.autoID = True
    assert schema_from_proto(pb, collection_name="c").primary_field.auto_id


def test_describe_feeds_pymilvus_row_insert(connect: Any) -> None:
    handler, fake = connect(full_schema())
    info = handler.describe_collection("c")
    assert [f["name"] for f in info["fields"]][-1] == "vec"
    # pymilvus packs unknown keys into its own $meta FieldData.
    handler.insert_rows("c", [{"pk": "a", "i32": 1, "i64": 2, "vec": [0.0] * 4, "extra": 1}])
    req = fake.requests[-1]
    meta = next(fd for fd in req.fields_data if fd.is_dynamic)
    assert meta.field_name == "$meta" and meta.scalars.json_data.data == [b'{"extra":1}']
