"""The RESTful API v2's entities over plain HTTP: a round trip with pymilvus (create and insert by
REST, search by both: the same hits), get, query, upsert, delete, hybrid search, other vectors."""

from __future__ import annotations

import base64
import random

import pytest
from pymilvus import MilvusClient

from tests.e2e.restutil import ok, post, wait_loaded
from tests.e2e.util import unique_name
from tests.harness import Standalone

DIM = 8


@pytest.fixture()
def collection(standalone: Standalone) -> str:
    """A quick-setup collection (L2) of 50 rows inserted by REST, loaded."""
    name = unique_name()
    ok(standalone, "collections/create", {"collectionName": name, "dimension": DIM, "metricType": "L2"})
    rng = random.Random(7)
    rows = [{"id": i, "vector": [rng.random() for _ in range(DIM)], "color": f"c{i % 3}", "n": i} for i in range(50)]
    inserted = ok(standalone, "entities/insert", {"collectionName": name, "data": rows})
    assert inserted == {"insertCount": 50, "insertIds": list(range(50))}
    wait_loaded(standalone, name)
    return name


def test_search_by_rest_and_by_pymilvus_agree(standalone: Standalone, milvus: MilvusClient, collection: str) -> None:
    query = [0.5] * DIM
    rest = ok(standalone, "entities/search", {"collectionName": collection, "data": [query], "limit": 5,
                                              "outputFields": ["color"], "filter": "n >= 10",
                                              "consistencyLevel": "Strong"})
    [grpc_hits] = milvus.search(collection, [query], limit=5, output_fields=["color"], filter="n >= 10")
    assert [h["id"] for h in rest] == [h["id"] for h in grpc_hits]
    assert [h["color"] for h in rest] == [h["entity"]["color"] for h in grpc_hits]
    for mine, theirs in zip(rest, grpc_hits, strict=True):
        assert set(mine) == {"id", "distance", "color"}
        assert mine["distance"] == pytest.approx(theirs["distance"], rel=1e-6)
        assert mine["id"] >= 10


def test_search_of_many_vectors_lists_every_hit_with_topks(standalone: Standalone, collection: str) -> None:
    answer = ok(standalone, "entities/search", {"collectionName": collection, "data": [[0.1] * DIM, [0.9] * DIM],
                                                "limit": 3, "searchParams": {"metricType": "L2", "params": {}}})
    assert len(answer) == 6
    full = post(standalone, "entities/search", {"collectionName": collection, "data": [[0.1] * DIM, [0.9] * DIM],
                                                "limit": 3})
    assert full["topks"] == [3, 3]


def test_get_query_upsert_delete(standalone: Standalone, milvus: MilvusClient, collection: str) -> None:
    got = ok(standalone, "entities/get", {"collectionName": collection, "id": [3, 4], "outputFields": ["color", "n"]})
    assert sorted(got, key=lambda r: r["id"]) == [{"id": 3, "color": "c0", "n": 3}, {"id": 4, "color": "c1", "n": 4}]
    queried = ok(standalone, "entities/query", {"collectionName": collection, "filter": "n < 20 and color == 'c2'",
                                                "outputFields": ["n"], "limit": 3})
    assert sorted(r["n"] for r in queried) == [2, 5, 8]
    assert ok(standalone, "entities/upsert", {"collectionName": collection, "data": [
        {"id": 3, "vector": [0.0] * DIM, "color": "new", "n": 300}]}) == {"upsertCount": 1, "upsertIds": [3]}
    assert milvus.get(collection, ids=[3], output_fields=["color"])[0]["color"] == "new"
    assert ok(standalone, "entities/delete", {"collectionName": collection, "filter": "id in [3, 4]"}) == {}
    assert milvus.query(collection, filter="id in [3, 4]") == []
    assert ok(standalone, "entities/get", {"collectionName": collection, "id": 3}) == []
    counted = ok(standalone, "entities/query", {"collectionName": collection, "filter": "id >= 0",
                                                "outputFields": ["count(*)"]})
    assert counted == [{"count(*)": 48}]


def test_hybrid_search(standalone: Standalone, milvus: MilvusClient) -> None:
    name = unique_name()
    ok(standalone, "collections/create", {"collectionName": name, "schema": {"fields": [
        {"fieldName": "id", "dataType": "Int64", "isPrimary": True},
        {"fieldName": "a", "dataType": "FloatVector", "elementTypeParams": {"dim": 4}},
        {"fieldName": "b", "dataType": "FloatVector", "elementTypeParams": {"dim": 4}},
    ]}, "indexParams": [{"fieldName": "a", "metricType": "L2"}, {"fieldName": "b", "metricType": "L2"}]})
    rows = [{"id": i, "a": [i, 0, 0, 0], "b": [0, i, 0, 0]} for i in range(10)]
    ok(standalone, "entities/insert", {"collectionName": name, "data": rows})
    wait_loaded(standalone, name)
    hits = ok(standalone, "entities/hybrid_search", {
        "collectionName": name, "limit": 3, "rerank": {"strategy": "rrf", "params": {"k": 10}},
        "search": [{"data": [[2, 0, 0, 0]], "annsField": "a", "limit": 5},
                   {"data": [[0, 2, 0, 0]], "annsField": "b", "limit": 5}]})
    assert hits[0]["id"] == 2 and len(hits) == 3
    weighted = ok(standalone, "entities/hybrid_search", {
        "collectionName": name, "limit": 2, "rerank": {"strategy": "weighted", "params": {"weights": [0.5, 0.5]}},
        "search": [{"data": [[7, 0, 0, 0]], "annsField": "a"}, {"data": [[0, 7, 0, 0]], "annsField": "b"}]})
    assert weighted[0]["id"] == 7
    ok(standalone, "collections/drop", {"collectionName": name})


def test_binary_and_sparse_vectors(standalone: Standalone, milvus: MilvusClient) -> None:
    name = unique_name()
    ok(standalone, "collections/create", {"collectionName": name, "schema": {"fields": [
        {"fieldName": "id", "dataType": "VarChar", "isPrimary": True, "elementTypeParams": {"max_length": 16}},
        {"fieldName": "bits", "dataType": "BinaryVector", "elementTypeParams": {"dim": 16}},
        {"fieldName": "sparse", "dataType": "SparseFloatVector"},
    ]}, "indexParams": [{"fieldName": "bits", "metricType": "HAMMING", "indexType": "BIN_FLAT"},
                        {"fieldName": "sparse", "metricType": "IP", "indexType": "SPARSE_INVERTED_INDEX"}]})
    rows = [{"id": f"k{i}", "bits": [i, 255 - i], "sparse": {str(i + 1): 1.0}} for i in range(6)]
    assert ok(standalone, "entities/insert", {"collectionName": name, "data": rows})["insertIds"] == [
        f"k{i}" for i in range(6)]
    wait_loaded(standalone, name)
    [hit, *_] = ok(standalone, "entities/search", {"collectionName": name, "annsField": "bits",
                                                   "data": [[4, 251]], "limit": 2})
    assert hit == {"id": "k4", "distance": 0}
    [hit] = ok(standalone, "entities/search", {"collectionName": name, "annsField": "sparse",
                                               "data": [{"3": 2.0}], "limit": 1})
    assert hit["id"] == "k2"
    [row] = ok(standalone, "entities/get", {"collectionName": name, "id": "k1", "outputFields": ["bits"]})
    assert row == {"id": "k1", "bits": base64.b64encode(bytes([1, 254])).decode()}  # Go's []byte in JSON
    ok(standalone, "collections/drop", {"collectionName": name})


def test_a_large_insert_and_answer(standalone: Standalone, milvus: MilvusClient) -> None:
    """Over 1 MiB of JSON and 1,000 rows each way (parsed, converted and answered in threads)."""
    name = unique_name()
    ok(standalone, "collections/create", {"collectionName": name, "dimension": 32})
    rng = random.Random(3)
    rows = [{"id": i, "vector": [rng.random() for _ in range(32)]} for i in range(3000)]
    inserted = ok(standalone, "entities/insert", {"collectionName": name, "data": rows})
    assert inserted["insertCount"] == 3000 and inserted["insertIds"] == list(range(3000))
    wait_loaded(standalone, name)
    got = ok(standalone, "entities/query", {"collectionName": name, "filter": "id >= 500", "limit": 2000,
                                            "outputFields": ["id"], "consistencyLevel": "Strong"})
    assert len(got) == 2000 and all(r["id"] >= 500 for r in got)
    assert milvus.query(name, filter="id >= 0", output_fields=["count(*)"])[0]["count(*)"] == 3000
    ok(standalone, "collections/drop", {"collectionName": name})
