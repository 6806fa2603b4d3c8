"""WAL benchmark: append and consume throughput of ``WAL`` over the ``local`` backend.

In-process (no gRPC, an in-memory TSO); every append is fsync'd (``sync=True``).
Prints one JSON line. Run from the repo root::

    .venv/bin/python benchmarks/wal.py [--seconds 2] [--dir /path/on/the/disk]

Append: ``P`` producers each loop on ``WAL.append([one message])`` for
``--seconds``; reported are messages/s, MB/s (payload bytes, 10^6), p50/p99
ack latency and fsyncs/s of the backend. Consume: a WAL is filled, then one
reader reads every message in **tailing** mode (served by the write-ahead
buffer) and in **catch-up** mode (a WAL whose buffer is too small to help,
so everything comes from the segment files, mostly from the page cache).
Everything runs under a temporary directory that is removed at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import structlog

from protos.common_pb2 import Message, MessageType
from streamingnode.wal.scanner import ScannerStats
from streamingnode.wal.wab import BufferOptions
from streamingnode.wal.wal import WAL
from streamingnode.walimpls import DeliverPolicy, MessageID, build_opener
from streamingnode.walimpls.impls.local import LocalWAL

_HEADER = json.dumps({"collection_id": 1, "rows": 1}).encode()


class MemoryTSO:
    """A TSO without RPCs: the benchmark measures the WAL, not the coordinator."""

    def __init__(self) -> None:
        self._next = 1

    async def allocate(self, count: int) -> int:
        first = self._next
        self._next += count
        return first


def _message(size: int) -> Message:
    return Message(type=MessageType.INSERT, vchannel="v0", header=_HEADER, body=b"b" * size)


async def _open(root: Path, name: str, buffer: BufferOptions | None = None) -> tuple[WAL, Any]:
    opener = build_opener("local", root_dir=root / name, sync=True)
    impl = await opener.open(name, 1)
    wal = WAL(impl, MemoryTSO(), buffer=buffer)
    await wal.start()
    return wal, opener


async def _close(wal: WAL, opener: Any) -> None:
    await wal.close()
    await opener.close()


def _ms(values: list[float], q: float) -> float:
    if len(values) < 2:
        return round(values[0] * 1e3, 3) if values else 0.0
    return round(statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1] * 1e3, 3)


async def bench_append(root: Path, producers: int, size: int, seconds: float) -> dict[str, Any]:
    wal, opener = await _open(root, f"append-{producers}-{size}")
    impl = wal.impl
    assert isinstance(impl, LocalWAL)
    msg = _message(size)
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
        "messages_per_s": round(n / elapsed),
        "mb_per_s": round(n * size / elapsed / 1e6, 1),
        "ack_p50_ms": _ms(latencies, 50),
        "ack_p99_ms": _ms(latencies, 99),
        "fsyncs_per_s": round(fsyncs / elapsed),
        "messages_per_commit": round(n / max(commits, 1), 1),
    }


async def _fill(wal: WAL, size: int, total: int, producers: int = 64) -> MessageID:
    msg = _message(size)
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
            "messages_per_s": round(total / elapsed),
            "mb_per_s": round(total * size / elapsed / 1e6, 1),
            "from_buffer": stats.from_buffer,
            "from_backend": stats.from_backend,
            "switches_to_tailing": stats.to_tailing,
        }
    return out


async def run(root: Path, seconds: float) -> dict[str, Any]:
    started = time.perf_counter()
    append = [
        await bench_append(root, producers, size, seconds) for size in (1024, 65536) for producers in (1, 8, 64)
    ]
    consume = [await bench_consume(root, 1024, 50_000), await bench_consume(root, 65536, 900)]
    return {
        "benchmark": "wal",
        "transport": "in-process (no gRPC), in-memory TSO",
        "backend": "local, sync=True (one fsync per group commit)",
        "seconds_per_append_case": seconds,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "append": append,
        "consume": consume,
        "total_seconds": round(time.perf_counter() - started, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=2.0, help="duration of each append case")
    parser.add_argument("--dir", type=Path, default=None, help="parent of the temporary directory")
    args = parser.parse_args()
    structlog.configure(
        wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
    )
    with tempfile.TemporaryDirectory(prefix="strata-wal-bench-", dir=args.dir) as tmp:
        result = asyncio.run(run(Path(tmp), args.seconds))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
