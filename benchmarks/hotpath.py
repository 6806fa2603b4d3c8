"""Hot-path probe: one client against a standalone Strata, with the CPU each role spends per request.

    .venv/bin/python benchmarks/hotpath.py insert [--batches 55] [--batch 1000] [--dim 128] [--shards 1] [--loaded]
    .venv/bin/python benchmarks/hotpath.py search [--nq 1] [--seconds 10] [--rows 100000] [--dim 128] [--ef 64] [--shards 1]
                                                  [--filter 'tag >= 0']
                                                  [--clients 1] [--extra-proxies 0] [--only-extra]

``insert``: one pymilvus client inserts ``--batches`` batches of ``--batch``
random rows (built before the clock starts) into an unloaded collection (with
``--loaded``, an indexed and loaded one, so a delegator consumes every batch),
one after another, after 5 untimed ones. ``search``: ``--rows`` rows of the
benchmarks' clustered set (``search_data.make_dataset``) are inserted, flushed, indexed (HNSW M=16, efConstruction=200) and loaded, then
searches of ``--nq`` vectors at ``ef`` run one after another for ``--seconds``
(``Eventually``), with ``--filter`` as each search's filter (``tag`` is ``id % 100``). Both print rows/s or QPS and latency, and the CPU time each
process used per batch or request (psutil: user + system, all threads), so a
change on the path is measured side by side, in one process tree, with the
figures ``make bench`` cannot split. "node" is the process that runs the
streaming node, the query node and the proxy (``strata standalone-node``).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from compare_measure import frozen_gc
from pymilvus import DataType, MilvusClient
from search_data import make_dataset
from search_strata import role_cpu_seconds
from waits import wait_indexed

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.e2e.twoproxies import second_proxy  # noqa: E402
from tests.harness import Standalone  # noqa: E402


def _collection(client: MilvusClient, dim: int, shards: int) -> None:
    schema = MilvusClient.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("tag", DataType.INT64)
    schema.add_field("v", DataType.FLOAT_VECTOR, dim=dim)
    client.create_collection("hot", schema=schema, num_shards=shards)


def _timed(launcher_pid: int, run: Callable[[], int]) -> tuple[float, int, dict[str, float]]:
    """Wall seconds, units done and CPU seconds per role while ``run`` ran (with this process's
    objects frozen out of the garbage collector, as ``compare_measure`` does)."""
    with frozen_gc():
        before, start = role_cpu_seconds(launcher_pid), time.perf_counter()
        units = run()
    wall, after = time.perf_counter() - start, role_cpu_seconds(launcher_pid)
    return wall, units, {k: after[k] - before[k] for k in after}


def _print_cpu(cpu: dict[str, float], units: int, what: str) -> None:
    for role, seconds in cpu.items():
        if seconds:
            print(f"  {role:14s} CPU ms per {what}: {seconds / units * 1e3:.2f}")


def insert(server: Standalone, args: argparse.Namespace) -> None:
    client = MilvusClient(server.uri, dedicated=True)
    _collection(client, args.dim, args.shards)
    if args.loaded:  # a delegator consumes every insert while the batches arrive
        index_and_load(client)
    rng = np.random.default_rng(1)
    total = (args.batches + 5) * args.batch
    vectors = rng.standard_normal((total, args.dim)).astype(np.float32)
    batches = [
        [{"id": i, "tag": i % 100, "v": vectors[i]} for i in range(b, b + args.batch)]
        for b in range(0, total, args.batch)
    ]
    for rows in batches[:5]:
        client.insert("hot", rows)

    def run() -> int:
        for rows in batches[5:]:
            client.insert("hot", rows)
        return len(batches) - 5

    wall, n, cpu = _timed(server.proc.pid, run)
    print(f"insert: {n * args.batch / wall:,.0f} rows/s, {wall / n * 1e3:.2f} ms per batch of {args.batch:,}")
    _print_cpu(cpu, n, "batch")
    client.close()


def index_and_load(client: MilvusClient, collection: str = "hot") -> None:
    """HNSW (M=16, efConstruction=200, L2) on ``v``, loaded, every segment's index built."""
    index = client.prepare_index_params()
    index.add_index("v", index_type="HNSW", metric_type="L2", params={"M": 16, "efConstruction": 200})
    client.create_index(collection, index)
    client.load_collection(collection)
    wait_indexed(client, collection)


def search(server: Standalone, args: argparse.Namespace) -> None:
    client = MilvusClient(server.uri, dedicated=True)
    _collection(client, args.dim, args.shards)
    data = make_dataset("clustered", args.rows, args.dim, 1000, seed=1)
    rows, queries = data.vectors, data.queries
    for b in range(0, args.rows, 5000):
        client.insert("hot", [{"id": i, "tag": i % 100, "v": rows[i]} for i in range(b, min(b + 5000, args.rows))])
    client.flush("hot")
    index_and_load(client)

    client.close()
    latencies: list[float] = []
    uris = [server.uri]
    if args.extra_proxies:
        uris = [*args.extra_proxy_uris] if args.only_extra else [server.uri, *args.extra_proxy_uris]
    clients = [MilvusClient(uris[k % len(uris)], dedicated=True) for k in range(args.clients)]

    def loop(c: MilvusClient, first: int, end: float) -> None:
        i = first
        while time.perf_counter() < end:
            t = time.perf_counter()
            c.search(
                "hot", data=[queries[(i * args.nq + j) % 1000].tolist() for j in range(args.nq)], limit=10,
                search_params={"params": {"ef": args.ef}}, consistency_level="Eventually", filter=args.filter,
            )
            latencies.append(time.perf_counter() - t)  # list.append is atomic under the GIL
            i += args.clients

    for c in clients:  # connections, the proxies' caches
        loop(c, 0, time.perf_counter() + 0.2)
    latencies.clear()

    def run() -> int:
        end = time.perf_counter() + args.seconds
        if args.clients == 1:
            loop(clients[0], 0, end)
            return len(latencies)
        threads = [threading.Thread(target=loop, args=(c, k, end)) for k, c in enumerate(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return len(latencies)

    wall, n, cpu = _timed(server.proc.pid, run)
    p50, p99 = (float(np.percentile(latencies, q)) * 1e3 for q in (50, 99))
    print(f"search nq={args.nq} clients={args.clients}{' filter=' + repr(args.filter) if args.filter else ''}: {n * args.nq / wall:,.0f} QPS, p50 {p50:.2f} ms, p99 {p99:.2f} ms ({n} requests)")
    _print_cpu(cpu, n, "request")
    if args.extra_proxies:
        print(f"  (the {args.extra_proxies} extra proxies' own CPU is not counted above)")
    for c in clients:
        c.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("path", choices=["insert", "search"])
    ap.add_argument("--batches", type=int, default=55)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--shards", type=int, default=1)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--nq", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--ef", type=int, default=64)
    ap.add_argument("--clients", type=int, default=1, help="search: clients searching at once, a thread each")
    ap.add_argument("--extra-proxies", type=int, default=0,
                    help="search: proxies started beside the standalone (`strata proxy`, reads over gRPC); "
                         "the clients take the proxies in turn")
    ap.add_argument("--only-extra", action="store_true", help="search: clients use only the extra proxies")
    ap.add_argument("--filter", default="", help="search: the filter of every search")
    ap.add_argument("--loaded", action="store_true", help="insert: into an indexed, loaded collection")
    args = ap.parse_args()
    if args.only_extra and not args.extra_proxies:
        ap.error("--only-extra needs --extra-proxies")
    if min(args.batches, args.batch, args.shards, args.dim, args.nq, args.rows, args.ef, args.clients) < 1 or args.seconds <= 0:
        ap.error("counts, sizes, --ef and --seconds must be positive")
    with tempfile.TemporaryDirectory(prefix="strata-hotpath-") as tmp:
        server = Standalone(Path(tmp) / "data")
        server.start()
        try:
            with contextlib.ExitStack() as extra:
                args.extra_proxy_uris = [
                    extra.enter_context(second_proxy(server, Path(tmp), env={"STRATA_PROXY_METRICS_PORT": "0"})) for _ in range(args.extra_proxies)
                ]
                (insert if args.path == "insert" else search)(server, args)
        finally:
            server.stop()


if __name__ == "__main__":
    main()
