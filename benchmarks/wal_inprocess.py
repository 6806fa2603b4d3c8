"""The in-process WAL benchmark: ``WAL`` over a backend, no gRPC.

``local``: every append is fsync'd (``sync=True``). ``nats``: the WAL is a
JetStream stream on a ``nats-server`` child on 127.0.0.1 (one replica, see
``wal.py``). Timestamps come from :class:`wal_common.MonotonicTSO`.

Append: ``P`` producers each loop on ``WAL.append([one message])`` for
``seconds``; reported are messages/s, MB/s (payload bytes, 10^6), p50/p99
ack latency and fsyncs/s of the backend (``local``) or commits/s (``nats``:
one atomic batch per group commit). Consume: a WAL is filled, then one
reader reads every message in **tailing** mode (served by the write-ahead
buffer) and in **catch-up** mode (a WAL whose buffer is too small to help,
so everything comes from the backend: the segment files, mostly from the
page cache, or a JetStream consumer). Each case uses its own WAL (a directory
under ``root``, or a stream).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from wal_common import MonotonicTSO, insert_message, per_s, percentile_ms

from protos.common_pb2 import MessageType
from streamingnode.wal.scanner import ScannerStats
from streamingnode.wal.wab import BufferOptions
from streamingnode.wal.wal import WAL
from streamingnode.walimpls import DeliverPolicy, MessageID, WALOpener, build_opener
from streamingnode.walimpls.impls.local import LocalWAL
from streamingnode.walimpls.impls.nats import NatsWAL

# case name -> a new opener holding that case's WAL
OpenerFactory = Callable[[str], WALOpener]


def local_openers(root: Path) -> OpenerFactory:
    return lambda name: build_opener("local", root_dir=root / name, sync=True)


def nats_openers(url: str, prefix: str) -> OpenerFactory:
    return lambda name: build_opener("nats", servers=url, stream_prefix=prefix)


async def _open(openers: OpenerFactory, name: str, buffer: BufferOptions | None = None) -> tuple[WAL, WALOpener]:
    opener = openers(name)
    impl = await opener.open(name, 1)
    wal = WAL(impl, MonotonicTSO(), buffer=buffer)
    try:
        await wal.start()
    except BaseException:
        await impl.close()
        await opener.close()
        raise
    return wal, opener


async def _close(wal: WAL, opener: WALOpener) -> None:
    try:
        await wal.close()
    finally:
        await opener.close()


def _fsyncs(impl: object) -> int:
    return impl.fsync_count if isinstance(impl, LocalWAL) else 0


def _commits(impl: object) -> int:
    assert isinstance(impl, LocalWAL | NatsWAL)
    return impl.commit_count


async def bench_append(openers: OpenerFactory, producers: int, size: int, seconds: float) -> dict[str, Any]:
    wal, opener = await _open(openers, f"append-{producers}-{size}")
    impl = wal.impl
    msg = insert_message(size)
    latencies: list[float] = []

    async def produce(deadline: float) -> None:
        while time.perf_counter() < deadline:
            t0 = time.perf_counter()
            await wal.append([msg])
            latencies.append(time.perf_counter() - t0)

    try:
        fsyncs0, commits0 = _fsyncs(impl), _commits(impl)
        start = time.perf_counter()
        async with asyncio.TaskGroup() as tg:
            for _ in range(producers):
                tg.create_task(produce(start + seconds))
        elapsed = time.perf_counter() - start
        fsyncs, commits = _fsyncs(impl) - fsyncs0, _commits(impl) - commits0
    finally:
        await _close(wal, opener)
    n = len(latencies)
    return {
        "producers": producers,
        "message_bytes": size,
        "messages": n,
        "messages_per_s": per_s(n, elapsed),
        "mb_per_s": per_s(n * size / 1e6, elapsed, 1),
        "ack_p50_ms": percentile_ms(latencies, 50),
        "ack_p99_ms": percentile_ms(latencies, 99),
        "fsyncs_per_s": per_s(fsyncs, elapsed),
        "commits_per_s": per_s(commits, elapsed),
        "messages_per_commit": round(n / max(commits, 1), 1),
    }


async def _fill(wal: WAL, size: int, total: int, producers: int = 64) -> MessageID:
    msg = insert_message(size)
    first: list[MessageID] = []

    async def produce(count: int) -> None:
        for _ in range(count):
            done = await wal.append([msg])
            if not first:
                first.append(done[0].message_id)

    async with asyncio.TaskGroup() as tg:
        for p in range(producers):
            tg.create_task(produce(total // producers + (p < total % producers)))
    return min(first)


async def _consume(wal: WAL, start: MessageID, total: int) -> tuple[float, ScannerStats]:
    scanner = wal.scanner(DeliverPolicy.start_from(start))
    seen = 0
    t0 = time.perf_counter()
    async for _, msg in scanner:
        if msg.type == MessageType.INSERT:
            seen += 1
            if seen == total:
                break
    return time.perf_counter() - t0, scanner.stats


async def bench_consume(openers: OpenerFactory, size: int, total: int) -> dict[str, Any]:
    out: dict[str, Any] = {"message_bytes": size, "messages": total}
    # Tailing: the default 64 MiB buffer holds the whole fill.
    # Catch-up: a 64 KiB buffer, so the reader only reaches it at the very end.
    for mode, options in (("tailing", BufferOptions()), ("catch_up", BufferOptions(max_bytes=64 * 1024))):
        wal, opener = await _open(openers, f"consume-{mode}-{size}", options)
        try:
            first = await _fill(wal, size, total)
            elapsed, stats = await _consume(wal, first, total)
        finally:
            await _close(wal, opener)
        out[mode] = {
            "messages_per_s": per_s(total, elapsed),
            "mb_per_s": per_s(total * size / 1e6, elapsed, 1),
            "from_buffer": stats.from_buffer,
            "from_backend": stats.from_backend,
            "switches_to_tailing": stats.to_tailing,
        }
    return out


async def run_inprocess(
    openers: OpenerFactory, seconds: float, backend: str = "local, sync=True (one fsync per group commit)"
) -> dict[str, Any]:
    """Every in-process case, each on its own WAL from ``openers``; an ``"inprocess*"`` part of the result."""
    started = time.perf_counter()
    append = [
        await bench_append(openers, producers, size, seconds) for size in (1024, 65536) for producers in (1, 8, 64)
    ]
    consume = [await bench_consume(openers, 1024, 50_000), await bench_consume(openers, 65536, 900)]
    return {
        "transport": "in-process (no gRPC), in-memory monotonic TSO",
        "backend": backend,
        "append": append,
        "consume": consume,
        "seconds": round(time.perf_counter() - started, 1),
    }
