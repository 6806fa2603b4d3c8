"""The floor under any Python server: pymilvus against a bare grpc.aio server with a canned answer.

    PYTHONPATH=.:benchmarks .venv/bin/python benchmarks/grpc_floor.py [--seconds 5] [--clients 16]
        [--nq 1,100] [--topk 10] [--compare-strata] [--rows 100000]

A child process serves ``MilvusService`` on loopback with grpc.aio: ``Connect``
answers success and ``Search`` answers a ``SearchResults`` built once at start
(``nq`` x ``topk`` int64 ids and float scores, the shape a real search
returns), doing no work per request besides grpc.aio's own (receive, decode,
call the handler, encode, send). The same pymilvus ``MilvusClient.search``
calls ``compare.py`` makes then run against it: nq=1 one after another,
nq=1 from ``--clients`` threads at once, nq=100 one after another. What a
server built on grpc.aio in one Python process cannot beat, whatever it does
per request, is what these take; with ``--compare-strata`` a standalone Strata
(``--rows`` clustered rows, HNSW, ``Eventually``) is measured in the same run,
so the part of each figure that is Strata's own work shows side by side.
The CPU each side spends per request (psutil, user + system) is printed too.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import psutil
from compare_measure import frozen_gc
from hotpath import index_and_load
from pymilvus import MilvusClient

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from common.ports import free_port  # noqa: E402

SERVER = r'''
import asyncio, sys
import grpc
from pymilvus.grpc_gen import common_pb2, milvus_pb2, milvus_pb2_grpc, schema_pb2

port, nq, topk = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])


def canned(n: int) -> milvus_pb2.SearchResults:
    data = schema_pb2.SearchResultData(num_queries=n, top_k=topk)
    data.ids.int_id.data.extend(range(n * topk))
    data.scores.extend(float(i) for i in range(n * topk))
    data.topks.extend([topk] * n)
    return milvus_pb2.SearchResults(status=common_pb2.Status(), results=data, collection_name="floor")


class Floor(milvus_pb2_grpc.MilvusServiceServicer):
    def __init__(self) -> None:
        self.answers = {n: canned(n) for n in (1, nq)}

    async def Connect(self, request, context):
        return milvus_pb2.ConnectResponse(status=common_pb2.Status(), identifier=1)

    async def Search(self, request, context):
        return self.answers.get(request.nq) or canned(request.nq)


class GenericOnly:
    """Registers the handlers as generic ones only, as Strata's servers do (common/grpcdecode.py):
    grpc.aio's registered methods cost an asyncio.wait over one task per method on every call."""

    def __init__(self, server) -> None:
        self.server = server

    def add_generic_rpc_handlers(self, handlers) -> None:
        self.server.add_generic_rpc_handlers(handlers)

    def add_registered_method_handlers(self, name, handlers) -> None:
        pass


async def main() -> None:
    server = grpc.aio.server()
    milvus_pb2_grpc.add_MilvusServiceServicer_to_server(Floor(), GenericOnly(server))
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    print("ready", flush=True)
    await server.wait_for_termination()

asyncio.run(main())
'''

Search = Callable[[MilvusClient, int], None]


def _cpu(pid: int) -> float:
    """User + system CPU seconds of ``pid`` and its children."""
    proc = psutil.Process(pid)
    total = 0.0
    for p in [proc, *proc.children(recursive=True)]:
        try:
            t = p.cpu_times()
            total += t.user + t.system
        except psutil.NoSuchProcess:
            pass
    return total


def _run(uri: str, server_pid: int, search: Search, *, clients: int, seconds: float) -> dict[str, float]:
    """``search`` from ``clients`` threads for ``seconds``: QPS (requests), p50/p99 ms, server and
    client CPU ms per request."""
    conns = [MilvusClient(uri, dedicated=True) for _ in range(clients)]
    latencies: list[float] = []
    for c in conns:
        for i in range(20):
            search(c, i)

    def loop(c: MilvusClient, first: int, end: float) -> None:
        i = first
        while time.perf_counter() < end:
            t = time.perf_counter()
            search(c, i)
            latencies.append(time.perf_counter() - t)
            i += clients

    me = psutil.Process()
    with frozen_gc():
        s0, c0, start = _cpu(server_pid), sum(me.cpu_times()[:2]), time.perf_counter()
        end = start + seconds
        threads = [threading.Thread(target=loop, args=(c, k, end)) for k, c in enumerate(conns)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.perf_counter() - start
        s1, c1 = _cpu(server_pid), sum(me.cpu_times()[:2])
    for c in conns:
        c.close()
    n = len(latencies)
    return {
        "qps": round(n / wall, 1),
        "p50_ms": round(statistics.median(latencies) * 1e3, 3),
        "p99_ms": round(float(np.percentile(latencies, 99)) * 1e3, 3),
        "server_cpu_ms": round((s1 - s0) / n * 1e3, 3),
        "client_cpu_ms": round((c1 - c0) / n * 1e3, 3),
    }


def _searches(queries: np.ndarray, nq: int, topk: int) -> Search:
    def search(c: MilvusClient, i: int) -> None:
        rows = [queries[(i * nq + j) % len(queries)].tolist() for j in range(nq)]
        c.search("floor", data=rows, limit=topk, search_params={"params": {"ef": 64}},
                 consistency_level="Eventually")

    return search


def _cases(args: argparse.Namespace) -> list[tuple[str, int, int]]:
    """(label, nq, clients) for each loop."""
    cases = []
    for nq in args.nq:
        cases.append((f"nq={nq}", nq, 1))
        if nq == 1 and args.clients > 1:
            cases.append((f"nq=1 x{args.clients}", 1, args.clients))
    return cases


def _floor(args: argparse.Namespace, queries: np.ndarray) -> dict[str, dict[str, float]]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(port), str(max(args.nq)), str(args.topk)],
        stdout=subprocess.PIPE, start_new_session=True, text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        return {
            label: _run(f"http://127.0.0.1:{port}", proc.pid, _searches(queries, nq, args.topk),
                        clients=clients, seconds=args.seconds)
            for label, nq, clients in _cases(args)
        }
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def _strata(args: argparse.Namespace, queries: np.ndarray, rows: np.ndarray) -> dict[str, dict[str, float]]:
    from pymilvus import DataType

    from tests.harness import Standalone

    with tempfile.TemporaryDirectory(prefix="strata-floor-") as tmp:
        server = Standalone(Path(tmp) / "data")
        server.start()
        try:
            client = MilvusClient(server.uri, dedicated=True)
            schema = MilvusClient.create_schema(auto_id=False)
            schema.add_field("id", DataType.INT64, is_primary=True)
            schema.add_field("v", DataType.FLOAT_VECTOR, dim=rows.shape[1])
            client.create_collection("floor", schema=schema, num_shards=1)
            for b in range(0, len(rows), 5000):
                client.insert("floor", [{"id": i, "v": rows[i]} for i in range(b, min(b + 5000, len(rows)))])
            client.flush("floor")
            index_and_load(client, "floor")
            client.close()
            return {
                label: _run(server.uri, server.proc.pid, _searches(queries, nq, args.topk),
                            clients=clients, seconds=args.seconds)
                for label, nq, clients in _cases(args)
            }
        finally:
            server.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--nq", default="1,100", help="comma-separated nq of the one-client loops")
    ap.add_argument("--topk", type=int, default=10)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--compare-strata", action="store_true", help="measure a standalone Strata in the same run")
    ap.add_argument("--rows", type=int, default=100_000, help="--compare-strata: clustered rows loaded")
    args = ap.parse_args()
    args.nq = [int(x) for x in args.nq.split(",") if x]
    if args.seconds <= 0 or args.clients < 1 or args.topk < 1 or not args.nq or min(args.nq) < 1:
        ap.error("--seconds, --clients, --topk and every --nq must be positive")
    from search_data import make_dataset

    data = make_dataset("clustered", args.rows if args.compare_strata else 1000, args.dim, 1000, seed=1)
    results = {"floor (bare grpc.aio)": _floor(args, data.queries)}
    if args.compare_strata:
        results["Strata standalone"] = _strata(args, data.queries, data.vectors)
    for system, cases in results.items():
        print(system)
        for label, r in cases.items():
            print(f"  {label:10s} {r}")


if __name__ == "__main__":
    main()
