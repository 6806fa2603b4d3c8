"""One heavy request beside light ones: how long it takes, and what it does to the light ones' latency.

    .venv/bin/python benchmarks/fairness.py [--repo PATH] [--rows 20000] [--ids 200000] [--nq 16384]
        [--topk 1] [--light 0.05] [--flush]

Starts ``strata standalone`` from ``--repo`` (default: this checkout; give another
checkout to compare, e.g. the main branch) on a free 127.0.0.1 port in a
temporary directory, creates a collection (int64 ``id``, 8-dimension ``v``,
HNSW), inserts ``--rows`` rows (growing; sealed and indexed with ``--flush``)
and measures, through pymilvus:

* the light request alone: ``query(filter="id == 5")``, 20 times (p50, max);
* the heavy ``in`` query: ``query(filter="id in [0, ..., ids-1]", limit=10)``,
  while another thread sends the light query every ``--light`` seconds;
* the heavy search: ``--nq`` random vectors, ``--topk`` hits each (small, so the
  client's decoding does not hold its own interpreter lock for long), likewise.

Prints a table and one JSON line. The server is stopped at the end, also on
Ctrl-C (SIGTERM to its process group, then SIGKILL).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from pymilvus import DataType, MilvusClient

from common.ports import free_port as _free_port

NAME = "fair"
DIM = 8


@contextmanager
def standalone(repo: Path) -> Iterator[str]:
    """``strata standalone`` of ``repo`` on a free port; yields its URI."""
    port = _free_port()
    with tempfile.TemporaryDirectory(prefix="strata-fairness-") as tmp:
        log_path = Path(tmp) / "standalone.log"
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "launch.cli", "standalone", "--data-dir", f"{tmp}/data", "--port", str(port)],
                cwd=repo,
                env={**os.environ, "PYTHONPATH": str(repo)},
                stdout=log,
                stderr=log,
                start_new_session=True,
            )
        try:
            deadline = time.monotonic() + 120
            while b"standalone ready" not in log_path.read_bytes():
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"standalone did not start:\n{log_path.read_text()[-3000:]}")
                time.sleep(0.2)
            yield f"http://127.0.0.1:{port}"
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def load(uri: str, rows: int, flush: bool) -> None:
    client = MilvusClient(uri)
    schema = client.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("v", DataType.FLOAT_VECTOR, dim=DIM)
    client.create_collection(NAME, schema=schema)
    rng = np.random.default_rng(0)
    for start in range(0, rows, 10_000):
        ids = range(start, min(rows, start + 10_000))
        client.insert(NAME, [{"id": i, "v": rng.random(DIM).tolist()} for i in ids])
    if flush:
        client.flush(NAME)
    index = client.prepare_index_params()
    index.add_index("v", index_type="HNSW", metric_type="L2")
    client.create_index(NAME, index)
    client.load_collection(NAME)
    client.close()


def _light(client: MilvusClient) -> float:
    started = time.perf_counter()
    client.query(NAME, filter="id == 5", output_fields=["id"])
    return time.perf_counter() - started


def beside(uri: str, heavy: Callable[[MilvusClient], object], every: float) -> dict[str, float]:
    """``heavy`` in this thread, the light query in another meanwhile."""
    heavy_client, light_client = MilvusClient(uri), MilvusClient(uri)
    done = threading.Event()
    latencies: list[float] = []

    def loop() -> None:
        while not done.is_set():
            latencies.append(_light(light_client))
            time.sleep(every)

    thread = threading.Thread(target=loop)
    thread.start()
    time.sleep(0.3)
    started = time.perf_counter()
    try:
        heavy(heavy_client)
    finally:
        took = time.perf_counter() - started
        done.set()
        thread.join()
        heavy_client.close()
        light_client.close()
    return {
        "heavy_s": round(took, 2),
        "light_n": len(latencies),
        "light_p50_s": round(statistics.median(latencies), 4),
        "light_max_s": round(max(latencies), 4),
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repo", type=Path, default=Path(__file__).resolve().parent.parent)
    p.add_argument("--rows", type=int, default=20_000)
    p.add_argument("--ids", type=int, default=200_000)
    p.add_argument("--nq", type=int, default=16384)
    p.add_argument("--topk", type=int, default=1)
    p.add_argument("--light", type=float, default=0.05, help="seconds between two light queries")
    p.add_argument("--flush", action="store_true", help="seal and index the rows before measuring")
    args = p.parse_args()
    filter_text = "id in [" + ", ".join(map(str, range(args.ids))) + "]"
    vectors = np.random.default_rng(1).random((args.nq, DIM)).astype(np.float32)
    with standalone(args.repo) as uri:
        load(uri, args.rows, args.flush)
        client = MilvusClient(uri)
        for _ in range(3):
            _light(client)
        alone = [_light(client) for _ in range(20)]
        client.close()
        result = {
            "repo": str(args.repo),
            "rows": args.rows,
            "flushed": args.flush,
            "light_alone": {"p50_s": round(statistics.median(alone), 4), "max_s": round(max(alone), 4)},
            "in_query": {"ids": args.ids, "filter_bytes": len(filter_text)},
            "search": {"nq": args.nq, "topk": args.topk},
        }
        result["in_query"] |= beside(
            uri, lambda c: c.query(NAME, filter=filter_text, output_fields=["id"], limit=10, timeout=600), args.light
        )
        result["search"] |= beside(uri, lambda c: c.search(NAME, data=vectors, limit=args.topk, timeout=600), args.light)
    print(f"| {args.repo} | heavy s | light p50 s | light max s |", file=sys.stderr)
    print(f"| light alone | | {result['light_alone']['p50_s']} | {result['light_alone']['max_s']} |", file=sys.stderr)
    for key in ("in_query", "search"):
        r = result[key]
        print(f"| {key} | {r['heavy_s']} | {r['light_p50_s']} | {r['light_max_s']} |", file=sys.stderr)
    print(json.dumps({"fairness": result}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
