"""AlterCollectionField (Milvus 2.6) through pymilvus: ``max_length`` of a VARCHAR (and of an ARRAY of
VARCHAR's elements), ``max_capacity`` of an ARRAY, ``mmap.enabled`` of a released collection; every
other key, value or field is refused with Milvus' message and changes nothing."""

from __future__ import annotations

from typing import Any

import pytest
from pymilvus import DataType, MilvusClient, MilvusException

NAME = "alter_field_checks"


@pytest.fixture()
def collection(milvus: MilvusClient) -> Any:
    if milvus.has_collection(NAME):
        milvus.drop_collection(NAME)
    schema = MilvusClient.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("v", DataType.FLOAT_VECTOR, dim=2)
    schema.add_field("s", DataType.VARCHAR, max_length=4)
    schema.add_field("arr", DataType.ARRAY, element_type=DataType.INT64, max_capacity=2)
    schema.add_field("tags", DataType.ARRAY, element_type=DataType.VARCHAR, max_capacity=2, max_length=2)
    index = milvus.prepare_index_params()
    index.add_index("v", index_type="FLAT", metric_type="L2")
    milvus.create_collection(NAME, schema=schema, index_params=index)
    yield NAME
    milvus.drop_collection(NAME)


def _params(client: MilvusClient, field: str) -> dict[str, Any]:
    return next(f for f in client.describe_collection(NAME)["fields"] if f["name"] == field)["params"]


def _row(i: int, s: str = "ab", arr: list[int] | None = None, tags: list[str] | None = None) -> dict[str, Any]:
    return {"id": i, "v": [0.0, 1.0], "s": s, "arr": arr or [1], "tags": tags or ["a"]}


def test_max_length_and_max_capacity_are_raised_for_later_rows(milvus: MilvusClient, collection: str) -> None:
    with pytest.raises(MilvusException, match="length"):
        milvus.insert(collection, [_row(1, s="abcdef")])
    with pytest.raises(MilvusException, match="capacity|exceeds"):
        milvus.insert(collection, [_row(1, arr=[1, 2, 3])])
    with pytest.raises(MilvusException, match="length"):
        milvus.insert(collection, [_row(1, tags=["abc"])])
    milvus.alter_collection_field(collection, "s", field_params={"max_length": 8})
    milvus.alter_collection_field(collection, "arr", field_params={"max_capacity": 4})
    milvus.alter_collection_field(collection, "tags", field_params={"max_length": 3})
    assert _params(milvus, "s")["max_length"] == 8
    assert _params(milvus, "arr")["max_capacity"] == 4 and _params(milvus, "tags")["max_length"] == 3
    milvus.insert(collection, [_row(1, s="abcdef", arr=[1, 2, 3], tags=["abc"])])
    [row] = milvus.query(collection, filter="id == 1", output_fields=["s", "arr", "tags"], consistency_level="Strong")
    assert (row["s"], row["arr"], row["tags"]) == ("abcdef", [1, 2, 3], ["abc"])


def test_mmap_is_altered_on_a_released_collection_only(milvus: MilvusClient, collection: str) -> None:
    with pytest.raises(MilvusException) as err:
        milvus.alter_collection_field(collection, "s", field_params={"mmap.enabled": True})
    assert err.value.code == 104
    assert err.value.message == (
        f"can not alter collection field properties if collection loaded: collection already loaded[collection={NAME}]"
    )
    milvus.release_collection(collection)
    milvus.alter_collection_field(collection, "s", field_params={"mmap.enabled": True})
    assert _params(milvus, "s")["mmap_enabled"] is True  # pymilvus shows "mmap.enabled" so


@pytest.mark.parametrize(
    ("field", "params", "message"),
    [
        ("v", {"dim": 4}, "dim does not allow update in collection field param"),
        ("id", {"max_length": 8}, " can not modify the maxlength for non-string types"),
        ("s", {"max_length": "many"}, "max_length should be an integer, but got string"),
        ("s", {"max_length": 70000}, "70000 exceeds the maximum allowed value 65535"),
        ("s", {"max_capacity": 3}, " can not modify the maxcapacity for non-array types"),
        ("arr", {"max_capacity": 0}, "the maximum capacity specified for a Array should be in (0, 4096]"),
        ("arr", {"max_capacity": "x"}, "the value for max_capacity of field arr must be an integer"),
        ("nope", {"max_length": 8}, " can not modify the maxlength for non-string types"),
    ],
)
def test_what_milvus_does_not_let_a_field_change_is_refused(
    milvus: MilvusClient, collection: str, field: str, params: dict[str, Any], message: str
) -> None:
    before = milvus.describe_collection(collection)["fields"]
    with pytest.raises(MilvusException) as err:
        milvus.alter_collection_field(collection, field, field_params=params)
    assert (err.value.code, err.value.message) == (1100, message)
    assert milvus.describe_collection(collection)["fields"] == before


def test_a_missing_field_is_refused_by_the_coordinator(milvus: MilvusClient, collection: str) -> None:
    milvus.release_collection(collection)
    with pytest.raises(MilvusException, match="field nope does not exist in collection"):
        milvus.alter_collection_field(collection, "nope", field_params={"mmap.enabled": True})
