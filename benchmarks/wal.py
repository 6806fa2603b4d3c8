"""WAL benchmark: append and consume throughput, in-process and through gRPC.

Prints one JSON line. Run from the repo root, as a script (its sibling
modules are imported from this directory)::

    .venv/bin/python benchmarks/wal.py [--mode inprocess|grpc|both] [--backend local,nats]
                                       [--seconds 2] [--dir /path/on/the/disk]

* ``inprocess`` (``wal_inprocess.py``): ``WAL`` over the ``local`` backend,
  no gRPC; the lower bound of what the transport adds.
* ``grpc`` (``wal_grpc.py``): the streaming node's ``Produce`` / ``Consume``
  served by a child process (``wal_server.py``) on 127.0.0.1, driven by the
  real ``Producer`` and ``consume()`` clients; also checks issue #3's goals.

``--backend`` picks the backends of the in-process mode (``local`` by
default; ``local,nats`` measures both in one run). ``local`` uses
``sync=True``. ``nats`` starts ``nats-server -js`` children on 127.0.0.1
(one replica, file storage): one that fsyncs every write
(``sync_interval: always``, the same promise as ``local``) and one with
JetStream's default (flush to disk every 2 minutes), reported as
``"inprocess_nats_sync"`` and ``"inprocess_nats"``. The gRPC mode uses
``local`` only. Every case uses an in-process TSO (the coordinator's
``AllocTimestamp`` RPC is not measured). Everything runs under a temporary
directory that is removed at the end; server children are always ended, also
on Ctrl-C. With ``--seconds 2`` a ``both`` run takes about a minute, each
nats variant about half a minute more.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from wal_common import configure_logging
from wal_grpc import run_grpc
from wal_inprocess import local_openers, nats_openers, run_inprocess

from streamingnode.walimpls.impls.nats.server import NatsServer

BACKENDS = ("local", "nats")


async def run_nats(root: Path, seconds: float, *, sync_always: bool) -> dict[str, Any]:
    server = NatsServer(root, name="bench-nats", sync_always=sync_always)
    await asyncio.to_thread(server.start)
    try:
        what = "fsync every write (sync_interval: always)" if sync_always else "default sync (every 2 min)"
        return await run_inprocess(nats_openers(server.url, "bench"), seconds, f"nats, 1 replica, file storage, {what}")
    finally:
        await asyncio.to_thread(server.stop)


async def run(root: Path, mode: str, seconds: float, backends: tuple[str, ...] = ("local",)) -> dict[str, Any]:
    started = time.perf_counter()
    result: dict[str, Any] = {
        "benchmark": "wal",
        "mode": mode,
        "seconds_per_case": seconds,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
    }
    if mode in ("inprocess", "both"):
        if "local" in backends:
            result["inprocess"] = await run_inprocess(local_openers(root / "inprocess"), seconds)
        if "nats" in backends:
            result["inprocess_nats_sync"] = await run_nats(root / "nats-sync", seconds, sync_always=True)
            result["inprocess_nats"] = await run_nats(root / "nats", seconds, sync_always=False)
    if mode in ("grpc", "both"):
        result["grpc"] = await run_grpc(root / "grpc", seconds)
    result["total_seconds"] = round(time.perf_counter() - started, 1)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mode", choices=("inprocess", "grpc", "both"), default="both", help="which benchmark")
    parser.add_argument(
        "--backend", default="local", help="in-process backends, comma-separated: local, nats (default local)"
    )
    parser.add_argument("--seconds", type=float, default=2.0, help="duration of each append case")
    parser.add_argument("--dir", type=Path, default=None, help="parent of the temporary directory")
    args = parser.parse_args()
    if args.seconds <= 0:
        parser.error("--seconds must be positive")
    backends = tuple(b.strip() for b in args.backend.split(",") if b.strip())
    unknown = set(backends) - set(BACKENDS)
    if not backends or unknown:
        parser.error(f"--backend takes {', '.join(BACKENDS)} (comma-separated), got {args.backend!r}")
    configure_logging()
    try:
        with tempfile.TemporaryDirectory(prefix="strata-wal-bench-", dir=args.dir) as tmp:
            result = asyncio.run(run(Path(tmp), args.mode, args.seconds, backends))
    except KeyboardInterrupt:
        # The server child and the temporary directory are gone by now.
        sys.exit("interrupted")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
