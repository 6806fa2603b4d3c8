"""Upsert into an auto-id collection, as Milvus 2.6 does it: the rows get new keys, the named rows go.

Milvus's proxy (``task_upsert.go``, ``checkUpsertPrimaryFieldData``) allocates a new
primary key for every upserted row of an auto-id collection and deletes the rows of
the keys the request named; the answer's ``ids`` are the new keys.
"""

from __future__ import annotations

import grpc
import pytest
from pymilvus import DataType, MilvusClient, MilvusException
from pymilvus.grpc_gen import milvus_pb2, milvus_pb2_grpc, schema_pb2

from tests.e2e.util import unique_name
from tests.harness import Standalone


def _collection(milvus: MilvusClient) -> str:
    name = unique_name("autoup")
    schema = MilvusClient.create_schema(auto_id=True)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("x", DataType.INT64)
    schema.add_field("v", DataType.FLOAT_VECTOR, dim=2)
    index = milvus.prepare_index_params()
    index.add_index("v", metric_type="L2", index_type="FLAT")
    milvus.create_collection(name, schema=schema, index_params=index, num_shards=2)
    return name


def _rows(milvus: MilvusClient, name: str) -> dict[int, int]:
    got = milvus.query(name, filter="id >= 0", output_fields=["x"], consistency_level="Strong")
    return {r["id"]: r["x"] for r in got}


def test_upsert_gives_new_keys_and_deletes_the_named_rows(milvus: MilvusClient) -> None:
    name = _collection(milvus)
    old = list(milvus.insert(name, [{"x": i, "v": [float(i), 0.0]} for i in range(4)])["ids"])
    res = milvus.upsert(name, [{"id": old[0], "x": 100, "v": [0.0, 1.0]}, {"id": old[1], "x": 101, "v": [1.0, 1.0]}])
    new = list(res["ids"])
    assert res["upsert_count"] == 2
    assert len(new) == 2 and not set(new) & set(old)
    assert _rows(milvus, name) == {old[2]: 2, old[3]: 3, new[0]: 100, new[1]: 101}
    assert milvus.query(name, filter="", output_fields=["count(*)"], consistency_level="Strong")[0]["count(*)"] == 4
    milvus.drop_collection(name)


def test_upsert_of_a_key_that_does_not_exist_inserts_a_row_with_a_new_key(milvus: MilvusClient) -> None:
    name = _collection(milvus)
    res = milvus.upsert(name, [{"id": 12345, "x": 7, "v": [0.0, 0.0]}])
    [new] = list(res["ids"])
    assert new != 12345
    assert _rows(milvus, name) == {new: 7}
    milvus.drop_collection(name)


def test_upsert_without_the_key_is_refused(milvus: MilvusClient, standalone: Standalone) -> None:
    name = _collection(milvus)
    milvus.insert(name, [{"x": 1, "v": [0.0, 0.0]}])
    # pymilvus always sends the key of an upsert: send the columns without it.
    columns = [
        schema_pb2.FieldData(field_name="x", type=schema_pb2.DataType.Int64,
                             scalars=schema_pb2.ScalarField(long_data=schema_pb2.LongArray(data=[2]))),
        schema_pb2.FieldData(field_name="v", type=schema_pb2.DataType.FloatVector,
                             vectors=schema_pb2.VectorField(dim=2, float_vector=schema_pb2.FloatArray(data=[1.0, 1.0]))),
    ]
    with grpc.insecure_channel(f"127.0.0.1:{standalone.port}") as channel:
        stub = milvus_pb2_grpc.MilvusServiceStub(channel)
        resp = stub.Upsert(milvus_pb2.UpsertRequest(collection_name=name, fields_data=columns, num_rows=1), timeout=30)
    assert resp.status.code == 1100
    assert "must assign pk when upsert, primary field: id" in resp.status.reason
    with pytest.raises(MilvusException, match="duplicate primary keys are not allowed in the same batch"):
        milvus.upsert(name, [{"id": 1, "x": 1, "v": [0.0, 0.0]}, {"id": 1, "x": 2, "v": [0.0, 0.0]}])
    assert list(_rows(milvus, name).values()) == [1]  # nothing changed
    milvus.drop_collection(name)
