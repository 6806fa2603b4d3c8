"""``/v2/vectordb/collections/*``: create (quick setup or a schema), describe, list, has, drop,
rename, get_stats, load, release, get_load_state."""

from __future__ import annotations

from typing import Any

from pymilvus.grpc_gen import common_pb2, milvus_pb2

from proxy.http.body import Body
from proxy.http.indexes import create_indexes, index_summaries
from proxy.http.invoke import Call
from proxy.http.reply import Route
from proxy.http.schema import consistency, custom_schema, describe_json, quick_schema

# ``params`` of collections/create that become collection properties (Milvus's names).
_PROPERTIES = {"ttlSeconds": "collection.ttl.seconds", "mmap.enabled": "mmap.enabled",
               "partitionKeyIsolation": "partitionkey.isolation"}

async def create(call: Call, body: Body) -> Any:
    name = body.name("collectionName")
    params = body.mapping("params")
    quick = "schema" not in body
    if quick:
        body.required("dimension")
        schema = quick_schema(name, body)
    else:
        schema = custom_schema(name, body)
    request = milvus_pb2.CreateCollectionRequest(
        collection_name=name,
        schema=schema.SerializeToString(),
        shards_num=Body(params).integer("shardsNum", 1),
        consistency_level=consistency(params.get("consistencyLevel", "Bounded")),
        num_partitions=Body(params).integer("partitionsNum", 0),
        properties=[common_pb2.KeyValuePair(key=prop, value=str(params[key]))
                    for key, prop in _PROPERTIES.items() if key in params],
    )
    await call("CreateCollection", request)
    if quick:
        vector = body.text("vectorFieldName", "vector")
        indexes: list[Any] = [{"fieldName": vector, "indexName": vector, "metricType": body.text("metricType", "COSINE")}]
    else:
        indexes = body.raw("indexParams") or []
    if indexes:
        # As Milvus: a collection created with its indexes is loaded too.
        await create_indexes(call, name, indexes)
        await call("LoadCollection", milvus_pb2.LoadCollectionRequest(collection_name=name))
    return {}


async def _load_state(call: Call, name: str, partitions: list[str] | None = None) -> str:
    resp = await call("GetLoadState", milvus_pb2.GetLoadStateRequest(collection_name=name, partition_names=partitions))
    return str(common_pb2.LoadState.Name(resp.state))


async def describe(call: Call, body: Body) -> Any:
    name = body.name("collectionName")
    resp = await call("DescribeCollection", milvus_pb2.DescribeCollectionRequest(collection_name=name))
    parts = await call("ShowPartitions", milvus_pb2.ShowPartitionsRequest(collection_name=name))
    return describe_json(resp, await index_summaries(call, name), await _load_state(call, name),
                         len(parts.partition_names))


async def list_(call: Call, body: Body) -> Any:
    resp = await call("ShowCollections", milvus_pb2.ShowCollectionsRequest())
    return list(resp.collection_names)


async def has(call: Call, body: Body) -> Any:
    resp = await call("HasCollection", milvus_pb2.HasCollectionRequest(collection_name=body.name("collectionName")))
    return {"has": resp.value}


async def drop(call: Call, body: Body) -> Any:
    await call("DropCollection", milvus_pb2.DropCollectionRequest(collection_name=body.name("collectionName")))
    return {}


async def rename(call: Call, body: Body) -> Any:
    request = milvus_pb2.RenameCollectionRequest(
        oldName=body.name("collectionName"), newName=body.name("newCollectionName"), newDBName=body.text("newDbName"))
    await call("RenameCollection", request)
    return {}


async def get_stats(call: Call, body: Body) -> Any:
    request = milvus_pb2.GetCollectionStatisticsRequest(collection_name=body.name("collectionName"))
    resp = await call("GetCollectionStatistics", request)
    stats = {p.key: p.value for p in resp.stats}
    return {"rowCount": int(stats.get("row_count", 0))}


async def load(call: Call, body: Body) -> Any:
    await call("LoadCollection", milvus_pb2.LoadCollectionRequest(collection_name=body.name("collectionName")))
    return {}


async def release(call: Call, body: Body) -> Any:
    await call("ReleaseCollection", milvus_pb2.ReleaseCollectionRequest(collection_name=body.name("collectionName")))
    return {}


async def get_load_state(call: Call, body: Body) -> Any:
    name = body.name("collectionName")
    partitions = body.strings("partitionNames")
    state = await _load_state(call, name, partitions)
    out: dict[str, Any] = {"loadState": state}
    if state in ("LoadStateLoaded", "LoadStateLoading"):
        progress = await call("GetLoadingProgress", milvus_pb2.GetLoadingProgressRequest(
            collection_name=name, partition_names=partitions))
        out["loadProgress"] = progress.progress
    return out


ROUTES: dict[str, Route] = {
    "create": create, "describe": describe, "list": list_, "has": has, "drop": drop, "rename": rename,
    "get_stats": get_stats, "load": load, "release": release, "get_load_state": get_load_state,
}
