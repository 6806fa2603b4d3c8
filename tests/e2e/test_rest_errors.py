"""Refused RESTful requests: Milvus's codes and messages (the same as pymilvus gets over gRPC for
the handlers' own errors), nothing changed, and the server still serving."""

from __future__ import annotations

import pytest
from pymilvus import MilvusClient, MilvusException

from tests.e2e.restutil import ok, post, post_raw
from tests.e2e.util import unique_name
from tests.harness import Standalone


@pytest.mark.parametrize("raw", [b"{bad json", b"[1, 2]", b'"text"'])
def test_a_body_that_is_not_a_json_object_is_1801(standalone: Standalone, raw: bytes) -> None:
    status, answer = post_raw(standalone, "collections/describe", raw)
    assert status == 200 and answer["code"] == 1801
    assert answer["message"].startswith("can only accept json format request")
    assert "data" not in answer


@pytest.mark.parametrize(("path", "body", "missing"), [
    ("collections/describe", {}, "collectionName"),
    ("collections/create", {"collectionName": "x"}, "dimension"),
    ("entities/insert", {"collectionName": "x"}, "data"),
    ("indexes/drop", {"collectionName": "x"}, "indexName"),
    ("aliases/create", {"collectionName": "x"}, "aliasName"),
])
def test_a_missing_parameter_is_1802(standalone: Standalone, path: str, body: dict[str, object], missing: str) -> None:
    answer = post(standalone, path, body)
    assert answer["code"] == 1802
    assert answer["message"].startswith("missing required parameters") and missing in answer["message"]


def test_a_missing_collection_answers_as_over_grpc(standalone: Standalone, milvus: MilvusClient) -> None:
    name = unique_name()
    cases = [
        ("collections/describe", {"collectionName": name}, lambda: milvus.describe_collection(name)),
        ("entities/query", {"collectionName": name, "filter": "id > 0"}, lambda: milvus.query(name, filter="id > 0")),
        ("entities/delete", {"collectionName": name, "filter": "id > 0"}, lambda: milvus.delete(name, filter="id > 0")),
        ("collections/load", {"collectionName": name}, lambda: milvus.load_collection(name)),
    ]
    for path, body, grpc_call in cases:
        with pytest.raises(MilvusException) as grpc_err:
            grpc_call()
        answer = post(standalone, path, body)
        assert (answer["code"], answer["message"]) == (grpc_err.value.code, grpc_err.value.message), path
        assert answer["code"] == 100 and name in answer["message"]


def test_a_refused_create_changes_nothing(standalone: Standalone, milvus: MilvusClient) -> None:
    name = unique_name()
    answer = post(standalone, "collections/create", {"collectionName": name, "schema": {"fields": [
        {"fieldName": "id", "dataType": "Int64", "isPrimary": True},
        {"fieldName": "v", "dataType": "NoSuchVector", "elementTypeParams": {"dim": 4}}]}})
    assert answer["code"] == 1100 and "NoSuchVector" in answer["message"]
    # A schema the proxy refuses (no vector field): its code and reason, as pymilvus would get.
    answer = post(standalone, "collections/create", {"collectionName": name, "schema": {"fields": [
        {"fieldName": "id", "dataType": "Int64", "isPrimary": True}]}})
    assert answer["code"] != 0 and answer["message"]
    assert not milvus.has_collection(name)


def test_bad_rows_are_refused_and_nothing_is_inserted(standalone: Standalone, milvus: MilvusClient) -> None:
    name = unique_name()
    ok(standalone, "collections/create", {"collectionName": name, "dimension": 4})
    for data in ([{"id": 1, "vector": "not a vector"}], [{"vector": [1, 2, 3, 4]}], "rows", []):
        answer = post(standalone, "entities/insert", {"collectionName": name, "data": data})
        assert answer["code"] in (1802, 1804) and answer["message"], data
    answer = post(standalone, "entities/insert", {"collectionName": name, "data": [{"id": 1, "vector": [1, 2]}]})
    assert answer["code"] != 0
    assert ok(standalone, "collections/get_stats", {"collectionName": name}) == {"rowCount": 0}
    ok(standalone, "collections/drop", {"collectionName": name})


def test_unknown_endpoint_is_404(standalone: Standalone) -> None:
    status, answer = post_raw(standalone, "collections/no_such_action", b"{}")
    assert status == 404 and answer["code"] == 404


def test_request_timeout_header(standalone: Standalone) -> None:
    assert isinstance(ok(standalone, "collections/list", {}, headers={"Request-Timeout": "10"}), list)
    answer = post(standalone, "collections/list", {}, headers={"Request-Timeout": "soon"})
    assert answer["code"] == 1100 and "Request-Timeout" in answer["message"]
    # Still serving after every refusal above.
    assert isinstance(ok(standalone, "collections/list", {}), list)


ODD_BODIES = [
    ("collections/create", {"collectionName": "odd", "dimension": 4, "params": {"shardsNum": "x"}}),
    ("collections/create", {"collectionName": "odd", "dimension": "four"}),
    ("collections/create", {"collectionName": "odd", "schema": {"fields": [1, 2]}}),
    ("collections/create", {"collectionName": "odd", "schema": "fields"}),
    ("collections/create", {"collectionName": ["odd"], "dimension": 4}),
    ("collections/create", {"collectionName": "odd", "schema": {"fields": [
        {"fieldName": "id", "dataType": "Int64", "isPrimary": "yes"}]}}),
    ("indexes/create", {"collectionName": "odd", "indexParams": [{"fieldName": 7}]}),
    ("indexes/create", {"collectionName": "odd", "indexParams": {"fieldName": "v"}}),
    ("entities/search", {"collectionName": "odd", "data": [[1, 2]], "limit": "ten"}),
    ("entities/search", {"collectionName": "odd", "data": [[1, 2]], "searchParams": {"params": "x"}}),
    ("entities/hybrid_search", {"collectionName": "odd", "search": [{}], "rerank": {"strategy": "rrf",
                                                                                  "params": {"k": "x"}}}),
    ("entities/hybrid_search", {"collectionName": "odd", "search": [{"data": [[1, 2]]}],
                                "rerank": {"strategy": "rrf", "params": {"k": "x"}}}),
    ("entities/hybrid_search", {"collectionName": "odd", "search": [{"data": [[1, 2]]}],
                                "rerank": {"strategy": "weighted", "params": {"weights": ["a"]}}}),
    ("entities/hybrid_search", {"collectionName": "odd", "search": [{"data": [[1, 2]]}], "rerank": "rrf"}),
    ("entities/get", {"collectionName": "odd", "id": {"a": 1}}),
    ("entities/search", {"collectionName": "odd", "data": [[1, 2]], "consistencyLevel": "Sometimes"}),
    ("entities/query", {"collectionName": "odd", "filter": "id > 0", "consistencyLevel": 3}),
    ("entities/query", {"collectionName": "odd", "filter": "id > 0", "outputFields": "id"}),
    ("partitions/load", {"collectionName": "odd", "partitionNames": "p1"}),
    ("databases/create", {"dbName": "odd_db", "properties": ["a"]}),
]


@pytest.mark.parametrize(("path", "body"), ODD_BODIES)
def test_odd_bodies_get_a_clear_error_not_a_crash(standalone: Standalone, milvus: MilvusClient, path: str,
                                                  body: dict[str, object]) -> None:
    if not milvus.has_collection("odd"):
        milvus.create_collection("odd", dimension=2)
    answer = post(standalone, path, body)
    assert answer["code"] not in (0, 5) and answer["message"], answer  # 5: an internal error
    assert "odd_db" not in milvus.list_databases()
