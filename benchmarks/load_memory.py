"""Memory of a query node loading one sealed segment: peak and resident RSS, building and restoring.

    .venv/bin/python benchmarks/load_memory.py [--rows 400000] [--dim 128] [--index HNSW|DISKANN ...]
        [--ef-construction 40] [--threads 2]

Writes one flushed segment of ``--rows`` random float vectors (and an int64
key) to a temporary local object store; then, per ``--index`` kind, loads it
in a fresh process the way a worker does the first time
(``querynode.worker.loader.load_segment`` in a worker thread, then
``build_segment_index``: HNSW M=16, or DISKANN with Milvus's defaults, built
and saved), and again in another fresh process the way every later load does
(the saved index restored). Each prints the process's peak RSS and, once the
load returned, its resident memory split into anonymous (heap: what the
segment holds in RAM) and file-backed pages (mapped files the kernel may drop
again: a DISKANN field's rows), next to the size of the vectors. Each step
runs in a child process of a parent that allocates nothing large (Linux
carries a process's peak RSS over ``exec`` from its parent), so the peak is
the step's own. ``--ef-construction`` is low by default: the build's time,
not its memory, depends on it.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402

from common.schema import TIMESTAMP_COLUMN, CollectionSchema, DataType, FieldSchema  # noqa: E402
from common.segment import SegmentMeta, SegmentState  # noqa: E402
from common.storage.manifest import SegmentLevel, SegmentManifest  # noqa: E402
from common.storage.objectstore import ObjectStore  # noqa: E402
from common.storage.segment_io import SegmentWriter  # noqa: E402
from querynode.worker.loader import build_segment_index, load_segment  # noqa: E402
from segcore.index.field_specs import FieldIndexSpec  # noqa: E402
from segcore.index.spec import IndexSpec  # noqa: E402

MIB = 1 << 20


def _schema(dim: int) -> CollectionSchema:
    return CollectionSchema(
        name="mem",
        fields=(
            FieldSchema(field_id=100, name="id", dtype=DataType.INT64, is_primary=True),
            FieldSchema(field_id=101, name="v", dtype=DataType.FLOAT_VECTOR, dim=dim),
        ),
    )


def write(root: Path, rows: int, dim: int) -> str:
    """One flushed segment under ``root``; returns its manifest path."""
    vectors = np.random.default_rng(0).standard_normal((rows, dim), dtype=np.float32)
    table = pa.table({
        "id": pa.array(np.arange(rows, dtype=np.int64)),
        "v": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), dim),
        TIMESTAMP_COLUMN: pa.array(np.full(rows, 100, dtype=np.uint64)),
    })  # fmt: skip
    writer = SegmentWriter(ObjectStore.from_uri(root.as_uri()), _schema(dim))
    manifest = SegmentManifest(segment_id=1, collection_id=1, partition_id=1, vchannel="mem", level=SegmentLevel.L1)
    log, stats = writer.write_insert_log(collection_id=1, partition_id=1, segment_id=1, log_id=1, table=table)
    return writer.write_manifest(manifest.with_insert_log(log, stats))


def _spec(index: str, ef_construction: int) -> FieldIndexSpec:
    params: dict[str, str | int | float] = {"M": 16, "efConstruction": ef_construction} if index == "HNSW" else {}
    index_id = 1 if index == "HNSW" else 2  # each kind saved under its own index id, as two indexes would be
    return FieldIndexSpec(field_name="v", index_id=index_id, spec=IndexSpec(index_type=index, metric="L2", params=params))


def _resident() -> tuple[float, float]:
    """This process's anonymous and file-backed resident MiB (``/proc/self/status``)."""
    fields = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line)
    return int(fields["RssAnon"].split()[0]) / 1024, int(fields["RssFile"].split()[0]) / 1024


def load(root: Path, manifest: str, rows: int, dim: int, index: str, ef_construction: int, threads: int) -> None:
    meta = SegmentMeta(
        segment_id=1, collection_id=1, partition_id=1, vchannel="mem", state=SegmentState.FLUSHED, rows=rows,
        manifest=manifest,
    )  # fmt: skip
    spec = _spec(index, ef_construction)
    store = ObjectStore.from_uri(root.as_uri())
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    start = time.perf_counter()
    with ThreadPoolExecutor(1) as pool:  # a worker loads (and builds) in a thread
        segment, missing = pool.submit(load_segment, store, _schema(dim), meta, [spec]).result()
        for todo in missing:
            pool.submit(build_segment_index, store, _schema(dim), segment, todo, threads).result()
    took = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    anon, mapped = _resident()
    assert segment.store.num_rows == rows
    step = "built" if missing else "restored"
    print(
        f"{index} {step}: {rows:,} x {dim} ({rows * dim * 4 / MIB:,.0f} MiB of vectors): load {took:.1f}s, "
        f"peak RSS {peak:,.0f} MiB, resident after the load {anon:,.0f} MiB anonymous + {mapped:,.0f} MiB "
        f"file-backed (peak before it: {before:,.0f} MiB)",
        flush=True,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=400_000)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--index", nargs="+", default=["HNSW"], choices=["HNSW", "DISKANN"])
    ap.add_argument("--ef-construction", type=int, default=40)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--write", metavar="ROOT", help=argparse.SUPPRESS)
    ap.add_argument("--load", nargs=2, metavar=("ROOT", "MANIFEST"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.write:
        print(write(Path(args.write), args.rows, args.dim))
        return
    if args.load:
        for index in args.index:
            load(Path(args.load[0]), args.load[1], args.rows, args.dim, index, args.ef_construction, args.threads)
        return
    common = [sys.executable, __file__, "--rows", str(args.rows), "--dim", str(args.dim),
              "--ef-construction", str(args.ef_construction), "--threads", str(args.threads)]  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="strata-load-memory-") as tmp:
        written = subprocess.run([*common, "--write", tmp], check=True, capture_output=True, text=True)
        manifest = written.stdout.strip().splitlines()[-1]
        for index in args.index:
            for _ in ("build", "restore"):  # a fresh process each: the first load builds, the second restores
                subprocess.run([*common, "--index", index, "--load", tmp, manifest], check=True)


if __name__ == "__main__":
    main()
