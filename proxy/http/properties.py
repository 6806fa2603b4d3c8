"""Setting and dropping properties over REST: collections, a collection's fields, databases, indexes.

Milvus 2.6's endpoints and bodies, each running the gRPC RPC that pymilvus's ``alter_*`` /
``drop_*_properties`` run (so the checks, effects and errors are the gRPC ones):

| endpoint | body | RPC |
|---|---|---|
| ``collections/alter_properties`` | ``collectionName``, ``properties`` | ``AlterCollection`` |
| ``collections/drop_properties`` | ``collectionName``, ``propertyKeys`` | ``AlterCollection`` (``delete_keys``) |
| ``collections/fields/alter_properties`` | ``collectionName``, ``fieldName``, ``fieldParams`` | ``AlterCollectionField`` |
| ``databases/alter_properties`` (= ``databases/alter``) | ``dbName``, ``properties`` | ``AlterDatabase`` |
| ``databases/drop_properties`` | ``dbName``, ``propertyKeys`` | ``AlterDatabase`` (``delete_keys``) |
| ``indexes/alter_properties`` | ``collectionName``, ``indexName``, ``properties`` | ``AlterIndex`` |
| ``indexes/drop_properties`` | ``collectionName``, ``indexName``, ``propertyKeys`` | ``AlterIndex`` (``delete_keys``) |

A value is sent as its text, as Milvus's ``fmt.Sprintf("%v")`` does (``true``, ``3600``).
"""

from __future__ import annotations

from typing import Any

from pymilvus.grpc_gen import common_pb2, milvus_pb2

from proxy.http import databases
from proxy.http.body import Body
from proxy.http.invoke import Call
from proxy.http.reply import Route


def key_values(body: Body, name: str) -> list[common_pb2.KeyValuePair]:
    """The object ``name`` of the body as key-value pairs, each value as its text."""
    return [common_pb2.KeyValuePair(key=k, value=str(v).lower() if isinstance(v, bool) else str(v))
            for k, v in body.mapping(name).items()]


async def alter_collection(call: Call, body: Body) -> Any:
    await call("AlterCollection", milvus_pb2.AlterCollectionRequest(
        collection_name=body.name("collectionName"), properties=key_values(body, "properties")))
    return {}


async def drop_collection_properties(call: Call, body: Body) -> Any:
    await call("AlterCollection", milvus_pb2.AlterCollectionRequest(
        collection_name=body.name("collectionName"), delete_keys=body.strings("propertyKeys")))
    return {}


async def alter_field(call: Call, body: Body) -> Any:
    await call("AlterCollectionField", milvus_pb2.AlterCollectionFieldRequest(
        collection_name=body.name("collectionName"), field_name=body.name("fieldName"),
        properties=key_values(body, "fieldParams")))
    return {}


async def drop_database_properties(call: Call, body: Body) -> Any:
    await call("AlterDatabase", milvus_pb2.AlterDatabaseRequest(
        db_name=body.name("dbName"), delete_keys=body.strings("propertyKeys")))
    return {}


async def alter_index(call: Call, body: Body) -> Any:
    await call("AlterIndex", milvus_pb2.AlterIndexRequest(
        collection_name=body.name("collectionName"), index_name=body.name("indexName"),
        extra_params=key_values(body, "properties")))
    return {}


async def drop_index_properties(call: Call, body: Body) -> Any:
    await call("AlterIndex", milvus_pb2.AlterIndexRequest(
        collection_name=body.name("collectionName"), index_name=body.name("indexName"),
        delete_keys=body.strings("propertyKeys")))
    return {}


COLLECTION_ROUTES: dict[str, Route] = {"alter_properties": alter_collection,
                                       "drop_properties": drop_collection_properties}
FIELD_ROUTES: dict[str, Route] = {"alter_properties": alter_field}
DATABASE_ROUTES: dict[str, Route] = {"alter_properties": databases.alter, "drop_properties": drop_database_properties}
INDEX_ROUTES: dict[str, Route] = {"alter_properties": alter_index, "drop_properties": drop_index_properties}
