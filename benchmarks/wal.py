"""WAL benchmark: append and consume throughput, in-process and through gRPC.

Prints one JSON line. Run from the repo root, as a script (its sibling
modules are imported from this directory)::

    .venv/bin/python benchmarks/wal.py [--mode inprocess|grpc|both] [--seconds 2] [--dir /path/on/the/disk]

* ``inprocess`` (``wal_inprocess.py``): ``WAL`` over the ``local`` backend,
  no gRPC; the lower bound of what the transport adds.
* ``grpc`` (``wal_grpc.py``): the streaming node's ``Produce`` / ``Consume``
  served by a child process (``wal_server.py``) on 127.0.0.1, driven by the
  real ``Producer`` and ``consume()`` clients; also checks issue #3's goals.

Both use the ``local`` backend with ``sync=True`` and an in-process TSO (the
coordinator's ``AllocTimestamp`` RPC is not measured). Everything runs under
a temporary directory that is removed at the end; the server child is
always ended, also on Ctrl-C. With ``--seconds 2`` a ``both`` run takes
about a minute.
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
from wal_inprocess import run_inprocess


async def run(root: Path, mode: str, seconds: float) -> dict[str, Any]:
    started = time.perf_counter()
    result: dict[str, Any] = {
        "benchmark": "wal",
        "mode": mode,
        "seconds_per_case": seconds,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
    }
    if mode in ("inprocess", "both"):
        result["inprocess"] = await run_inprocess(root / "inprocess", seconds)
    if mode in ("grpc", "both"):
        result["grpc"] = await run_grpc(root / "grpc", seconds)
    result["total_seconds"] = round(time.perf_counter() - started, 1)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mode", choices=("inprocess", "grpc", "both"), default="both", help="which benchmark")
    parser.add_argument("--seconds", type=float, default=2.0, help="duration of each append case")
    parser.add_argument("--dir", type=Path, default=None, help="parent of the temporary directory")
    args = parser.parse_args()
    if args.seconds <= 0:
        parser.error("--seconds must be positive")
    configure_logging()
    try:
        with tempfile.TemporaryDirectory(prefix="strata-wal-bench-", dir=args.dir) as tmp:
            result = asyncio.run(run(Path(tmp), args.mode, args.seconds))
    except KeyboardInterrupt:
        # The server child and the temporary directory are gone by now.
        sys.exit("interrupted")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
