"""Schema changes of a live collection through the proxy: ``AddCollectionField``, ``AlterCollectionField``,
and what a changed schema asks of writes and reads. Mixed into ``MilvusProxy``.

A field is checked here as Milvus' proxy checks it (``convert/added_field.py``), then the
coordinator adds it (``coordinator/schema_ddl.py``): every vchannel hears of it in the WAL
before the catalog shows it, so by the time a client sees the field (``describe_collection``)
every reader takes rows with it. The collection's ``update_timestamp`` is when its schema last
changed; Milvus uses it twice, and so does this proxy:

* a write carries the ``schema_timestamp`` of the schema the client converted its rows with
  (pymilvus caches schemas); if it is not the collection's, the write is refused with
  ``SchemaMismatch`` and pymilvus refreshes its schema and sends it again (``check_schema_timestamp``);
* a read's guarantee timestamp is at least the last schema change, so it waits until its
  delegators have applied the change (``schema_guarantee``).
"""

from __future__ import annotations

from typing import Any

import grpc
from pymilvus.grpc_gen import common_pb2, milvus_pb2, schema_pb2

from common.coordapi import LoadState
from common.errors import CollectionLoaded, InvalidArgument, SchemaMismatch
from common.schema import field_to_json
from proxy.convert.added_field import added_field_from_proto, field_change
from proxy.metacache import CollectionEntry, MetaCache
from proxy.parts import ProxyParts
from proxy.rpc import milvus_rpc
from proxy.status import success


async def check_schema_timestamp(cache: MetaCache, coll: CollectionEntry, schema_ts: int) -> CollectionEntry:
    """The collection to write with; ``SchemaMismatch`` if the client's rows follow another schema.

    ``schema_ts`` 0: the client did not say (older SDKs), nothing to check. Otherwise it must be
    the collection's ``update_timestamp``; the cached entry is refreshed once first, in case
    another proxy changed the schema.
    """
    if not schema_ts or schema_ts == coll.update_ts:
        return coll
    coll = await cache.get(coll.name, refresh=True)
    if schema_ts != coll.update_ts:
        raise SchemaMismatch(f"collection schema mismatch[collection={coll.name}]")
    return coll


def schema_guarantee(coll: CollectionEntry, guarantee_ts: int) -> int:
    """A read's guarantee timestamp, raised to the collection's last schema change (if any)."""
    if coll.update_ts > coll.created_ts:
        return max(guarantee_ts, coll.update_ts)
    return guarantee_ts


class SchemaRPCs(ProxyParts):
    async def _alter_schema(self, coll: CollectionEntry, **fields: Any) -> None:
        await self._coord.alter_schema(coll.collection_id, **fields)
        self._cache.invalidate(coll.name)

    @milvus_rpc(common_pb2.Status)
    async def AddCollectionField(
        self, request: milvus_pb2.AddCollectionFieldRequest, context: grpc.aio.ServicerContext
    ) -> common_pb2.Status:
        coll = await self._coll(request.collection_name)
        fpb = schema_pb2.FieldSchema()
        try:
            fpb.ParseFromString(request.schema)
        except Exception as err:  # a client's bytes: any decode failure is its error
            raise InvalidArgument(f"malformed field schema: {err}") from err
        field = added_field_from_proto(fpb, coll.schema)
        await self._alter_schema(coll, add_field_json=field_to_json(field))
        return success()

    @milvus_rpc(common_pb2.Status)
    async def AlterCollectionField(
        self, request: milvus_pb2.AlterCollectionFieldRequest, context: grpc.aio.ServicerContext
    ) -> common_pb2.Status:
        coll = await self._coll(request.collection_name)
        change = field_change(
            coll.schema,
            request.field_name,
            {p.key: p.value for p in request.properties},
            list(request.delete_keys),
        )
        if change.touches_mmap and (await self._reads.load_view(coll)).state != LoadState.NOT_LOAD:
            what = "alter" if change.properties else "drop"
            raise CollectionLoaded(
                f"can not {what} collection field properties if collection loaded: "
                f"collection already loaded[collection={coll.name}]"
            )
        await self._alter_schema(
            coll, field_name=request.field_name, properties=change.properties, delete_keys=change.delete_keys
        )
        return success()
