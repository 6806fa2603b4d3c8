"""``/v2/vectordb/partitions/*``: create, drop, has, list, load, release, get_stats."""

from __future__ import annotations

from typing import Any

from pymilvus.grpc_gen import milvus_pb2

from proxy.http.body import Body
from proxy.http.errors import missing
from proxy.http.invoke import Call
from proxy.http.reply import Route


def _names(body: Body) -> list[str]:
    names = body.strings("partitionNames")
    if not names:
        raise missing("partitionNames")
    return names


async def create(call: Call, body: Body) -> Any:
    await call("CreatePartition", milvus_pb2.CreatePartitionRequest(
        collection_name=body.name("collectionName"), partition_name=body.name("partitionName")))
    return {}


async def drop(call: Call, body: Body) -> Any:
    await call("DropPartition", milvus_pb2.DropPartitionRequest(
        collection_name=body.name("collectionName"), partition_name=body.name("partitionName")))
    return {}


async def has(call: Call, body: Body) -> Any:
    resp = await call("HasPartition", milvus_pb2.HasPartitionRequest(
        collection_name=body.name("collectionName"), partition_name=body.name("partitionName")))
    return {"has": resp.value}


async def list_(call: Call, body: Body) -> Any:
    resp = await call("ShowPartitions", milvus_pb2.ShowPartitionsRequest(collection_name=body.name("collectionName")))
    return list(resp.partition_names)


async def load(call: Call, body: Body) -> Any:
    await call("LoadPartitions", milvus_pb2.LoadPartitionsRequest(
        collection_name=body.name("collectionName"), partition_names=_names(body)))
    return {}


async def release(call: Call, body: Body) -> Any:
    await call("ReleasePartitions", milvus_pb2.ReleasePartitionsRequest(
        collection_name=body.name("collectionName"), partition_names=_names(body)))
    return {}


async def get_stats(call: Call, body: Body) -> Any:
    resp = await call("GetPartitionStatistics", milvus_pb2.GetPartitionStatisticsRequest(
        collection_name=body.name("collectionName"), partition_name=body.name("partitionName")))
    return {"rowCount": int({p.key: p.value for p in resp.stats}.get("row_count", 0))}


ROUTES: dict[str, Route] = {
    "create": create, "drop": drop, "has": has, "list": list_, "load": load, "release": release,
    "get_stats": get_stats,
}
