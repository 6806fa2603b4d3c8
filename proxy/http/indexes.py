"""``/v2/vectordb/indexes/*``: create, describe, list, drop (and the indexes of collections/create)."""

from __future__ import annotations

import json
from typing import Any

from pymilvus.grpc_gen import common_pb2, milvus_pb2

from common.errors import CODE_TABLE, ErrorCode
from proxy.http.body import Body
from proxy.http.errors import RestError, invalid
from proxy.http.invoke import Call
from proxy.http.reply import Route

INDEX_NOT_FOUND = CODE_TABLE[ErrorCode.INDEX_NOT_FOUND].milvus_code


def _index_request(collection: str, raw: Any) -> milvus_pb2.CreateIndexRequest:
    """One of ``indexParams``: ``{"fieldName", "indexName", "metricType", "indexType", "params"}``."""
    if not isinstance(raw, dict):
        raise invalid("each of `indexParams` must be an object")
    p = Body(raw)
    field = p.name("fieldName")
    extra = {"index_type": p.text("indexType", "AUTOINDEX") or "AUTOINDEX"}
    if p.text("metricType"):
        extra["metric_type"] = p.text("metricType")
    params = p.mapping("params")
    if params:
        extra["params"] = json.dumps(params)
    return milvus_pb2.CreateIndexRequest(
        collection_name=collection, field_name=field, index_name=p.text("indexName") or field,
        extra_params=[common_pb2.KeyValuePair(key=k, value=v) for k, v in extra.items()],
    )


async def create_indexes(call: Call, collection: str, index_params: Any) -> None:
    if not isinstance(index_params, list):
        raise invalid("`indexParams` must be a list")
    requests = [_index_request(collection, raw) for raw in index_params]  # all checked before any is made
    for request in requests:
        await call("CreateIndex", request)


async def _descriptions(call: Call, collection: str, index_name: str = "") -> list[Any]:
    request = milvus_pb2.DescribeIndexRequest(collection_name=collection, index_name=index_name)
    try:
        resp = await call("DescribeIndex", request)
    except RestError as err:
        if index_name or err.code != INDEX_NOT_FOUND:  # no index yet: none to list
            raise
        return []
    return list(resp.index_descriptions)


def _params(d: Any) -> dict[str, str]:
    return {p.key: p.value for p in d.params}


async def index_summaries(call: Call, collection: str) -> list[dict[str, Any]]:
    """What collections/describe lists of each index."""
    out = []
    for d in await _descriptions(call, collection):
        out.append({"fieldName": d.field_name, "indexName": d.index_name, "metricType": _params(d).get("metric_type", "")})
    return out


async def create(call: Call, body: Body) -> Any:
    await create_indexes(call, body.name("collectionName"), body.required("indexParams"))
    return {}


async def describe(call: Call, body: Body) -> Any:
    out = []
    for d in await _descriptions(call, body.name("collectionName"), body.name("indexName")):
        params = _params(d)
        out.append({
            "failReason": d.index_state_fail_reason, "fieldName": d.field_name, "indexName": d.index_name,
            "indexState": common_pb2.IndexState.Name(d.state), "indexType": params.get("index_type", ""),
            "indexedRows": d.indexed_rows, "metricType": params.get("metric_type", ""),
            "pendingRows": d.pending_index_rows, "totalRows": d.total_rows,
        })
    return out


async def list_(call: Call, body: Body) -> Any:
    return [d.index_name for d in await _descriptions(call, body.name("collectionName"))]


async def drop(call: Call, body: Body) -> Any:
    request = milvus_pb2.DropIndexRequest(collection_name=body.name("collectionName"), index_name=body.name("indexName"))
    await call("DropIndex", request)
    return {}


ROUTES: dict[str, Route] = {"create": create, "describe": describe, "list": list_, "drop": drop}
