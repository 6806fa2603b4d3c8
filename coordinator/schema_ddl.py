"""Schema DDL: a field added to a live collection, a field's properties altered.

add field: the next field id, ``added``; the schema's version + 1 -> the catalog keeps it as the
           collection's ``pending_schema`` -> a SchemaChange to each vchannel (the WAL seals the
           collection's growing segments first; flushers and delegators take the new schema in
           WAL order) -> the catalog makes it the schema, ``updated_ts`` = the largest timetick the
           SchemaChanges got (proxies raise a read's guarantee timestamp to it).
alter field: the catalog alone (``max_length``, ``max_capacity``, ``mmap.enabled`` are checked by
           the proxy that takes the rows; stored data does not change), version + 1.

A coordinator that dies in between finishes a pending change at recovery; any later schema DDL of
the collection finishes it first, under the DDL lock. A SchemaChange appended twice is harmless:
readers take a schema only when its version is higher than theirs. As in Milvus, an added field
comes last, is nullable (the proxy checks it) and takes the next field id; the name must be new
("field already exists, name: X").
"""

from __future__ import annotations

import asyncio
from dataclasses import replace

import structlog

from common.errors import CollectionNotFound, InvalidArgument
from common.message import SchemaChange
from common.schema import DataType, FieldSchema
from coordinator.catalog import Catalog, CollectionMeta, CollectionState
from coordinator.ddl import DDL
from coordinator.tso import TimestampOracle
from streamingnode.client.producer import Producer

#: Milvus' proxy.maxFieldNum (its fields count ``$meta`` too).
MAX_FIELDS = 64
MAX_LENGTH_KEY = "max_length"
MAX_CAPACITY_KEY = "max_capacity"


class SchemaDDL:
    def __init__(self, ddl: DDL, catalog: Catalog, tso: TimestampOracle, producer: Producer) -> None:
        self._ddl = ddl
        self._catalog = catalog
        self._tso = tso
        self._producer = producer
        self._log = structlog.get_logger().bind(component="ddl")

    async def recover(self) -> None:
        """Finish every schema change a coordinator left pending."""
        async with self._ddl.lock:
            for meta in await self._catalog.list_collections():
                if meta.state == CollectionState.CREATED and meta.pending_schema is not None:
                    await self._finish(meta)

    async def _current(self, meta: CollectionMeta) -> CollectionMeta:
        """The collection as the catalog has it now, with any pending change finished (call under the lock)."""
        fresh = await self._catalog.get_collection(meta.collection_id)
        if fresh is None or fresh.state != CollectionState.CREATED:
            raise CollectionNotFound(f"collection not found[collection={meta.name}]")
        if fresh.pending_schema is not None:
            fresh = await self._finish(fresh)
        return fresh

    async def add_field(self, meta: CollectionMeta, field: FieldSchema) -> CollectionMeta:
        """Add ``field`` (validated by the proxy against Milvus' rules) as the collection's last field."""
        async with self._ddl.lock:
            meta = await self._current(meta)
            if meta.schema.has_field(field.name):
                raise InvalidArgument(f"field already exists, name: {field.name}")
            if len(meta.schema.fields) >= MAX_FIELDS:
                raise InvalidArgument(f"The number of fields has reached the maximum value {MAX_FIELDS}")
            added = replace(field, field_id=meta.schema.next_field_id, added=True)
            schema = replace(meta.schema, fields=(*meta.schema.fields, added), version=meta.schema.version + 1)
            meta = replace(meta, pending_schema=schema)
            await self._catalog.save_collection(meta)
            meta = await self._finish(meta)
        self._log.info("field added", collection=meta.name, field=added.name, field_id=added.field_id,
                       dtype=added.dtype.name, version=schema.version)
        return meta

    async def _finish(self, meta: CollectionMeta) -> CollectionMeta:
        """Send the pending schema to every vchannel, then make it the schema."""
        schema = meta.pending_schema
        assert schema is not None
        appended = await asyncio.gather(
            *(
                self._producer.append(
                    p, [SchemaChange(vchannel=v, collection_id=meta.collection_id, schema=schema)]
                )
                for v, p in zip(meta.vchannels, meta.pchannels, strict=True)
            )
        )
        ts = max(r.timetick for (r,) in appended)
        meta = replace(meta, schema=schema, pending_schema=None, updated_ts=max(ts, meta.updated_ts))
        await self._catalog.save_collection(meta)
        return meta

    async def alter_field(
        self, meta: CollectionMeta, field_name: str, properties: dict[str, str], delete_keys: list[str]
    ) -> CollectionMeta:
        """Set ``properties`` of the field (checked by the proxy) and remove ``delete_keys`` from them."""
        async with self._ddl.lock:
            meta = await self._current(meta)
            if not meta.schema.has_field(field_name):
                raise InvalidArgument(f"field {field_name} does not exist in collection")
            old = meta.schema.field(field_name)
            params = {k: v for k, v in {**old.type_params, **properties}.items() if k not in delete_keys}
            field = replace(old, type_params=params)
            if MAX_LENGTH_KEY in properties and (old.dtype == DataType.VARCHAR or old.element_type == DataType.VARCHAR):
                field = replace(field, max_length=int(properties[MAX_LENGTH_KEY]))
            if MAX_CAPACITY_KEY in properties and old.dtype == DataType.ARRAY:
                field = replace(field, max_capacity=int(properties[MAX_CAPACITY_KEY]))
            fields = tuple(field if f.name == field_name else f for f in meta.schema.fields)
            schema = replace(meta.schema, fields=fields, version=meta.schema.version + 1)
            # Nothing stored changes: the catalog alone; a field added later carries this one along.
            meta = replace(meta, schema=schema, updated_ts=max(meta.updated_ts, await self._tso.allocate()))
            await self._catalog.save_collection(meta)
        self._log.info("field altered", collection=meta.name, field=field_name, set=sorted(properties),
                       deleted=delete_keys, version=schema.version)
        return meta
