"""``/v2/vectordb/aliases/*``: create, drop, alter, describe, list."""

from __future__ import annotations

from typing import Any

from pymilvus.grpc_gen import milvus_pb2

from proxy.http.body import Body
from proxy.http.invoke import Call
from proxy.http.reply import Route


async def create(call: Call, body: Body) -> Any:
    await call("CreateAlias", milvus_pb2.CreateAliasRequest(
        collection_name=body.name("collectionName"), alias=body.name("aliasName")))
    return {}


async def alter(call: Call, body: Body) -> Any:
    await call("AlterAlias", milvus_pb2.AlterAliasRequest(
        collection_name=body.name("collectionName"), alias=body.name("aliasName")))
    return {}


async def drop(call: Call, body: Body) -> Any:
    await call("DropAlias", milvus_pb2.DropAliasRequest(alias=body.name("aliasName")))
    return {}


async def describe(call: Call, body: Body) -> Any:
    resp = await call("DescribeAlias", milvus_pb2.DescribeAliasRequest(alias=body.name("aliasName")))
    return {"aliasName": resp.alias, "collectionName": resp.collection, "dbName": resp.db_name or call.db_name}


async def list_(call: Call, body: Body) -> Any:
    resp = await call("ListAliases", milvus_pb2.ListAliasesRequest(collection_name=body.text("collectionName")))
    return list(resp.aliases)


ROUTES: dict[str, Route] = {"create": create, "alter": alter, "drop": drop, "describe": describe, "list": list_}
