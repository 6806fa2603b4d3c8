"""Side by side on the search hot path: two checkouts serve at once, their windows interleaved.

    .venv/bin/python benchmarks/hotpath_ab.py --base /tmp/main-checkout [--branch .] [--rows 30000]
        [--windows 16] [--seconds 4] [--nq 1] [--filter 'tag >= 0']

Each checkout runs its own standalone (``tests/harness.py`` of that checkout,
so its own code) with the same data as ``hotpath.py search`` (the clustered
set, HNSW M=16, efConstruction=200, ``Eventually``, ef=64). Then windows of
``--seconds`` of one-after-another searches alternate between the two (ABBA:
each pair starts with the other side), so a machine whose load comes and goes
loads both alike. Per window: QPS, p50 and the node's CPU per request; at the
end the medians and the branch / base ratio of each pair of windows.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from compare_measure import frozen_gc
from hotpath import _collection, index_and_load
from pymilvus import MilvusClient
from search_data import make_dataset
from search_strata import role_cpu_seconds


def _standalone(checkout: Path, data_dir: Path) -> Any:
    """A ``Standalone`` of ``checkout``'s own harness (it starts that checkout's code)."""
    spec = importlib.util.spec_from_file_location(f"harness_{abs(hash(checkout))}", checkout / "tests" / "harness.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.Standalone(data_dir, env=_free_ops_ports(checkout))


def _free_ops_ports(checkout: Path) -> dict[str, str]:
    """Two standalones at once: each role's operations port on a free port, not Milvus's 9091
    (a checkout older than the operations ports refuses the keys, and needs none)."""
    keys = checkout / "common" / "configkeys.py"
    if not keys.exists() or "metrics_port" not in keys.read_text():
        return {}
    return {f"STRATA_{role.upper()}_METRICS_PORT": "0" for role in ("coordinator", "streamingnode", "querynode", "proxy")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", type=Path, required=True)
    ap.add_argument("--branch", type=Path, default=Path(__file__).resolve().parent.parent)
    ap.add_argument("--rows", type=int, default=30_000)
    ap.add_argument("--windows", type=int, default=16)
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--nq", type=int, default=1)
    ap.add_argument("--filter", default="")
    args = ap.parse_args()
    dim = 128
    data = make_dataset("clustered", args.rows, dim, 1000, seed=1)
    sides = {"base": args.base.resolve(), "branch": args.branch.resolve()}
    servers: dict[str, Any] = {}
    clients: dict[str, MilvusClient] = {}
    done = [0]

    def one(client: MilvusClient) -> None:
        done[0] += 1
        queries = [data.queries[(done[0] * args.nq + j) % 1000].tolist() for j in range(args.nq)]
        client.search("hot", data=queries, limit=10, search_params={"params": {"ef": 64}},
                      consistency_level="Eventually", filter=args.filter)

    with tempfile.TemporaryDirectory(prefix="strata-hotpath-ab-") as tmp:
        try:
            for name, checkout in sides.items():
                servers[name] = _standalone(checkout, Path(tmp) / name)
                servers[name].start()
                client = clients[name] = MilvusClient(servers[name].uri, dedicated=True)
                _collection(client, dim, 1)
                for b in range(0, args.rows, 5000):
                    client.insert("hot", [{"id": i, "tag": i % 100, "v": data.vectors[i]}
                                          for i in range(b, min(b + 5000, args.rows))])
                client.flush("hot")
                index_and_load(client)
                for _ in range(50):
                    one(client)
            figures: dict[str, list[tuple[float, float, float]]] = {name: [] for name in sides}
            for w in range(args.windows):
                for name in (("base", "branch") if w % 2 == 0 else ("branch", "base")):
                    latencies: list[float] = []
                    pid = servers[name].proc.pid
                    with frozen_gc():
                        before, start = role_cpu_seconds(pid), time.perf_counter()
                        while time.perf_counter() < start + args.seconds:
                            t = time.perf_counter()
                            one(clients[name])
                            latencies.append(time.perf_counter() - t)
                        wall, after = time.perf_counter() - start, role_cpu_seconds(pid)
                    n = len(latencies)
                    figures[name].append((n * args.nq / wall, float(np.percentile(latencies, 50)) * 1e3,
                                          (after["node"] - before["node"]) / n * 1e3))
                    qps, p50, cpu = figures[name][-1]
                    print(f"window {w:2d} {name:6s} {qps:7,.0f} QPS  p50 {p50:.2f} ms  node CPU {cpu:.2f} ms/request")
            print(f"nq={args.nq} filter={args.filter!r} rows={args.rows} windows={args.windows} x {args.seconds} s")
            for name, rows in figures.items():
                qps, p50, cpu = (statistics.median(r[i] for r in rows) for i in range(3))
                print(f"median {name:6s}: {qps:7,.0f} QPS, p50 {p50:.2f} ms, node CPU {cpu:.2f} ms/request")
            for i, what in ((2, "node CPU"), (1, "p50"), (0, "QPS")):
                ratios = [b[i] / a[i] for a, b in zip(figures["base"], figures["branch"], strict=True)]
                print(f"branch / base {what}: median {statistics.median(ratios):.3f} "
                      f"(min {min(ratios):.3f}, max {max(ratios):.3f})")
        finally:
            for client in clients.values():
                client.close()
            for server in servers.values():
                server.stop()


if __name__ == "__main__":
    main()
