"""The in-process WAL benchmark: ``WAL`` over the ``local`` backend, no gRPC.

Every append is fsync'd (``sync=True``); timestamps come from
:class:`wal_common.MonotonicTSO`.

Append: ``P`` producers each loop on ``WAL.append([one message])`` for
``seconds``; reported are messages/s, MB/s (payload bytes, 10^6), p50/p99
ack latency and fsyncs/s of the backend. Consume: a WAL is filled, then one
reader reads every message in **tailing** mode (served by the write-ahead
buffer) and in **catch-up** mode (a WAL whose buffer is too small to help,
so everything comes from the segment files, mostly from the page cache).
Each case uses its own WAL under ``root``.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from wal_common import MonotonicTSO, insert_message, per_s, percentile_ms

from protos.common_pb2 import MessageType
from streamingnode.wal.scanner import ScannerStats
from streamingnode.wal.wab import BufferOptions
from streamingnode.wal.wal import WAL
from streamingnode.walimpls import DeliverPolicy, MessageID, WALOpener, build_opener
from streamingnode.walimpls.impls.local import LocalWAL


async def _open(root: Path, name: str, buffer: BufferOptions | None = None) -> tuple[WAL, WALOpener]:
    opener = build_opener("local", root_dir=root / name, sync=True)
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


async def bench_append(root: Path, producers: int, size: int, seconds: float) -> dict[str, Any]:
    wal, opener = await _open(root, f"append-{producers}-{size}")
    impl = wal.impl
    assert isinstance(impl, LocalWAL)
    msg = insert_message(size)
    latencies: list[float] = []

    async def produce(deadline: float) -> None:
        while time.perf_counter() < deadline:
            t0 = time.perf_counter()
            await wal.append([msg])
            latencies.append(time.perf_counter() - t0)

    try:
        fsyncs0, commits0 = impl.fsync_count, impl.commit_count
        start = time.perf_counter()
        async with asyncio.TaskGroup() as tg:
            for _ in range(producers):
                tg.create_task(produce(start + seconds))
        elapsed = time.perf_counter() - start
        fsyncs, commits = impl.fsync_count - fsyncs0, impl.commit_count - commits0
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


async def bench_consume(root: Path, size: int, total: int) -> dict[str, Any]:
    out: dict[str, Any] = {"message_bytes": size, "messages": total}
    # Tailing: the default 64 MiB buffer holds the whole fill.
    # Catch-up: a 64 KiB buffer, so the reader only reaches it at the very end.
    for mode, options in (("tailing", BufferOptions()), ("catch_up", BufferOptions(max_bytes=64 * 1024))):
        wal, opener = await _open(root, f"consume-{mode}-{size}", options)
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


async def run_inprocess(root: Path, seconds: float) -> dict[str, Any]:
    """Every in-process case, each on its own WAL under ``root``; the ``"inprocess"`` part of the result."""
    started = time.perf_counter()
    append = [
        await bench_append(root, producers, size, seconds) for size in (1024, 65536) for producers in (1, 8, 64)
    ]
    consume = [await bench_consume(root, 1024, 50_000), await bench_consume(root, 65536, 900)]
    return {
        "transport": "in-process (no gRPC), in-memory monotonic TSO",
        "backend": "local, sync=True (one fsync per group commit)",
        "append": append,
        "consume": consume,
        "seconds": round(time.perf_counter() - started, 1),
    }
