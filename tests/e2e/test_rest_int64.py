"""The RESTful API's ``Accept-Type-Allow-Int64`` header against the session's standalone: with
``false`` int64 primary keys and Int64 fields are answered as strings (exact past 2^53), with
``true`` or without the header as JSON numbers (Milvus's default)."""

from __future__ import annotations

from pymilvus import DataType, MilvusClient

from tests.e2e.restutil import ok, wait_loaded
from tests.e2e.util import unique_name
from tests.harness import Standalone

BIG = 2**62 + 1  # not exact as a double
STRINGS = {"Accept-Type-Allow-Int64": "false"}


def test_int64_as_strings_or_numbers_by_header(standalone: Standalone, milvus: MilvusClient) -> None:
    name = unique_name("i64")
    schema = MilvusClient.create_schema(auto_id=False)
    schema.add_field("pk", DataType.INT64, is_primary=True)
    schema.add_field("n", DataType.INT64)
    schema.add_field("small", DataType.INT32)
    schema.add_field("v", DataType.FLOAT_VECTOR, dim=2)
    index = milvus.prepare_index_params()
    index.add_index("v", index_type="FLAT", metric_type="L2")
    milvus.create_collection(name, schema=schema, index_params=index)
    wait_loaded(standalone, name)
    row = {"pk": BIG, "n": BIG - 1, "small": 7, "v": [0.5, 0.5]}

    inserted = ok(standalone, "entities/insert", {"collectionName": name, "data": [row]}, STRINGS)
    assert inserted == {"insertCount": 1, "insertIds": [str(BIG)]}
    upserted = ok(standalone, "entities/upsert", {"collectionName": name, "data": [row]})
    assert upserted == {"upsertCount": 1, "upsertIds": [BIG]}  # no header: numbers

    query = {"collectionName": name, "filter": f"pk == {BIG}", "outputFields": ["pk", "n", "small"],
             "consistencyLevel": "Strong"}
    assert ok(standalone, "entities/query", query, STRINGS) == [{"pk": str(BIG), "n": str(BIG - 1), "small": 7}]
    assert ok(standalone, "entities/query", query, {"Accept-Type-Allow-Int64": "true"}) == [
        {"pk": BIG, "n": BIG - 1, "small": 7}]
    got = ok(standalone, "entities/get", {"collectionName": name, "id": [BIG], "outputFields": ["n"]}, STRINGS)
    assert got == [{"pk": str(BIG), "n": str(BIG - 1)}]

    search = {"collectionName": name, "data": [[0.5, 0.5]], "limit": 1, "outputFields": ["n", "small"],
              "consistencyLevel": "Strong"}
    [hit] = ok(standalone, "entities/search", search, STRINGS)
    assert (hit["id"], hit["n"], hit["small"]) == (str(BIG), str(BIG - 1), 7)
    [hit] = ok(standalone, "entities/search", search, {"Accept-Type-Allow-Int64": "not-a-bool"})  # the default
    assert (hit["id"], hit["n"]) == (BIG, BIG - 1)
