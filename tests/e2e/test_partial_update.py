"""Partial update: ``upsert(..., partial_update=True)`` merges the given fields into the rows, as Milvus 2.6.

The rows of the named keys are read (a Strong query in the upsert's partition); a
key found keeps the fields the request leaves out, and its dynamic keys merge; a key
not found is inserted and then needs every field without a default that is not
nullable (``fieldSchema(<name>) has no corresponding fieldData pass in``, code 1100).
Cases follow Milvus's ``test_milvus_client_partial_update*`` tests.
"""

from __future__ import annotations

import pytest
from pymilvus import DataType, MilvusClient, MilvusException

from tests.e2e.util import unique_name


def _collection(milvus: MilvusClient, *, auto_id: bool = False) -> str:
    name = unique_name("partial")
    schema = MilvusClient.create_schema(auto_id=auto_id, enable_dynamic_field=True)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("v", DataType.FLOAT_VECTOR, dim=2)
    schema.add_field("name", DataType.VARCHAR, max_length=32)
    schema.add_field("price", DataType.DOUBLE, nullable=True)
    schema.add_field("tag", DataType.INT64, default_value=7)
    index = milvus.prepare_index_params()
    index.add_index("v", metric_type="L2", index_type="FLAT")
    milvus.create_collection(name, schema=schema, index_params=index, num_shards=2)
    return name


def _all(milvus: MilvusClient, name: str, **kwargs: object) -> dict[int, dict[str, object]]:
    got = milvus.query(name, filter="id >= 0", output_fields=["*"], consistency_level="Strong", **kwargs)
    return {r["id"]: {k: v for k, v in r.items() if k != "id"} for r in got}


def test_partial_update_keeps_the_fields_it_leaves_out(milvus: MilvusClient) -> None:
    name = _collection(milvus)
    milvus.insert(name, [
        {"id": 1, "v": [1.0, 0.0], "name": "a", "price": 1.5, "tag": 1, "colour": "red", "size": 3},
        {"id": 2, "v": [2.0, 0.0], "name": "b", "price": None, "tag": 2},
    ])
    res = milvus.upsert(name, [
        {"id": 1, "price": None, "colour": "blue", "shape": "round"},
        {"id": 2, "price": 9.0},
    ], partial_update=True)
    assert res["upsert_count"] == 2
    rows = _all(milvus, name)
    assert rows[1] == {"v": [1.0, 0.0], "name": "a", "price": None, "tag": 1, "colour": "blue", "size": 3,
                       "shape": "round"}
    assert rows[2] == {"v": [2.0, 0.0], "name": "b", "price": 9.0, "tag": 2}
    count = milvus.query(name, filter="", output_fields=["count(*)"], consistency_level="Strong")
    assert count[0]["count(*)"] == 2
    # The merged rows are searched by their kept vectors.
    hits = milvus.search(name, data=[[2.0, 0.0]], limit=1, output_fields=["price"], consistency_level="Strong")
    assert hits[0][0]["id"] == 2 and hits[0][0]["entity"]["price"] == 9.0
    milvus.drop_collection(name)


def test_partial_update_inserts_a_new_key_given_every_required_field(milvus: MilvusClient) -> None:
    name = _collection(milvus)
    milvus.insert(name, [{"id": 1, "v": [1.0, 0.0], "name": "a", "price": 1.0, "tag": 1}])
    milvus.upsert(name, [
        {"id": 1, "name": "a2", "v": [1.0, 1.0]},
        {"id": 5, "name": "e", "v": [5.0, 0.0]},
    ], partial_update=True)
    rows = _all(milvus, name)
    assert rows[1] == {"v": [1.0, 1.0], "name": "a2", "price": 1.0, "tag": 1}
    assert rows[5] == {"v": [5.0, 0.0], "name": "e", "price": None, "tag": 7}  # null, and the default
    milvus.drop_collection(name)


def test_partial_update_of_a_new_key_missing_a_required_field_is_refused(milvus: MilvusClient) -> None:
    name = _collection(milvus)
    milvus.insert(name, [{"id": 1, "v": [1.0, 0.0], "name": "a", "price": 1.0, "tag": 1}])
    with pytest.raises(MilvusException, match=r"fieldSchema\(v\) has no corresponding fieldData pass in") as err:
        milvus.upsert(name, [{"id": 1, "name": "x"}, {"id": 2, "name": "y"}], partial_update=True)
    assert err.value.code == 1100
    assert _all(milvus, name) == {1: {"v": [1.0, 0.0], "name": "a", "price": 1.0, "tag": 1}}  # nothing changed
    milvus.drop_collection(name)


def test_partial_update_reads_the_rows_of_its_own_partition(milvus: MilvusClient) -> None:
    name = _collection(milvus)
    milvus.create_partition(name, "p1")
    milvus.create_partition(name, "p2")
    milvus.insert(name, [{"id": 1, "v": [1.0, 0.0], "name": "a", "price": 1.0, "tag": 1}], partition_name="p1")
    # Key 1 lives in p1: in p2 it is a new key, which needs every required field.
    with pytest.raises(MilvusException, match=r"fieldSchema\(v\) has no corresponding fieldData pass in"):
        milvus.upsert(name, [{"id": 1, "name": "b"}], partition_name="p2", partial_update=True)
    milvus.upsert(name, [{"id": 1, "name": "c"}], partition_name="p1", partial_update=True)
    assert _all(milvus, name, partition_names=["p1"]) == {1: {"v": [1.0, 0.0], "name": "c", "price": 1.0, "tag": 1}}
    milvus.drop_collection(name)


def test_partial_update_in_an_auto_id_collection_gives_the_merged_row_a_new_key(milvus: MilvusClient) -> None:
    name = _collection(milvus, auto_id=True)
    [old] = list(milvus.insert(name, [{"v": [1.0, 0.0], "name": "a", "price": 1.0, "tag": 1}])["ids"])
    [new] = list(milvus.upsert(name, [{"id": old, "price": 2.0}], partial_update=True)["ids"])
    assert new != old
    assert _all(milvus, name) == {new: {"v": [1.0, 0.0], "name": "a", "price": 2.0, "tag": 1}}
    milvus.drop_collection(name)
