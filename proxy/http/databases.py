"""``/v2/vectordb/databases/*``: create, drop, list, describe, alter."""

from __future__ import annotations

from typing import Any

from pymilvus.grpc_gen import common_pb2, milvus_pb2

from proxy.http.body import Body
from proxy.http.invoke import Call
from proxy.http.reply import Route, kv_list


def _properties(body: Body) -> list[common_pb2.KeyValuePair]:
    return [common_pb2.KeyValuePair(key=k, value=str(v).lower() if isinstance(v, bool) else str(v))
            for k, v in body.mapping("properties").items()]


async def create(call: Call, body: Body) -> Any:
    await call("CreateDatabase", milvus_pb2.CreateDatabaseRequest(db_name=body.name("dbName"), properties=_properties(body)))
    return {}


async def drop(call: Call, body: Body) -> Any:
    await call("DropDatabase", milvus_pb2.DropDatabaseRequest(db_name=body.name("dbName")))
    return {}


async def alter(call: Call, body: Body) -> Any:
    await call("AlterDatabase", milvus_pb2.AlterDatabaseRequest(db_name=body.name("dbName"), properties=_properties(body)))
    return {}


async def list_(call: Call, body: Body) -> Any:
    resp = await call("ListDatabases", milvus_pb2.ListDatabasesRequest())
    return list(resp.db_names)


async def describe(call: Call, body: Body) -> Any:
    resp = await call("DescribeDatabase", milvus_pb2.DescribeDatabaseRequest(db_name=body.name("dbName")))
    return {"dbName": resp.db_name, "dbID": resp.dbID, "properties": kv_list(resp.properties)}


ROUTES: dict[str, Route] = {"create": create, "drop": drop, "alter": alter, "list": list_, "describe": describe}
