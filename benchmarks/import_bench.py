"""Bulk import benchmark: Parquet files into a standalone Strata through ``utility.do_bulk_insert``.

    .venv/bin/python benchmarks/import_bench.py [--rows 1000000] [--dim 128] [--files 4] [--shards 2]
        [--index HNSW|FLAT] [--queries 200] [--rebuild-check] [--dir PARENT] [--keep]

Writes ``--rows`` random float32 vectors (and an int64 key) as ``--files``
Parquet files, starts ``strata standalone`` (Spark ``local[*]``) on a free
loopback port, creates a collection with a ``--index`` index (L2), imports the
files as one job and measures: the job (Spark: read, validate, route, write
segments, stats and indexes) until ``get_bulk_insert_state`` says Completed,
and the time until every row is queryable (the query node loads the segments,
their indexes included). Then checks ``count(*)`` and recall@10 of
``--queries`` searches (ef 64 and 256) against numpy brute force. The job
builds each segment's index with the query nodes' own code and parameters
(``segcore/index``); ``--rebuild-check`` then deletes the job's index files,
reloads the collection so the query node builds every index itself, and
measures the recall again: the same, because it is the same index. Prints a
markdown table and one JSON line (``"import"``).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pymilvus import BulkInsertState, DataType, MilvusClient, connections, utility

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.harness import Standalone  # noqa: E402


def write_files(directory: Path, rows: int, dim: int, files: int, seed: int = 7) -> tuple[list[str], np.ndarray]:
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((rows, dim), dtype=np.float32)
    paths = []
    per_file = -(-rows // files)
    for i in range(files):
        lo, hi = i * per_file, min(rows, (i + 1) * per_file)
        if lo >= hi:
            break
        column = pa.FixedSizeListArray.from_arrays(pa.array(vectors[lo:hi].reshape(-1)), dim)
        table = pa.table({"id": pa.array(np.arange(lo, hi), pa.int64()), "v": column})
        path = directory / f"part-{i}.parquet"
        pq.write_table(table, path, row_group_size=50_000)
        paths.append(str(path))
    return paths, vectors


def recall_at_10(client: MilvusClient, vectors: np.ndarray, queries: np.ndarray, ef: int) -> float:
    hits = client.search("imported", data=queries.tolist(), limit=10, search_params={"params": {"ef": ef}},
                         consistency_level="Strong", timeout=600)
    found = 0
    norms = (vectors * vectors).sum(1)
    for q, row in zip(queries, hits, strict=True):
        dist = norms - 2 * vectors @ q
        truth = set(np.argpartition(dist, 10)[:10].tolist())
        found += len(truth & {h["id"] for h in row})
    return found / (10 * len(queries))


def run(args: argparse.Namespace) -> dict[str, object]:
    tmp = Path(tempfile.mkdtemp(dir=args.dir, prefix="strata-import-"))
    try:
        files_dir = tmp / "files"
        files_dir.mkdir()
        t0 = time.monotonic()
        paths, vectors = write_files(files_dir, args.rows, args.dim, args.files)
        write_s = time.monotonic() - t0
        standalone = Standalone(tmp / "data")
        standalone.start()
        try:
            client = MilvusClient(standalone.uri, timeout=600)
            schema = MilvusClient.create_schema(auto_id=False)
            schema.add_field("id", DataType.INT64, is_primary=True)
            schema.add_field("v", DataType.FLOAT_VECTOR, dim=args.dim)
            index = client.prepare_index_params()
            index.add_index("v", index_type=args.index, metric_type="L2")
            client.create_collection("imported", schema=schema, index_params=index, num_shards=args.shards)
            connections.connect(alias="bench", uri=standalone.uri)
            started = time.monotonic()
            task = utility.do_bulk_insert("imported", paths, using="bench")
            while True:
                state = utility.get_bulk_insert_state(task, using="bench")
                if state.state in (BulkInsertState.ImportCompleted, BulkInsertState.ImportFailed):
                    break
                time.sleep(0.5)
            job_s = time.monotonic() - started
            if state.state != BulkInsertState.ImportCompleted:
                raise SystemExit(f"import failed: {state.failed_reason}")
            while True:
                count = client.query("imported", filter="", output_fields=["count(*)"], consistency_level="Strong",
                                     timeout=600)[0]["count(*)"]
                if count == args.rows:
                    break
                time.sleep(0.5)
            queryable_s = time.monotonic() - started
            queries = np.random.default_rng(11).standard_normal((args.queries, args.dim), dtype=np.float32)
            recall = {ef: round(recall_at_10(client, vectors, queries, ef), 4) for ef in (64, 256)}
            rebuilt: dict[int, float] = {}
            rebuild_s = 0.0
            if args.rebuild_check:
                # Drop the job's index files and reload: the query node builds every index itself.
                shutil.rmtree(tmp / "data" / "storage" / "index_files")
                client.release_collection("imported")
                t1 = time.monotonic()
                client.load_collection("imported", timeout=3600)
                rebuild_s = time.monotonic() - t1
                rebuilt = {ef: round(recall_at_10(client, vectors, queries, ef), 4) for ef in (64, 256)}
            segments = [s for s in client.list_persistent_segments("imported") if s.num_rows]
            rows_stat = client.get_collection_stats("imported")["row_count"]
            client.close()
            connections.disconnect("bench")
        finally:
            standalone.stop()
        return {
            "rows": args.rows,
            "dim": args.dim,
            "files": len(paths),
            "index": args.index,
            "shards": args.shards,
            "write_files_s": round(write_s, 1),
            "job_s": round(job_s, 1),
            "job_rows_per_s": round(args.rows / job_s),
            "queryable_s": round(queryable_s, 1),
            "queryable_rows_per_s": round(args.rows / queryable_s),
            "segments": len(segments),
            "count": count,
            "row_count_stat": rows_stat,
            "recall_at_10": recall,
            "recall_at_10_worker_built": rebuilt,
            "worker_build_s": round(rebuild_s, 1),
        }
    finally:
        if args.keep:
            print(f"kept: {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--files", type=int, default=4)
    p.add_argument("--shards", type=int, default=2)
    p.add_argument("--index", choices=("HNSW", "FLAT"), default="HNSW")
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--dir", default=None, help="parent of the temporary directory")
    p.add_argument("--keep", action="store_true")
    p.add_argument("--rebuild-check", action="store_true",
                   help="then drop the job's indexes, reload, and measure the recall of the worker-built ones")
    args = p.parse_args()
    result = run(args)
    print("| rows | dim | index | job (s) | rows/s (job) | queryable (s) | rows/s (queryable) | segments "
          "| recall@10 (ef 64, 256) | worker-built recall@10 |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    print(f"| {result['rows']} | {result['dim']} | {result['index']} | {result['job_s']} | {result['job_rows_per_s']} "
          f"| {result['queryable_s']} | {result['queryable_rows_per_s']} | {result['segments']} "
          f"| {result['recall_at_10']} | {result['recall_at_10_worker_built'] or '-'} |")
    print(json.dumps({"import": result}))


if __name__ == "__main__":
    main()
