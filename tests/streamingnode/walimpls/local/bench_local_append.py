"""Micro-benchmark of the ``local`` WAL: concurrent producers, then one scan.

Not collected by pytest (no ``test_`` prefix). Run it from the repo root::

    .venv/bin/python tests/streamingnode/walimpls/local/bench_local_append.py \
        --producers 64 --size 1024 --seconds 3 [--dir /path/on/the/real/disk]

It prints numbers and asserts nothing about time.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import tempfile
import time
from pathlib import Path

import structlog

from streamingnode.walimpls import DeliverPolicy, build_opener
from streamingnode.walimpls.impls.local import LocalWAL


async def _produce(wal: LocalWAL, payload: bytes, deadline: float, counts: list[int]) -> None:
    n = 0
    while time.monotonic() < deadline:
        await wal.append([payload])
        n += 1
    counts.append(n)


async def _scan(wal: LocalWAL, total: int) -> float:
    start = time.monotonic()
    seen = 0
    async for _ in wal.read(DeliverPolicy.all()):
        seen += 1
        if seen == total:
            break
    return time.monotonic() - start


async def run(root: Path, producers: int, size: int, seconds: float, sync: bool) -> None:
    opener = build_opener("local", root_dir=root, sync=sync)
    wal = await opener.open("bench", 1)
    assert isinstance(wal, LocalWAL)
    payload = b"b" * size
    counts: list[int] = []
    start = time.monotonic()
    async with asyncio.TaskGroup() as tg:
        for _ in range(producers):
            tg.create_task(_produce(wal, payload, start + seconds, counts))
    elapsed = time.monotonic() - start
    total = sum(counts)
    print(
        f"sync={sync} producers={producers} size={size}B: {total} appends in {elapsed:.2f}s = "
        f"{total / elapsed:,.0f} msg/s, {total * size / elapsed / 2**20:,.1f} MiB/s, "
        f"{wal.commit_count} commits ({total / max(wal.commit_count, 1):.1f} msg/commit), "
        f"{wal.fsync_count} fsyncs = {wal.fsync_count / elapsed:,.0f} fsync/s"
    )
    scan = await _scan(wal, total)
    print(f"  scan of {total} records: {scan:.2f}s = {total / scan:,.0f} msg/s")
    await opener.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--producers", type=int, default=64)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--no-sync", action="store_true")
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        asyncio.run(run(Path(tmp), args.producers, args.size, args.seconds, not args.no_sync))


if __name__ == "__main__":
    main()
