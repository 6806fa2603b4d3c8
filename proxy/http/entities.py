"""``/v2/vectordb/entities/*``: insert, upsert, delete, get, query, search, hybrid_search."""

from __future__ import annotations

import json
from typing import Any

from pymilvus import RRFRanker, WeightedRanker
from pymilvus.client.prepare import Prepare
from pymilvus.grpc_gen import milvus_pb2, schema_pb2

from proxy.http.body import Body
from proxy.http.errors import invalid, missing
from proxy.http.int64 import as_strings, int64_fields
from proxy.http.int64 import ids as int64_ids
from proxy.http.invoke import Call
from proxy.http.reply import Reply, Route
from proxy.http.rows import build, build_rows, prepare_rows, query_rows, schema_dict, search_hits, vector_value
from proxy.http.schema import VECTOR_TYPES, consistency

# Milvus's default ``limit`` of entities/search and hybrid_search.
DEFAULT_SEARCH_LIMIT = 100


async def _schema(call: Call, name: str) -> dict[str, Any]:
    return schema_dict(await call("DescribeCollection", milvus_pb2.DescribeCollectionRequest(collection_name=name)))


def _ids(call: Call, resp: milvus_pb2.MutationResult) -> list[Any]:
    kind = resp.IDs.WhichOneof("id_field")
    return int64_ids(list(resp.IDs.int_id.data), call.allow_int64) if kind == "int_id" else list(resp.IDs.str_id.data)


def _rows(call: Call, resp: milvus_pb2.QueryResults) -> list[dict[str, Any]]:
    rows = query_rows(resp)
    return rows if call.allow_int64 else as_strings(rows, int64_fields(resp.fields_data))


async def insert(call: Call, body: Body) -> Any:
    name = body.name("collectionName")
    data = body.required("data")
    schema = await _schema(call, name)
    rows = prepare_rows(schema, data)
    request = await build_rows(
        Prepare.row_insert_param, name, rows, body.text("partitionName"), schema["fields"],
        schema.get("struct_array_fields") or [], rows=len(rows),
        enable_dynamic=schema.get("enable_dynamic_field", False), schema_timestamp=schema.get("update_timestamp", 0))
    resp = await call("Insert", request)
    return {"insertCount": resp.insert_cnt, "insertIds": _ids(call, resp)}


async def upsert(call: Call, body: Body) -> Any:
    name = body.name("collectionName")
    data = body.required("data")
    schema = await _schema(call, name)
    rows = prepare_rows(schema, data)
    request = await build_rows(
        Prepare.row_upsert_param, name, rows, body.text("partitionName"), schema["fields"],
        schema.get("struct_array_fields") or [], rows=len(rows),
        enable_dynamic=schema.get("enable_dynamic_field", False), schema_timestamp=schema.get("update_timestamp", 0),
        partial_update=body.flag("partialUpdate", False))
    resp = await call("Upsert", request)
    return {"upsertCount": resp.upsert_cnt, "upsertIds": _ids(call, resp)}


async def delete(call: Call, body: Body) -> Any:
    request = milvus_pb2.DeleteRequest(
        collection_name=body.name("collectionName"), partition_name=body.text("partitionName"), expr=body.text("filter"))
    if not request.expr:
        raise missing("filter")
    await call("Delete", request)
    return {}


def _query_request(body: Body, name: str, expr: str) -> milvus_pb2.QueryRequest:
    params = []
    for key in ("limit", "offset"):
        if key in body:
            params.append((key, str(body.integer(key, 0))))
    kwargs: dict[str, Any] = {}
    if body.raw("consistencyLevel") is not None:
        kwargs = {"use_default_consistency": False, "consistency_level": consistency(body.raw("consistencyLevel"))}
    request = Prepare.query_request(name, expr, body.strings("outputFields"), body.strings("partitionNames"), **kwargs)
    for key, value in params:
        request.query_params.add(key=key, value=value)
    return request


def _pk_filter(schema: dict[str, Any], ids: Any) -> str:
    pk = next(f for f in schema["fields"] if f.get("is_primary"))
    values = ids if isinstance(ids, list) else [ids]
    if not values:
        raise missing("id")
    strings = pk["type"] in (schema_pb2.VarChar, schema_pb2.String)
    if not all(isinstance(v, str) if strings else isinstance(v, int) and not isinstance(v, bool) for v in values):
        raise invalid(f"`id` must be {'strings' if strings else 'integers'} (the type of {pk['name']})")
    return f"{pk['name']} in {json.dumps(values)}"


async def get(call: Call, body: Body) -> Any:
    name = body.name("collectionName")
    expr = _pk_filter(await _schema(call, name), body.required("id"))
    return _rows(call, await call("Query", _query_request(body, name, expr)))


async def query(call: Call, body: Body) -> Any:
    name = body.name("collectionName")
    expr = body.text("filter")
    if not expr and "limit" not in body:
        raise missing("filter")
    return _rows(call, await call("Query", _query_request(body, name, expr)))


def _anns_field(schema: dict[str, Any], given: str) -> tuple[str, int]:
    vectors = {f["name"]: int(f["type"]) for f in schema["fields"] if int(f["type"]) in VECTOR_TYPES}
    if given:
        if given not in vectors:
            raise invalid(f"annsField {given} is not a vector field of the collection")
        return given, vectors[given]
    if len(vectors) != 1:
        raise missing("annsField")
    return next(iter(vectors.items()))


def _search_param(body: Body) -> dict[str, Any]:
    raw = body.mapping("searchParams")
    param: dict[str, Any] = {"params": dict(Body(raw).mapping("params"))}
    if raw.get("metricType") or body.text("metricType"):
        param["metric_type"] = raw.get("metricType") or body.text("metricType")
    return param


def _vectors(kind: int, field: str, data: Any) -> list[Any]:
    if not isinstance(data, list) or not data:
        raise missing("data")
    return [vector_value(kind, v, field) for v in data]


def _search_request(body: Body, name: str, schema: dict[str, Any]) -> milvus_pb2.SearchRequest:
    field, kind = _anns_field(schema, body.text("annsField"))
    kwargs: dict[str, Any] = {"offset": body.integer("offset", 0)}
    if body.text("groupingField"):
        kwargs["group_by_field"] = body.text("groupingField")
    if body.raw("consistencyLevel") is not None:
        kwargs["use_default_consistency"] = False
        kwargs["consistency_level"] = consistency(body.raw("consistencyLevel"))
    return build(
        Prepare.search_requests_with_expr, name, field, _search_param(body), body.integer("limit", DEFAULT_SEARCH_LIMIT),
        data=_vectors(kind, field, body.raw("data")), expr=body.text("filter"),
        partition_names=body.strings("partitionNames"), output_fields=body.strings("outputFields"), **kwargs,
    )


def _hits(call: Call, resp: Any) -> Reply:
    hits, topks = search_hits(resp.results)
    if not call.allow_int64:
        names = int64_fields(resp.results.fields_data)
        if resp.results.ids.WhichOneof("id_field") == "int_id":
            names.add("id")
        as_strings(hits, names)
    return Reply(hits, {"topks": topks} if len(topks) > 1 else {})


async def search(call: Call, body: Body) -> Any:
    name = body.name("collectionName")
    request = _search_request(body, name, await _schema(call, name))
    return _hits(call, await call("Search", request))


def _ranker(rerank: dict[str, Any]) -> Any:
    strategy = rerank.get("strategy", "rrf")
    params = Body(Body(rerank).mapping("params"))
    if strategy == "rrf":
        return RRFRanker(params.integer("k", 60))
    if strategy == "weighted":
        weights = params.raw("weights")
        if not isinstance(weights, list) or not weights:
            raise missing("rerank.params.weights")
        if not all(isinstance(w, int | float) and not isinstance(w, bool) for w in weights):
            raise invalid("`rerank.params.weights` must be numbers")
        return WeightedRanker(*weights, norm_score=params.flag("norm_score", True))
    raise invalid(f"invalid rerank strategy: {strategy!r} (rrf or weighted)")


async def hybrid_search(call: Call, body: Body) -> Any:
    name = body.name("collectionName")
    schema = await _schema(call, name)
    subs = body.required("search")
    if not isinstance(subs, list):
        raise invalid("`search` must be a list")
    requests = [_search_request(Body(raw if isinstance(raw, dict) else {}), name, schema) for raw in subs]
    request = build(
        Prepare.hybrid_search_request_with_ranker, name, requests, _ranker(body.mapping("rerank")),
        body.integer("limit", DEFAULT_SEARCH_LIMIT), partition_names=body.strings("partitionNames"),
        output_fields=body.strings("outputFields"),
    )
    return _hits(call, await call("HybridSearch", request))


ROUTES: dict[str, Route] = {
    "insert": insert, "upsert": upsert, "delete": delete, "get": get, "query": query, "search": search,
    "hybrid_search": hybrid_search,
}
