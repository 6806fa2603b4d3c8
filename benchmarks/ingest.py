"""Ingest benchmark: many rows into a standalone Strata, with memory and WAL size sampled throughout.

    .venv/bin/python benchmarks/ingest.py [--rows 1000000] [--dim 128] [--batch 10000] [--shards 2]
        [--segment-mib 128] [--wal-file-mib 64] [--dir PARENT] [--keep]

Starts ``strata standalone`` on a free loopback port in a temporary data
directory, inserts ``--rows`` random vectors in batches through pymilvus,
then ``flush()``es, checks ``count(*)`` and one search, and stops everything.
A sampler thread reads every 0.5 s the RSS of each role process (psutil) and
the bytes under ``DATA/wal``. Prints a markdown table and one JSON line
(``"ingest"``) with the peaks: the point is that the streaming node's memory
and the WAL stay bounded by buffer and segment limits, not by rows inserted.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import psutil
from pymilvus import DataType, MilvusClient

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.harness import Standalone  # noqa: E402

# Standalone's processes: "node" runs the streaming node, the query node and the proxy
# (``strata standalone-node``), "coordinator" the coordinator, "etcd" the embedded etcd.
ROLES = ("node", "coordinator", "etcd")
_COMMANDS = {"node": " standalone-node", "coordinator": ".cli coordinator"}


def role_of(proc: psutil.Process) -> str | None:
    """The standalone process ``proc`` is (one of ``ROLES``), or None (the launcher, a Spark job, gone)."""
    try:
        cmd = " ".join(proc.cmdline())
    except psutil.Error:
        return None
    if "launch.cli" not in cmd and "services.cli" not in cmd:  # services.cli: checkouts before launch/
        return "etcd" if "etcd" in cmd else None
    return next((role for role, command in _COMMANDS.items() if command in cmd), None)


def _dir_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path.exists() else 0


class Sampler(threading.Thread):
    """Peak RSS per role and peak WAL bytes, every ``interval`` seconds until stopped."""

    def __init__(self, launcher_pid: int, wal_dir: Path, interval: float = 0.5) -> None:
        super().__init__(daemon=True)
        self.launcher = psutil.Process(launcher_pid)
        self.wal_dir = wal_dir
        self.interval = interval
        self.peak_rss: dict[str, int] = {r: 0 for r in ROLES}
        self.peak_wal = 0
        self.samples: list[tuple[float, int, int]] = []  # (t, node rss, wal bytes)
        self.stop_event = threading.Event()

    def run(self) -> None:
        start = time.monotonic()
        while not self.stop_event.is_set():
            node_rss = 0
            for child in self.launcher.children(recursive=True):
                role = role_of(child)
                if role is None:
                    continue
                try:
                    rss = child.memory_info().rss
                except psutil.Error:
                    continue
                self.peak_rss[role] = max(self.peak_rss[role], rss)
                if role == "node":
                    node_rss = rss
            wal = _dir_bytes(self.wal_dir)
            self.peak_wal = max(self.peak_wal, wal)
            self.samples.append((time.monotonic() - start, node_rss, wal))
            self.stop_event.wait(self.interval)


def run(rows: int, dim: int, batch: int, shards: int, parent: str | None, keep: bool = False) -> dict[str, object]:
    tmp = tempfile.mkdtemp(dir=parent, prefix="strata-ingest-")
    try:
        data = Path(tmp) / "data"
        standalone = Standalone(data)
        standalone.start()
        assert standalone.proc is not None
        sampler = Sampler(standalone.proc.pid, data / "wal")
        sampler.start()
        try:
            client = MilvusClient(standalone.uri, timeout=600)
            schema = MilvusClient.create_schema(auto_id=False)
            schema.add_field("id", DataType.INT64, is_primary=True)
            schema.add_field("v", DataType.FLOAT_VECTOR, dim=dim)
            index = client.prepare_index_params()
            index.add_index("v", metric_type="L2")
            client.create_collection("ingest", schema=schema, index_params=index, num_shards=shards)
            rng = np.random.default_rng(7)
            t0 = time.monotonic()
            for first in range(0, rows, batch):
                n = min(batch, rows - first)
                vecs = rng.standard_normal((n, dim), dtype=np.float32)
                client.insert("ingest", [{"id": first + i, "v": vecs[i]} for i in range(n)])
            insert_s = time.monotonic() - t0
            t1 = time.monotonic()
            client.flush("ingest", timeout=1800)
            flush_s = time.monotonic() - t1
            count = client.query("ingest", filter="", output_fields=["count(*)"], consistency_level="Strong")[0][
                "count(*)"
            ]
            probe = rng.standard_normal(dim, dtype=np.float32)
            hits = client.search("ingest", data=[probe.tolist()], limit=3, consistency_level="Strong")
            time.sleep(1.5)  # one more sample after the flush
            client.close()
        finally:
            sampler.stop_event.set()
            sampler.join(5)
            final_wal = _dir_bytes(data / "wal")
            storage = _dir_bytes(data / "storage")
            standalone.stop()
    finally:
        if keep:
            print(f"data directory kept: {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    mib = 1 << 20
    return {
        "rows": rows,
        "dim": dim,
        "batch": batch,
        "shards": shards,
        "insert_rows_per_s": round(rows / insert_s),
        "insert_s": round(insert_s, 1),
        "flush_s": round(flush_s, 1),
        "count": count,
        "search_hits": len(hits[0]),
        "raw_vector_mib": round(rows * dim * 4 / mib, 1),
        "peak_wal_mib": round(sampler.peak_wal / mib, 1),
        "final_wal_mib": round(final_wal / mib, 1),
        "storage_mib": round(storage / mib, 1),
        "peak_rss_mib": {r: round(v / mib, 1) for r, v in sampler.peak_rss.items()},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--batch", type=int, default=10_000)
    ap.add_argument("--shards", type=int, default=2)
    ap.add_argument("--dir", default=None, help="parent of the temporary data directory")
    ap.add_argument("--keep", action="store_true", help="keep the data directory (logs, WAL, storage) afterwards")
    ap.add_argument("--segment-mib", type=int, default=None, help="streamingnode.segment_max_bytes in MiB")
    ap.add_argument("--wal-file-mib", type=int, default=None, help="streamingnode.wal_segment_bytes in MiB")
    args = ap.parse_args()
    # The standalone's roles inherit the environment.
    if args.segment_mib is not None:
        os.environ["STRATA_STREAMINGNODE_SEGMENT_MAX_BYTES"] = str(args.segment_mib << 20)
    if args.wal_file_mib is not None:
        os.environ["STRATA_STREAMINGNODE_WAL_SEGMENT_BYTES"] = str(args.wal_file_mib << 20)
    result = run(args.rows, args.dim, args.batch, args.shards, args.dir, args.keep)
    rss = result["peak_rss_mib"]
    assert isinstance(rss, dict)
    print("| rows | insert rows/s | flush s | raw vectors MiB | peak WAL MiB | final WAL MiB | storage MiB | "
          "peak RSS MiB (node / coordinator) | count |")
    print("|---|---|---|---|---|---|---|---|---|")
    print(
        f"| {result['rows']:,} | {result['insert_rows_per_s']:,} | {result['flush_s']} | {result['raw_vector_mib']} | "
        f"{result['peak_wal_mib']} | {result['final_wal_mib']} | {result['storage_mib']} | "
        f"{rss['node']} / {rss['coordinator']} | {result['count']:,} |"
    )
    result["segment_mib"] = args.segment_mib or 128
    result["wal_file_mib"] = args.wal_file_mib or 64
    print(json.dumps({"ingest": result}))


if __name__ == "__main__":
    main()
