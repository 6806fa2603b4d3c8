"""Aliases, renames and collection properties through pymilvus, against the session's standalone."""

from __future__ import annotations

import pytest
from pymilvus import DataType, MilvusClient, MilvusException

from tests.e2e.util import unique_name


def _collection(milvus: MilvusClient, rows: range) -> str:
    name = unique_name("al")
    schema = MilvusClient.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("v", DataType.FLOAT_VECTOR, dim=4)
    params = milvus.prepare_index_params()
    params.add_index("v", index_type="FLAT", metric_type="L2")
    milvus.create_collection(name, schema=schema, index_params=params)
    milvus.insert(name, [{"id": i, "v": [float(i), 0.0, 0.0, 0.0]} for i in rows])
    return name


def _ids(milvus: MilvusClient, name: str) -> list[int]:
    return sorted(r["id"] for r in milvus.query(name, filter="id >= 0", consistency_level="Strong"))


def test_an_alias_reads_and_writes_its_collection_and_moves_in_one_step(milvus: MilvusClient) -> None:
    blue, green = _collection(milvus, range(0, 3)), _collection(milvus, range(10, 12))
    alias = unique_name("live")
    milvus.create_alias(blue, alias)
    assert _ids(milvus, alias) == [0, 1, 2]
    milvus.insert(alias, [{"id": 5, "v": [5.0, 0.0, 0.0, 0.0]}])
    assert _ids(milvus, blue) == [0, 1, 2, 5]
    assert milvus.describe_alias(alias)["collection_name"] == blue
    assert milvus.list_aliases(blue)["aliases"] == [alias]
    assert milvus.describe_collection(blue)["aliases"] == [alias]
    hits = milvus.search(alias, data=[[0.0, 0.0, 0.0, 0.0]], limit=1, consistency_level="Strong")
    assert hits[0][0]["id"] == 0

    milvus.alter_alias(green, alias)
    assert _ids(milvus, alias) == [10, 11]
    assert milvus.list_aliases(blue)["aliases"] == []

    with pytest.raises(MilvusException, match="cannot drop the collection via alias"):
        milvus.drop_collection(alias)
    with pytest.raises(MilvusException, match="associated aliases"):
        milvus.drop_collection(green)
    with pytest.raises(MilvusException, match="alias"):
        milvus.create_alias(blue, green)  # a collection's name cannot be an alias
    with pytest.raises(MilvusException, match="is an alias"):
        milvus.create_collection(alias, dimension=4)
    with pytest.raises(MilvusException, match="alias not found"):
        milvus.describe_alias(unique_name("nope"))
    with pytest.raises(MilvusException, match="Invalid collection alias"):
        milvus.create_alias(blue, "1bad")
    milvus.drop_alias(alias)
    milvus.drop_alias(alias)  # again: a no-op
    assert not milvus.has_collection(alias)
    milvus.drop_collection(green)
    milvus.drop_collection(blue)


def test_rename_keeps_data_and_aliases(milvus: MilvusClient) -> None:
    old = _collection(milvus, range(0, 4))
    alias, new = unique_name("a"), unique_name("renamed")
    milvus.create_alias(old, alias)
    milvus.rename_collection(old, new)
    assert not milvus.has_collection(old) and milvus.has_collection(new)
    assert _ids(milvus, new) == [0, 1, 2, 3]
    assert milvus.describe_alias(alias)["collection_name"] == new
    other = _collection(milvus, range(0, 1))
    with pytest.raises(MilvusException, match="duplicated new collection name"):
        milvus.rename_collection(other, new)
    with pytest.raises(MilvusException, match="Invalid collection name"):
        milvus.rename_collection(other, "bad-name")
    assert _ids(milvus, other) == [0]
    milvus.drop_alias(alias)
    milvus.drop_collection(new)
    milvus.drop_collection(other)


def test_collection_properties_are_altered_and_dropped(milvus: MilvusClient) -> None:
    name = _collection(milvus, range(0, 1))
    milvus.alter_collection_properties(name, properties={"collection.ttl.seconds": 3600, "custom.key": "x"})
    props = milvus.describe_collection(name)["properties"]
    assert props["collection.ttl.seconds"] == "3600" and props["custom.key"] == "x"
    milvus.drop_collection_properties(name, property_keys=["custom.key"])
    props = milvus.describe_collection(name)["properties"]
    assert "custom.key" not in props and props["collection.ttl.seconds"] == "3600"
    with pytest.raises(MilvusException, match="non-negative integer"):
        milvus.alter_collection_properties(name, properties={"collection.ttl.seconds": "soon"})
    assert milvus.describe_collection(name)["properties"]["collection.ttl.seconds"] == "3600"
    milvus.drop_collection(name)


def test_bad_collection_names_are_refused(milvus: MilvusClient) -> None:
    for bad in ("1abc", "a-b", "x" * 256):
        with pytest.raises(MilvusException, match="Invalid collection name"):
            milvus.create_collection(bad, dimension=4)
