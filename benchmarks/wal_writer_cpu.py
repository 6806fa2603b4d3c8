"""CPU the WAL writer spends per appended Insert: in-process, one appender, a backend that keeps nothing.

    PYTHONPATH=$PWD:benchmarks .venv/bin/python benchmarks/wal_writer_cpu.py [--rows 1000] [--dim 128]
        [--appends 2000] [--no-shard] [--typed]

One Insert of ``--rows`` rows (an int64 ``id``, a ``--dim`` float vector ``v``) is built once; a
``WAL`` with the shard interceptor (segment assignment; ``--no-shard``: no interceptor) appends
copies of it one after another, each awaited, over a backend that only hands out ids (no file,
no fsync: what is left is the writer's own work, the buffer and the appender's await). The copies
for a round of 100 appends are made before its clock starts (the WAL takes its messages over).
By default each goes through ``WAL.append``, which decodes the envelope once (as ``Produce`` does
in a cluster); ``--typed`` hands over the typed message with it (``WAL.append_typed``, as the
producer of a standalone process does), so nothing is decoded.
Prints the process CPU time (user + system, all threads) per append and the wall time per
append, after 100 untimed appends. ``hotpath.py insert`` measures the same append through the
whole node (proxy, gRPC, flusher), where the writer's share is lost in the rest.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
from compare_measure import frozen_gc
from wal_common import MonotonicTSO, configure_logging

from common.message import CreateCollection, Insert, Outgoing
from common.schema import CollectionSchema, DataType, FieldSchema
from protos.common_pb2 import Message
from streamingnode.shard import SealPolicy, ShardManager
from streamingnode.wal.shard_interceptor import ShardInterceptor
from streamingnode.wal.wal import WAL
from streamingnode.walimpls.wal import DeliverPolicy, MessageID, Scanner

ROUND = 100


class NullBackend:
    """A ``WALImpl`` that keeps nothing: an append costs its ids."""

    channel = "p0"
    term = 1

    def __init__(self) -> None:
        self._seq = 0

    async def append(self, payloads: Sequence[bytes]) -> list[MessageID]:
        first = self._seq + 1
        self._seq += len(payloads)
        return [MessageID(s) for s in range(first, self._seq + 1)]

    def read(self, policy: DeliverPolicy) -> Scanner:
        raise NotImplementedError("the benchmark reads nothing")

    async def truncate(self, message_id: MessageID) -> None:
        pass

    def last_message_id(self) -> MessageID | None:
        return MessageID(self._seq) if self._seq else None

    def first_message_id(self) -> MessageID | None:
        return MessageID(1) if self._seq else None

    async def close(self) -> None:
        pass


class Ids:
    def __init__(self) -> None:
        self.next = 1

    async def allocate(self, count: int) -> int:
        self.next += count
        return self.next - count


def _insert(rows: int, dim: int) -> Insert:
    vectors = np.random.default_rng(0).random((rows, dim), dtype=np.float32)
    table = pa.table(
        {"id": pa.array(range(rows), pa.int64()), "v": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), dim)}
    )
    return Insert.of(vchannel="v0", collection_id=1, partition_id=2, table=table)


def _copies(typed: Insert, n: int) -> list[Outgoing]:
    msg = typed.encode()
    out = []
    for _ in range(n):
        m = Message()
        m.CopyFrom(msg)
        out.append(Outgoing(m, typed))
    return out


async def run(args: argparse.Namespace) -> None:
    links = [] if args.no_shard else [ShardInterceptor(ShardManager(SealPolicy()), Ids())]
    wal = WAL(NullBackend(), MonotonicTSO(), tick_interval=1.0, interceptors=links)
    await wal.start()
    schema = CollectionSchema(
        name="c",
        fields=(
            FieldSchema(field_id=100, name="id", dtype=DataType.INT64, is_primary=True),
            FieldSchema(field_id=101, name="v", dtype=DataType.FLOAT_VECTOR, dim=args.dim),
        ),
    )
    try:
        await wal.append([CreateCollection(vchannel="v0", collection_id=1, schema=schema).encode()])
        insert = _insert(args.rows, args.dim)
        async def append(o: Outgoing) -> None:
            await (wal.append_typed([o]) if args.typed else wal.append([o.msg]))

        for o in _copies(insert, ROUND):  # untimed
            await append(o)
        cpu = wall = 0.0
        done = 0
        with frozen_gc():
            while done < args.appends:
                batch = _copies(insert, min(ROUND, args.appends - done))
                c0, w0 = time.process_time(), time.perf_counter()
                for o in batch:
                    await append(o)
                cpu += time.process_time() - c0
                wall += time.perf_counter() - w0
                done += len(batch)
                del batch
    finally:
        await wal.close()
    body = len(insert.ipc)
    print(
        f"{'no interceptor' if args.no_shard else 'shard interceptor'}, {'typed' if args.typed else 'decoded'}: {done} appends of {args.rows} rows "
        f"(body {body / 1024:.0f} KiB): {cpu / done * 1e6:.1f} us CPU, {wall / done * 1e6:.1f} us wall per append"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1000)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--appends", type=int, default=2000)
    ap.add_argument("--no-shard", action="store_true", help="a WAL without interceptors")
    ap.add_argument("--typed", action="store_true", help="hand the typed message over (WAL.append_typed)")
    configure_logging()
    asyncio.run(run(ap.parse_args()))


if __name__ == "__main__":
    main()
