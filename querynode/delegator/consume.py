"""The consume loop: the vchannel's messages from the checkpoint applied in WAL order.

Inserts go to growing segments (skipping segments served sealed or excluded), deletes to every
segment of the partition they name; each is forwarded to the sealed segments that may hold its
keys before the next message. A TimeTick advances tsafe; a SchemaChange reaches every worker
before the next message.
"""

from __future__ import annotations

import asyncio

import grpc
import numpy as np
import pyarrow as pa

from common.errors import StrataError
from common.message import Delete, DropPartition, Insert, SchemaChange, TimeTick, decode
from common.schema import TIMESTAMP_COLUMN, CollectionSchema
from common.schema_evolution import conform_table, is_newer
from protos.common_pb2 import Message, MessageType
from querynode.delegator.core import DelegatorCore
from querynode.delegator.distribution import Placement
from streamingnode.client.consumer import consume


class ConsumeLoop(DelegatorCore):
    """The vchannel's messages applied to growing data, forwarded to sealed segments, tsafe advanced."""

    async def _consume(self) -> None:
        cp = self._checkpoint
        async for _, msg in consume(
            self._source, self.pchannel, self.vchannel, start_from=None if cp is None else cp.message_id
        ):
            if cp is not None and cp.covers(msg.timetick):
                continue  # in the segments loaded from object storage
            try:
                await self._apply(msg)
            except asyncio.CancelledError:
                raise
            except Exception:  # a message we cannot apply must not kill the shard; it is logged
                if msg.type == MessageType.SCHEMA_CHANGE:
                    raise  # on the old schema later rows would not fit: broken, the coordinator watches again
                self._log.exception("cannot apply message", type=MessageType.Name(msg.type))

    async def _apply(self, msg: Message) -> None:
        match decode(msg):
            case TimeTick(timetick=timetick):
                await self.tsafe.advance(timetick)
            case Insert() as ins:
                segment_id = ins.segment_id or 0
                if segment_id in self.dist.current.sealed or segment_id in self.excluded:
                    return  # its rows come from object storage
                partition = self._partition_of[segment_id] = ins.partition_id
                table = ins.table()
                ts = pa.array(np.full(table.num_rows, msg.timetick, dtype=np.uint64))
                table = conform_table(table.append_column(TIMESTAMP_COLUMN, ts), self._arrow_schema, self.schema)
                pks = table.column(self._pk).combine_chunks()
                stamps = np.full(len(pks), msg.timetick, dtype=np.uint64)
                async with self._lock:
                    self.data.insert(segment_id, table, partition)
                    self.cutlog.add_versions(segment_id, partition, pks, stamps)
                    await self._forward(pks, stamps, partition, exclude=segment_id)
            case Delete() as dele:
                pks = dele.pks()
                stamps = np.full(len(pks), msg.timetick, dtype=np.uint64)
                partition = dele.partition_id
                async with self._lock:
                    self.data.delete(pks, msg.timetick, partition)
                    self.cutlog.add_deletes(pks, stamps, partition)
                    await self._forward(pks, stamps, partition)
            case DropPartition(partition_id=dropped):
                async with self._lock:
                    for sid in [sid for sid in self.data.growing if self._partition_of.get(sid) == dropped]:
                        self.data.growing.pop(sid)
                self._log.info("partition dropped: its growing segments are gone", partition=dropped)
            case SchemaChange(schema=schema):
                await self._schema_changed(schema)
            case _:
                pass  # other DDL and flush messages carry nothing for reads

    async def _schema_changed(self, schema: CollectionSchema) -> None:
        """Take a newer schema: growing data here, then every worker of the distribution."""
        if not is_newer(self.schema, schema):
            return
        async with self._lock:
            await asyncio.to_thread(self.data.add_fields, schema)
            self.schema = schema
            self._arrow_schema = schema.arrow_schema()
        for placement, sids in self.dist.current.by_worker().items():
            await self._tell_schema(placement, sids)
        self._log.info("schema changed", version=schema.version, fields=len(schema.fields))

    async def _tell_schema(self, placement: Placement, sids: list[int]) -> None:
        try:
            await self._workers.at(placement.address).update_schema(self.collection_id, self.schema)
        except (grpc.aio.AioRpcError, StrataError) as err:
            self._take_offline(sids, f"schema change on node {placement.node_id} failed: {err}")
