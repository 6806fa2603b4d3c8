"""Insert and delete: validate, route rows to vchannels by PK hash, append to the WAL."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from common.coordapi import CoordinatorAPI
from common.errors import InvalidArgument
from common.message import Delete, Insert, TypedMessage
from common.routing import shard_indices
from common.storage.layout import ALL_PARTITIONS
from proxy.metacache import CollectionEntry
from streamingnode.client.producer import Producer

# Keep one WAL message well below gRPC and backend limits.
MAX_MESSAGE_ROWS = 20_000


async def allocate_ids(coord: CoordinatorAPI, count: int) -> np.ndarray:
    begin = await coord.alloc_ids(count)
    return np.arange(begin, begin + count, dtype=np.int64)


def _by_shard(pks: pa.Array, shards: int) -> list[np.ndarray]:
    idx = shard_indices(pks, shards)
    return [np.nonzero(idx == s)[0] for s in range(shards)]


def _rows(table: pa.Table, rows: np.ndarray) -> pa.Table:
    """The rows of ``table`` at ``rows`` (ascending, distinct): the table itself when that is all of them."""
    return table if len(rows) == table.num_rows else table.take(pa.array(rows))


def _delete(vchannel: str, collection_id: int, pks: pa.Array, partition_id: int | None) -> Delete:
    """A Delete of ``pks`` in ``partition_id`` (None: every partition)."""
    scope = ALL_PARTITIONS if partition_id is None else partition_id
    return Delete.of(vchannel=vchannel, collection_id=collection_id, pks=pks, partition_id=scope)


def _partitions_of(coll: CollectionEntry, table: pa.Table, partition_id: int | None) -> np.ndarray:
    """The partition of every row: the one named, or by the partition key's hash."""
    key = coll.partition_key
    if key is None:
        return np.full(table.num_rows, coll.default_partition_id if partition_id is None else partition_id)
    values = table.column(key).combine_chunks()
    if values.null_count:
        raise InvalidArgument(f"the partition key field {key} cannot be null")
    ids = np.asarray([pid for _, pid in coll.key_partitions], dtype=np.int64)
    return ids[shard_indices(values, len(ids))]


def _inserts(coll: CollectionEntry, shard: int, part: pa.Table, partitions: np.ndarray) -> list[TypedMessage]:
    out: list[TypedMessage] = []
    pids = np.unique(partitions)
    for pid in pids:
        rows = part.take(pa.array(np.nonzero(partitions == pid)[0])) if len(pids) > 1 else part
        out += [
            Insert.of(
                vchannel=coll.vchannels[shard],
                collection_id=coll.collection_id,
                partition_id=int(pid),
                table=rows.slice(i, MAX_MESSAGE_ROWS),
            )
            for i in range(0, rows.num_rows, MAX_MESSAGE_ROWS)
        ]
    return out


async def insert_table(
    producer: Producer, coll: CollectionEntry, table: pa.Table, partition_id: int | None = None
) -> int:
    """Append ``table``'s rows to their vchannels, into ``partition_id`` (None: the default
    partition, or by partition key); returns the largest append timetick."""
    pk = coll.schema.primary_field.name
    partitions = _partitions_of(coll, table, partition_id)
    groups = _by_shard(table.column(pk).combine_chunks(), len(coll.vchannels))
    appends = []
    for shard, rows in enumerate(groups):
        if len(rows) == 0:
            continue
        messages = _inserts(coll, shard, _rows(table, rows), partitions[rows])
        appends.append(producer.append(coll.pchannels[shard], messages))
    results = await asyncio.gather(*appends)
    return max((r.timetick for rs in results for r in rs), default=0)


async def delete_pks(
    producer: Producer, coll: CollectionEntry, pks: Sequence[int | str], partition_id: int | None = None
) -> int:
    """Append deletes of ``pks`` in ``partition_id`` (None: every partition); returns the largest
    append timetick (0 if nothing to delete).

    As in Milvus, a delete naming a partition removes the keys' rows there only; a key's rows
    in other partitions stay.
    """
    pk_field = coll.schema.primary_field
    try:
        arr = pa.array(list(pks), type=pk_field.arrow_type())
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as err:
        raise InvalidArgument(f"primary keys do not match the type of field {pk_field.name}: {err}") from err
    groups = _by_shard(arr, len(coll.vchannels))
    appends = []
    for shard, rows in enumerate(groups):
        if len(rows) == 0:
            continue
        appends.append(
            producer.append(
                coll.pchannels[shard],
                [_delete(coll.vchannels[shard], coll.collection_id, arr.take(pa.array(rows)), partition_id)],
            )
        )
    results = await asyncio.gather(*appends)
    return max((r.timetick for rs in results for r in rs), default=0)


async def upsert_table(
    producer: Producer,
    coll: CollectionEntry,
    table: pa.Table,
    deleted: pa.Array,
    partition_id: int | None = None,
    *,
    delete_partition: int | None = None,
) -> int:
    """Delete the keys ``deleted`` in ``delete_partition`` (None: every partition) and insert
    ``table``'s rows into ``partition_id``, per vchannel in one transaction.

    The keys deleted are those the request named (an auto-id collection gives the new rows
    new keys, so they may differ from ``table``'s, and go to other vchannels). Milvus deletes
    them in the upsert's partition (every partition for a partition-key collection). The
    delete and the insert of a vchannel share one timetick, and a delete at T never hides a
    row inserted at T, so readers see the new version and never a gap.
    """
    pk = coll.schema.primary_field.name
    partitions = _partitions_of(coll, table, partition_id)
    inserts = _by_shard(table.column(pk).combine_chunks(), len(coll.vchannels))
    deletes = _by_shard(deleted, len(coll.vchannels))
    appends = []
    for shard, (rows, keys) in enumerate(zip(inserts, deletes, strict=True)):
        if len(rows) == 0 and len(keys) == 0:
            continue
        vchannel = coll.vchannels[shard]
        messages: list[TypedMessage] = []
        if len(keys):
            messages.append(
                _delete(vchannel, coll.collection_id, deleted.take(pa.array(keys)), delete_partition)
            )
        if len(rows):
            messages += _inserts(coll, shard, _rows(table, rows), partitions[rows])
        appends.append(producer.append(coll.pchannels[shard], messages, txn=True))
    results = await asyncio.gather(*appends)
    return max((r.timetick for rs in results for r in rs), default=0)
