"""Recovery benchmark: how soon reads come back after ``kill -9`` of a standalone under a writer.

    .venv/bin/python benchmarks/recovery.py [--rows 1000000] [--dim 128] [--shards 1] [--rate 2000]
        [--cycles 1] [--between 10] [--limit 600] [--dir PARENT] [--keep]

Starts ``strata standalone`` in a temporary data directory, inserts ``--rows``
random vectors (HNSW M=16 efConstruction=200, L2), loads the collection and
waits until every segment is sealed and served, then starts a writer that
inserts ``--rate`` rows per second (batches of 500, new ids only). After
``--between`` seconds, each cycle kills the whole standalone with SIGKILL,
restarts it on the same data dir and measures, from the kill (the launcher's
own start counted):

* ``writes``: the first acknowledged insert;
* ``reads``: the first ``count(*)`` with Strong consistency that answers, and
  whether it counted every row acknowledged before the kill;
* ``loaded``: ``get_load_state`` says Loaded.

After the last cycle it stops the writer and checks that every acknowledged
id is there exactly once. Prints a markdown table and one JSON line
(``"recovery"``). The issue's target: reads within 30 s at 1M x 128.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import grpc
import numpy as np
from pymilvus import DataType, MilvusClient, MilvusException

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from waits import wait_indexed  # noqa: E402

from tests.harness import Standalone  # noqa: E402

NAME = "recovery"
BATCH = 500
WINDOW = 16_384  # Milvus's query result window


class Writer(threading.Thread):
    """Inserts new ids at ``rate`` rows per second until stopped; remembers what was acknowledged."""

    def __init__(self, uri: str, dim: int, start_id: int, rate: float) -> None:
        super().__init__(daemon=True)
        self.uri, self.dim, self.next_id, self.rate = uri, dim, start_id, rate
        self.acked: set[int] = set()
        self.ack_times: list[float] = []  # monotonic time of each acknowledged batch
        self.halt = threading.Event()
        self.rng = np.random.default_rng(11)

    def run(self) -> None:
        client: MilvusClient | None = None
        while not self.halt.is_set():
            began = time.monotonic()
            ids = list(range(self.next_id, self.next_id + BATCH))
            self.next_id += BATCH
            vecs = self.rng.standard_normal((BATCH, self.dim)).astype(np.float32)
            try:
                if client is None:
                    client = MilvusClient(self.uri, timeout=10)
                client.insert(NAME, [{"id": i, "v": v.tolist()} for i, v in zip(ids, vecs, strict=True)], timeout=10)
                self.acked.update(ids)
                self.ack_times.append(time.monotonic())
            except Exception:  # down or restarting: the next batch gets new ids
                client = None
                time.sleep(0.2)
            time.sleep(max(0.0, BATCH / self.rate - (time.monotonic() - began)))


def _insert_all(client: MilvusClient, rows: int, dim: int) -> None:
    rng = np.random.default_rng(5)
    for start in range(0, rows, 10_000):
        n = min(10_000, rows - start)
        vecs = rng.standard_normal((n, dim)).astype(np.float32)
        client.insert(NAME, [{"id": start + i, "v": vecs[i].tolist()} for i in range(n)])


def _count(client: MilvusClient, timeout: float) -> int:
    rows = client.query(NAME, filter="", output_fields=["count(*)"], consistency_level="Strong", timeout=timeout)
    return int(rows[0]["count(*)"])


def _all_ids(client: MilvusClient, upto: int) -> list[int]:
    out: list[int] = []
    for low in range(0, upto, WINDOW):
        rows = client.query(NAME, filter=f"id >= {low} and id < {low + WINDOW}", output_fields=["id"], limit=WINDOW,
                            consistency_level="Strong", timeout=120)
        out += [r["id"] for r in rows]
    return out


def _cycle(s: Standalone, writer: Writer, rows: int, limit: float) -> dict[str, Any]:
    acked_before = rows + len(writer.acked)
    s.kill()
    restarted = time.monotonic()  # the launcher's own start (etcd, roles) counts too
    s.start(timeout=300)
    client = MilvusClient(s.uri, timeout=30)
    out: dict[str, Any] = {"acked_before": acked_before}
    while time.monotonic() - restarted < limit:
        after = [t for t in writer.ack_times[-200:] if t > restarted]
        if "writes" not in out and after:
            out["writes"] = round(after[0] - restarted, 1)
        if "reads" not in out:
            try:
                counted = _count(client, timeout=10)
                out["reads"] = round(time.monotonic() - restarted, 1)
                out["complete"] = counted >= acked_before
            except (MilvusException, grpc.RpcError):
                pass
        if "loaded" not in out:
            try:
                if client.get_load_state(NAME)["state"].name == "Loaded":
                    out["loaded"] = round(time.monotonic() - restarted, 1)
            except (MilvusException, grpc.RpcError):
                pass
        if {"writes", "reads", "loaded"} <= out.keys():
            break
        time.sleep(0.5)
    client.close()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--shards", type=int, default=1)
    ap.add_argument("--rate", type=float, default=2000.0, help="rows per second the writer inserts")
    ap.add_argument("--cycles", type=int, default=1)
    ap.add_argument("--between", type=float, default=10.0,
                    help="seconds the writer writes before the first kill and between two cycles")
    ap.add_argument("--limit", type=float, default=600.0, help="seconds a cycle waits for reads and the load")
    ap.add_argument("--dir", type=Path, default=None)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()

    parent = Path(tempfile.mkdtemp(prefix="strata-recovery-", dir=args.dir))
    s = Standalone(parent / "data")
    writer = Writer(s.uri, args.dim, args.rows, args.rate)
    results: list[dict[str, Any]] = []
    try:
        s.start()
        client = MilvusClient(s.uri, timeout=600)
        schema = MilvusClient.create_schema(auto_id=False)
        schema.add_field("id", DataType.INT64, is_primary=True)
        schema.add_field("v", DataType.FLOAT_VECTOR, dim=args.dim)
        index = client.prepare_index_params()
        index.add_index("v", index_type="HNSW", metric_type="L2", params={"M": 16, "efConstruction": 200})
        client.create_collection(NAME, schema=schema, index_params=index, num_shards=args.shards)
        began = time.monotonic()
        _insert_all(client, args.rows, args.dim)
        client.flush(NAME)
        client.release_collection(NAME)
        client.load_collection(NAME, timeout=3600)
        wait_indexed(client, NAME)  # every sealed segment's index built and saved
        assert _count(client, timeout=600) == args.rows
        print(f"loaded {args.rows} x {args.dim} in {time.monotonic() - began:.0f} s", flush=True)
        client.close()
        writer.start()
        time.sleep(args.between)
        for i in range(args.cycles):
            r = _cycle(s, writer, args.rows, args.limit)
            r["cycle"] = i + 1
            results.append(r)
            print(json.dumps(r), flush=True)
            time.sleep(args.between)
        writer.halt.set()
        writer.join(60)
        client = MilvusClient(s.uri, timeout=600)
        ids = _all_ids(client, writer.next_id)
        expected = set(range(args.rows)) | writer.acked
        summary = {
            "rows": args.rows, "dim": args.dim, "shards": args.shards, "rate": args.rate,
            "duplicates": len(ids) - len(set(ids)), "missing": len(expected - set(ids)), "cycles": results,
        }
        client.close()
    finally:
        writer.halt.set()
        s.kill()
        if not args.keep:
            shutil.rmtree(parent, ignore_errors=True)
    print("| cycle | writes (s) | reads (s) | complete | loaded (s) |\n|---|---|---|---|---|")
    for r in results:
        print(f"| {r['cycle']} | {r.get('writes', '-')} | {r.get('reads', '-')} | {r.get('complete', '-')} "
              f"| {r.get('loaded', '-')} |")
    print(json.dumps({"recovery": summary}))
    return 0 if summary["missing"] == 0 and summary["duplicates"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
