"""Collection DDL through pymilvus against a real standalone cluster."""

from __future__ import annotations

import pytest
from pymilvus import DataType, MilvusClient, MilvusException

from tests.e2e.util import unique_name


def test_quick_create_describe_list_drop(milvus: MilvusClient) -> None:
    name = unique_name()
    milvus.create_collection(name, dimension=8, metric_type="L2")
    assert milvus.has_collection(name)
    assert name in milvus.list_collections()
    desc = milvus.describe_collection(name)
    fields = {f["name"]: f for f in desc["fields"]}
    assert fields["id"]["type"] == DataType.INT64 and fields["id"].get("is_primary")
    assert fields["vector"]["type"] == DataType.FLOAT_VECTOR
    assert fields["vector"]["params"]["dim"] == 8
    assert desc["enable_dynamic_field"] is True
    # The quick form loads the collection and creates an AUTOINDEX with the metric.
    assert milvus.get_load_state(name)["state"].name == "Loaded"
    index = milvus.describe_index(name, "vector")
    assert index["metric_type"] == "L2"
    milvus.drop_collection(name)
    assert not milvus.has_collection(name)
    assert name not in milvus.list_collections()


def test_quick_create_string_ids(milvus: MilvusClient) -> None:
    name = unique_name()
    milvus.create_collection(name, dimension=4, id_type="string", max_length=64, auto_id=False)
    desc = milvus.describe_collection(name)
    pk = next(f for f in desc["fields"] if f.get("is_primary"))
    assert pk["type"] == DataType.VARCHAR
    milvus.drop_collection(name)


def test_create_with_schema_all_types(milvus: MilvusClient) -> None:
    name = unique_name()
    schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=True)
    schema.add_field("pk", DataType.VARCHAR, is_primary=True, max_length=32)
    schema.add_field("b", DataType.BOOL)
    schema.add_field("i8", DataType.INT8)
    schema.add_field("i16", DataType.INT16)
    schema.add_field("i32", DataType.INT32)
    schema.add_field("i64", DataType.INT64)
    schema.add_field("f", DataType.FLOAT)
    schema.add_field("d", DataType.DOUBLE)
    schema.add_field("s", DataType.VARCHAR, max_length=100)
    schema.add_field("j", DataType.JSON)
    schema.add_field("v", DataType.FLOAT_VECTOR, dim=4)
    milvus.create_collection(name, schema=schema)
    desc = milvus.describe_collection(name)
    types = {f["name"]: f["type"] for f in desc["fields"]}
    assert types == {
        "pk": DataType.VARCHAR, "b": DataType.BOOL, "i8": DataType.INT8, "i16": DataType.INT16,
        "i32": DataType.INT32, "i64": DataType.INT64, "f": DataType.FLOAT, "d": DataType.DOUBLE,
        "s": DataType.VARCHAR, "j": DataType.JSON, "v": DataType.FLOAT_VECTOR,
    }  # fmt: skip
    # Not loaded until asked.
    assert milvus.get_load_state(name)["state"].name == "NotLoad"
    milvus.drop_collection(name)


def test_duplicate_collection_is_an_error(milvus: MilvusClient) -> None:
    name = unique_name()
    schema = MilvusClient.create_schema(auto_id=True)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("v", DataType.FLOAT_VECTOR, dim=4)
    milvus.create_collection(name, schema=schema)
    other = MilvusClient.create_schema(auto_id=True)
    other.add_field("id", DataType.INT64, is_primary=True)
    other.add_field("w", DataType.FLOAT_VECTOR, dim=8)
    with pytest.raises(MilvusException, match="already exists"):
        milvus.create_collection(name, schema=other)
    # Unchanged.
    assert {f["name"] for f in milvus.describe_collection(name)["fields"]} == {"id", "v"}
    milvus.drop_collection(name)


def test_unknown_collection_errors(milvus: MilvusClient) -> None:
    name = unique_name("missing")
    assert not milvus.has_collection(name)
    # Milvus' texts: DescribeCollection (which pymilvus' insert calls first) keeps its own wording.
    with pytest.raises(MilvusException, match=rf"can't find collection\[database=default\]\[collection={name}\]"):
        milvus.describe_collection(name)
    with pytest.raises(MilvusException, match=rf"can't find collection\[database=default\]\[collection={name}\]"):
        milvus.insert(name, [{"id": 1, "vector": [0.0] * 4}])
    with pytest.raises(MilvusException, match=rf"collection not found\[database=default\]\[collection={name}\]"):
        milvus.search(name, data=[[0.0] * 4], limit=1)


def test_invalid_schemas_are_refused(milvus: MilvusClient) -> None:
    name = unique_name()
    no_vector = MilvusClient.create_schema()
    no_vector.add_field("id", DataType.INT64, is_primary=True)
    with pytest.raises(MilvusException, match="vector"):
        milvus.create_collection(name, schema=no_vector)
    assert not milvus.has_collection(name)


def test_release_and_load(milvus: MilvusClient) -> None:
    name = unique_name()
    milvus.create_collection(name, dimension=4)
    milvus.release_collection(name)
    assert milvus.get_load_state(name)["state"].name == "NotLoad"
    with pytest.raises(MilvusException, match="not loaded"):
        milvus.search(name, data=[[0.1] * 4], limit=1)
    milvus.load_collection(name)
    assert milvus.get_load_state(name)["state"].name == "Loaded"
    milvus.drop_collection(name)


def test_create_describe_drop_index(milvus: MilvusClient) -> None:
    name = unique_name()
    schema = MilvusClient.create_schema(auto_id=True)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("v", DataType.FLOAT_VECTOR, dim=4)
    milvus.create_collection(name, schema=schema)
    assert milvus.list_indexes(name) == []
    params = milvus.prepare_index_params()
    params.add_index("v", index_type="HNSW", metric_type="IP", params={"M": 16, "efConstruction": 64})
    milvus.create_index(name, params)
    desc = milvus.describe_index(name, "v")
    assert desc["index_type"] == "HNSW" and desc["metric_type"] == "IP" and desc["field_name"] == "v"
    assert milvus.list_indexes(name) == ["v"]
    bad = milvus.prepare_index_params()
    bad.add_index("nope", index_type="AUTOINDEX", metric_type="L2")
    with pytest.raises(MilvusException, match="nope"):
        milvus.create_index(name, bad)
    milvus.drop_index(name, "v")
    assert milvus.list_indexes(name) == []
    milvus.drop_collection(name)
