"""Loading a sealed segment of short texts and its first ``TEXT_MATCH`` / ``PHRASE_MATCH``, with and without
the text-match index saved beside it (the worker's own functions, in process, local object storage).

    PYTHONPATH=. .venv/bin/python benchmarks/text_match_index.py [--rows 100000] [--passes 3]

One segment of ``--rows`` documents of 4 to 16 words from a 2,000-word vocabulary (Zipf-like), written
as a compaction writes one (``jobs/segments.write_segment``: insert log, stats, manifest, text-match
index). Then, each pass in a fresh process-level state (a new store, so no cached chunk index):

* ``saved``: ``load_segment`` + ``restore_text_indexes`` (the index read from storage), then the first
  ``TEXT_MATCH``, then the first ``PHRASE_MATCH`` (slop 1);
* ``not saved``: the index files removed first (a segment written before these indexes existed): the
  load finds none; the first query builds the in-memory chunk index (``common/fulltext/text_index.py``)
  as growing segments do; also timed: the background build that saves it (``ensure_text_index``).

Prints the fastest time of each step over the passes, in ms, and one JSON line.
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

from common.expr import parse_filter
from common.schema import CollectionSchema, DataType, FieldSchema
from common.segment import SegmentMeta, SegmentState
from common.storage.layout import text_index_dir
from common.storage.objectstore import ObjectStore
from jobs.segments import write_segment
from querynode.worker.loader import load_segment
from querynode.worker.text_loader import ensure_text_index, restore_text_indexes
from segcore.index.text.store import text_fields
from segcore.segments.readmask import read_mask

SCHEMA = CollectionSchema(
    name="bench",
    fields=(
        FieldSchema(field_id=100, name="id", dtype=DataType.INT64, is_primary=True),
        FieldSchema(field_id=101, name="text", dtype=DataType.VARCHAR, max_length=1000,
                    type_params={"enable_analyzer": "true", "enable_match": "true"}),
        FieldSchema(field_id=102, name="v", dtype=DataType.FLOAT_VECTOR, dim=2),
    ),
)
TEXT_QUERY = "TEXT_MATCH(text, 'w17 w1234')"
PHRASE_QUERY = "PHRASE_MATCH(text, 'w3 w5', 1)"


def _rows(n: int) -> pa.Table:
    rng = np.random.default_rng(7)
    weights = 1.0 / np.arange(1, 2001)
    words = rng.choice(2000, size=n * 16, p=weights / weights.sum())
    lengths = rng.integers(4, 17, size=n)
    texts = [" ".join(f"w{w}" for w in words[i * 16:i * 16 + k]) for i, k in enumerate(lengths)]
    return pa.table({
        "id": pa.array(np.arange(n), pa.int64()),
        "text": pa.array(texts, pa.string()),
        "v": pa.FixedSizeListArray.from_arrays(pa.array(rng.random(2 * n, dtype=np.float32)), 2),
        "_ts": pa.array(np.full(n, 1, dtype=np.int64), pa.int64()),
    })


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 1)


def _pass(store: ObjectStore, meta: SegmentMeta) -> dict[str, float]:
    out: dict[str, float] = {}
    t = time.perf_counter()
    seg, _ = load_segment(store, SCHEMA, meta, [])
    out["load rows"] = _ms(t)
    t = time.perf_counter()
    missing = restore_text_indexes(store, SCHEMA, seg)
    out["restore text index"] = _ms(t)
    for label, text in (("first TEXT_MATCH", TEXT_QUERY), ("first PHRASE_MATCH", PHRASE_QUERY)):
        expr = parse_filter(text, SCHEMA)
        t = time.perf_counter()
        read_mask(seg.store, expr=expr, expire_before=0, indexes=seg.filter_indexes())
        out[label] = _ms(t)
    if missing:
        t = time.perf_counter()
        for field in missing:
            ensure_text_index(store, seg, field)
        out["background build + save"] = _ms(t)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--passes", type=int, default=3)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="textidx-bench-"))
    try:
        store = ObjectStore.from_uri(root.as_uri())
        t = time.perf_counter()
        written = write_segment(store, SCHEMA, _rows(args.rows), collection_id=1, partition_id=2, segment_id=3,
                                vchannel="v")
        print(f"segment written with its text index: {_ms(t)} ms", file=sys.stderr)
        meta = SegmentMeta(segment_id=3, collection_id=1, partition_id=2, vchannel="v", state=SegmentState.FLUSHED,
                           rows=written.rows, manifest=written.manifest)
        [field] = text_fields(SCHEMA)
        index_dir = root / text_index_dir(1, 3, field.field_id)
        saved_bytes = sum(p.stat().st_size for p in index_dir.iterdir())
        kept = root.parent / f"{root.name}-kept"
        results: dict[str, dict[str, float]] = {}
        for case in ("saved", "not saved"):
            best: dict[str, float] = {}
            for _ in range(args.passes):
                if case == "not saved":
                    if kept.exists():
                        shutil.rmtree(kept)
                    shutil.copytree(index_dir, kept)
                    shutil.rmtree(index_dir)
                step = _pass(store, meta)
                if case == "not saved":  # put the saved index back as it was for the next pass
                    shutil.rmtree(index_dir, ignore_errors=True)
                    shutil.copytree(kept, index_dir)
                best = {k: min(v, best.get(k, v)) for k, v in step.items()}
            results[case] = best
        shutil.rmtree(kept, ignore_errors=True)
        steps = list(dict.fromkeys(k for r in results.values() for k in r))
        print(f"rows {args.rows}, saved index {saved_bytes / 2**20:.1f} MiB, fastest of {args.passes} passes (ms)")
        print("| step | " + " | ".join(results) + " |")
        print("|---|" + "---|" * len(results))
        for step in steps:
            print(f"| {step} | " + " | ".join(str(r.get(step, "-")) for r in results.values()) + " |")
        print(json.dumps({"rows": args.rows, "index_bytes": saved_bytes, "results": results}))
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
