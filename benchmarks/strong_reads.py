"""Strong reads: how long a Strong search and a Strong query take, idle and under continuous inserts.

    .venv/bin/python benchmarks/strong_reads.py [--repo PATH] [--reads 200] [--rows 2000] [--batch 50]
        [--levels Strong,Bounded]

Starts ``strata standalone`` from ``--repo`` (default: this checkout; give
another checkout to compare, e.g. the main branch) on a free 127.0.0.1 port in
a temporary directory (``fairness.standalone``), creates a collection (int64
``id``, 8-dimension ``v``, HNSW), inserts ``--rows`` rows, loads it and then,
for each consistency level of ``--levels``, sends through pymilvus, one after
the other:

* ``--reads`` searches (one random vector, top 10) and ``--reads`` queries
  (``id == k``), with nothing being written (*idle*);
* the same while another thread inserts ``--batch`` rows per call, one call
  after the other, for as long as the reads run (*inserting*).

Prints a table (p50, p99, max in ms; inserts per second of the writer) and one
JSON line. A Strong read waits until its delegator has applied everything up to
a fresh timestamp; Bounded shows what the same read costs without that wait.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from fairness import standalone
from pymilvus import DataType, MilvusClient

NAME = "strong"
DIM = 8


def load(uri: str, rows: int) -> None:
    client = MilvusClient(uri)
    schema = client.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("v", DataType.FLOAT_VECTOR, dim=DIM)
    client.create_collection(NAME, schema=schema)
    index = client.prepare_index_params()
    index.add_index("v", index_type="HNSW", metric_type="L2")
    client.create_index(NAME, index)
    rng = np.random.default_rng(0)
    client.insert(NAME, [{"id": i, "v": rng.random(DIM).tolist()} for i in range(rows)])
    client.load_collection(NAME)
    client.close()


def _percentiles(seconds: list[float]) -> dict[str, float]:
    ms = np.asarray(seconds) * 1000
    return {"n": len(ms), "p50_ms": round(float(np.percentile(ms, 50)), 2),
            "p99_ms": round(float(np.percentile(ms, 99)), 2), "max_ms": round(float(ms.max()), 2)}


def timed(client: MilvusClient, reads: int, level: str, rng: np.random.Generator) -> dict[str, dict[str, float]]:
    """``reads`` searches then ``reads`` queries at ``level``; their latencies."""
    def search() -> object:
        return client.search(NAME, data=[rng.random(DIM).tolist()], limit=10, consistency_level=level)

    def query() -> object:
        return client.query(NAME, filter=f"id == {int(rng.integers(0, 1000))}", output_fields=["id"],
                            consistency_level=level)

    out: dict[str, dict[str, float]] = {}
    for name, read in (("search", search), ("query", query)):
        read()  # a warm-up call, not counted
        took = []
        for _ in range(reads):
            started = time.perf_counter()
            read()
            took.append(time.perf_counter() - started)
        out[name] = _percentiles(took)
    return out


def while_inserting(uri: str, batch: int, start_id: int, run: Callable[[], dict[str, dict[str, float]]]
                    ) -> tuple[dict[str, dict[str, float]], float]:
    """``run()`` while another thread inserts ``batch`` rows per call; its result and the inserts per second."""
    writer = MilvusClient(uri)
    done = threading.Event()
    counts = [0]
    rng = np.random.default_rng(2)

    def loop() -> None:
        next_id = start_id
        while not done.is_set():
            writer.insert(NAME, [{"id": next_id + i, "v": rng.random(DIM).tolist()} for i in range(batch)])
            next_id += batch
            counts[0] += 1

    thread = threading.Thread(target=loop, name="writer")
    thread.start()
    time.sleep(0.5)
    started, before = time.perf_counter(), counts[0]
    try:
        result = run()
    finally:
        took, inserted = time.perf_counter() - started, counts[0] - before
        done.set()
        thread.join()
        writer.close()
    return result, round(inserted / took, 1)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repo", type=Path, default=Path(__file__).resolve().parent.parent)
    p.add_argument("--reads", type=int, default=200, help="searches, and as many queries, per case")
    p.add_argument("--rows", type=int, default=2000)
    p.add_argument("--batch", type=int, default=50, help="rows per insert call of the writer")
    p.add_argument("--levels", default="Strong,Bounded")
    args = p.parse_args()
    levels = args.levels.split(",")
    result: dict[str, object] = {"repo": str(args.repo), "reads": args.reads, "rows": args.rows, "batch": args.batch}
    rows: list[tuple[str, str, str, dict[str, float], str]] = []
    for role in ("COORDINATOR", "STREAMINGNODE", "QUERYNODE"):  # no /metrics: port 9091 may be taken
        os.environ.setdefault(f"STRATA_{role}_METRICS_PORT", "")
    with standalone(args.repo) as uri:
        load(uri, args.rows)
        client = MilvusClient(uri)
        rng = np.random.default_rng(1)
        next_id = 1_000_000
        for level in levels:
            idle = timed(client, args.reads, level, rng)
            busy, rate = while_inserting(uri, args.batch, next_id, lambda level=level: timed(client, args.reads, level, rng))
            next_id += 10_000_000
            result[level] = {"idle": idle, "inserting": busy, "inserts_per_s": rate}
            for kind in ("search", "query"):
                rows.append((level, "idle", kind, idle[kind], ""))
                rows.append((level, "inserting", kind, busy[kind], f"{rate}/s x {args.batch}"))
        client.close()
    print(f"| {args.repo} | level | load | read | p50 ms | p99 ms | max ms | inserts |", file=sys.stderr)
    for level, load_kind, kind, r, inserts in rows:
        print(f"| | {level} | {load_kind} | {kind} | {r['p50_ms']} | {r['p99_ms']} | {r['max_ms']} | {inserts} |",
              file=sys.stderr)
    print(json.dumps({"strong_reads": result}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
