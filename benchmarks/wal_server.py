"""The streaming node's gRPC services on their own: the server half of the gRPC WAL benchmark.

``wal_grpc.py`` runs it as a child process::

    python benchmarks/wal_server.py --wal-dir DIR [--port 0] [--tick-interval 0.2] [--max-seconds 600]

It serves ``StreamingNodeManager`` and ``StreamingNodeHandler`` on 127.0.0.1
only, over a ``WALManager`` of the ``local`` backend (``sync=True``) under
``--wal-dir``. The benchmark opens and removes pchannels through the
Manager's ``Assign`` / ``Remove``. Timestamps come from an in-process
monotonic TSO: the coordinator's ``AllocTimestamp`` RPC (one per group
commit in a real node) is not in the loop. No etcd, no session.

Protocol: one JSON object per stdout line (logs go to stderr).

* ``{"event": "listening", "port": P}`` once serving;
* stdin ``stats`` answers ``{"event": "stats", "wals": {pchannel: {"term",
  "fsync_count", "commit_count"}}}`` for every open WAL;
* stdin EOF (the benchmark closed it, or died), SIGTERM or ``--max-seconds``
  shut the server down, then ``{"event": "exit", "wals", "fsync_count",
  "commit_count"}`` totals over every WAL it had open.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
from wal_common import MonotonicTSO, configure_logging

from common.grpcutil import start_server
from protos import streaming_pb2_grpc
from streamingnode.service.handler import HandlerService
from streamingnode.service.manager import ManagerService
from streamingnode.wal.wal import WAL
from streamingnode.walimpls import build_opener
from streamingnode.walimpls.impls.local import LocalWAL
from streamingnode.walmanager.manager import WALManager


def _emit(event: str, **fields: Any) -> None:
    print(json.dumps({"event": event, **fields}), flush=True)


def _counters(wal: WAL) -> tuple[int, int]:
    impl = wal.impl
    assert isinstance(impl, LocalWAL), "the benchmark server only runs the local backend"
    return impl.fsync_count, impl.commit_count


@dataclass(slots=True)
class _Totals:
    """Counters of the WALs already closed (``on_close`` adds each one)."""

    wals: int = 0
    fsync_count: int = 0
    commit_count: int = 0

    async def on_close(self, wal: WAL) -> None:
        fsyncs, commits = _counters(wal)
        self.wals += 1
        self.fsync_count += fsyncs
        self.commit_count += commits


def _stats(manager: WALManager) -> dict[str, dict[str, int]]:
    out = {}
    for state in manager.states():
        if state.available:
            fsyncs, commits = _counters(manager.get(state.pchannel, state.term))
            out[state.pchannel] = {"term": state.term, "fsync_count": fsyncs, "commit_count": commits}
    return out


async def _commands(manager: WALManager) -> None:
    """Answer ``stats`` lines on stdin until it reaches EOF."""
    reader = asyncio.StreamReader()
    loop = asyncio.get_running_loop()
    transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    try:
        while line := await reader.readline():
            match line.strip():
                case b"stats":
                    _emit("stats", wals=_stats(manager))
                case other:
                    print(f"wal_server: unknown command {other!r}", file=sys.stderr, flush=True)
    finally:
        transport.close()


async def serve(wal_dir: Path, port: int, tick_interval: float, max_seconds: float) -> None:
    opener = build_opener("local", root_dir=wal_dir, sync=True)
    totals = _Totals()
    manager = WALManager(opener, MonotonicTSO(), tick_interval=tick_interval, on_close=totals.on_close)

    def add(server: grpc.aio.Server) -> None:
        streaming_pb2_grpc.add_StreamingNodeManagerServicer_to_server(ManagerService(manager), server)
        streaming_pb2_grpc.add_StreamingNodeHandlerServicer_to_server(HandlerService(manager), server)

    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    server: grpc.aio.Server | None = None
    try:
        server, bound = await start_server(add, host="127.0.0.1", port=port)
        _emit("listening", port=bound)
        commands = asyncio.create_task(_commands(manager), name="commands")
        stopped = asyncio.create_task(stop.wait(), name="sigterm")
        try:
            await asyncio.wait([commands, stopped], timeout=max_seconds, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (commands, stopped):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
    finally:
        # In reverse order of start: no new RPCs, then the WALs, then the backend.
        if server is not None:
            await server.stop(grace=1)
        try:
            await manager.close()
        finally:
            await opener.close()
        _emit("exit", wals=totals.wals, fsync_count=totals.fsync_count, commit_count=totals.commit_count)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--wal-dir", type=Path, required=True, help="root directory of the local backend")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: a free one)")
    parser.add_argument("--tick-interval", type=float, default=0.2, help="seconds between idle TimeTicks")
    parser.add_argument("--max-seconds", type=float, default=600.0, help="exit after this long in any case")
    args = parser.parse_args()
    configure_logging()
    asyncio.run(serve(args.wal_dir, args.port, args.tick_interval, args.max_seconds))


if __name__ == "__main__":
    main()
