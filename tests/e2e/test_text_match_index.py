"""The text-match index of sealed segments through pymilvus: built once per segment and saved beside
it, restored (not rebuilt) after a restart, written fresh for a compaction's output; ``TEXT_MATCH`` and
``PHRASE_MATCH`` answer as a brute-force model of Milvus' semantics on random documents throughout.

The analyzer (standard tokenizer, lowercase, two stop words) leaves gaps in the positions where a stop
word is dropped, so the phrase checks cover positions as the analyzer numbers them.
"""

from __future__ import annotations

import itertools
import random
import re
import time
from pathlib import Path
from typing import Any

import pytest
from pymilvus import DataType, MilvusClient

from tests.e2e.test_compaction import wait_compaction
from tests.e2e.util import unique_name
from tests.harness import Standalone

WORDS = ("the", "of", "vector", "database", "milvus", "search", "engine", "text", "sparse", "dense", "index",
         "query", "fast", "scale", "cloud", "open", "source")
STOP = {"the", "of"}
ANALYZER = {"tokenizer": "standard", "filter": ["lowercase", {"type": "stop", "stop_words": sorted(STOP)}]}


def _analyze(text: str) -> list[tuple[str, int]]:
    """The analyzer's tokens with their positions (a dropped stop word keeps its position)."""
    return [(w, i) for i, w in enumerate(re.findall(r"[a-z0-9]+", text.lower())) if w not in STOP]


def _text_match(text: str, query: str) -> bool:
    return bool({w for w, _ in _analyze(text)} & {w for w, _ in _analyze(query)})


def _phrase_match(text: str, query: str, slop: int) -> bool:
    """Some choice of one row position per query token whose offsets (row position - query position)
    spread over at most ``slop``: every choice tried."""
    wanted = _analyze(query)
    if not wanted:
        return False
    held = _analyze(text)
    choices = [[p for w, p in held if w == q] for q, _ in wanted]
    for combo in itertools.product(*choices):
        offsets = [p - q for p, (_, q) in zip(combo, wanted, strict=True)]
        if max(offsets) - min(offsets) <= slop:
            return True
    return False


def _docs(rng: random.Random, first: int, n: int) -> list[dict[str, Any]]:
    rows = []
    for i in range(first, first + n):
        words = [rng.choice(WORDS) for _ in range(rng.randint(1, 10))]
        text = " ".join(w.capitalize() if rng.random() < 0.2 else w for w in words) + "."
        rows.append({"id": i, "text": text, "v": [rng.random(), rng.random()]})
    return rows


def _queries(rng: random.Random) -> list[tuple[str, int | None]]:
    out: list[tuple[str, int | None]] = [("vector", None), ("Milvus cloud", None), ("the", None),
                                         ("vector database", 0), ("search of engine", 0), ("fast index", 2)]
    for _ in range(6):
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 3)))
        out.append((words, None if rng.random() < 0.4 else rng.randint(0, 3)))
    return out


def _check(client: MilvusClient, name: str, live: dict[int, str], queries: list[tuple[str, int | None]]) -> None:
    for query, slop in queries:
        if slop is None:
            expr = f"TEXT_MATCH(text, '{query}')"
            want = {i for i, t in live.items() if _text_match(t, query)}
        else:
            expr = f"PHRASE_MATCH(text, '{query}', {slop})"
            want = {i for i, t in live.items() if _phrase_match(t, query, slop)}
        got = {r["id"] for r in client.query(name, filter=expr, output_fields=["id"], limit=16384,
                                              consistency_level="Strong")}
        assert got == want, expr


def _text_index_files(standalone: Standalone, collection_id: int, segment_id: int) -> list[Path]:
    directory = standalone.data_dir / "storage" / "index_files" / str(collection_id) / str(segment_id)
    return sorted(directory.glob("text-*/*"))


def _wait_text_indexes(standalone: Standalone, collection_id: int, segments: set[int]) -> dict[Path, int]:
    """Every file of the segments' text-match indexes (meta.json last, so its presence means complete),
    with its modification time."""
    deadline = time.monotonic() + 120
    while True:
        files = {s: _text_index_files(standalone, collection_id, s) for s in segments}
        if all(any(p.name == "meta.json" for p in f) for f in files.values()):
            return {p: p.stat().st_mtime_ns for f in files.values() for p in f}
        assert time.monotonic() < deadline, f"no text index saved for {files}"
        time.sleep(0.5)


def _log_lines(standalone: Standalone, event: str) -> list[str]:
    paths = [standalone.log_path, *sorted((standalone.data_dir / "logs").glob("*.log"))]
    return [line for p in paths if p.exists() for line in p.read_text(errors="replace").splitlines()
            if f"event='{event}'" in line]


def _for_segment(lines: list[str], collection_id: int, segment_id: int) -> list[str]:
    return [line for line in lines if f"index_files/{collection_id}/{segment_id}/text-" in line
            or (re.search(rf"\bsegment={segment_id}\b", line) and re.search(rf"\bcollection_id={collection_id}\b", line))]


@pytest.mark.timeout(900)
def test_text_match_index_saved_restored_and_rebuilt_by_compaction(standalone: Standalone) -> None:
    rng = random.Random(31)
    client = MilvusClient(standalone.uri)
    name = unique_name("textidx")
    schema = MilvusClient.create_schema()
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("text", DataType.VARCHAR, max_length=500, enable_analyzer=True, analyzer_params=ANALYZER,
                     enable_match=True)
    schema.add_field("v", DataType.FLOAT_VECTOR, dim=2)
    index = client.prepare_index_params()
    index.add_index("v", index_type="FLAT", metric_type="L2")
    client.create_collection(name, schema=schema, index_params=index, num_shards=1)
    collection_id = int(client.describe_collection(name)["collection_id"])
    queries = _queries(rng)
    live: dict[int, str] = {}
    try:
        for first in (0, 600):  # two sealed segments
            rows = _docs(rng, first, 600)
            client.insert(name, rows)
            live.update((r["id"], r["text"]) for r in rows)
            client.flush(name)
        flushed = {s.segment_id for s in client.list_persistent_segments(name) if s.level == 2}
        assert len(flushed) == 2
        saved = _wait_text_indexes(standalone, collection_id, flushed)
        _check(client, name, live, queries)

        gone = rng.sample(sorted(live), 200)
        client.delete(name, ids=gone)
        for i in gone:
            live.pop(i)
        growing = _docs(rng, 1200, 100)  # growing rows beside the sealed ones: their in-memory index
        client.insert(name, growing)
        live.update((r["id"], r["text"]) for r in growing)
        _check(client, name, live, queries)
        client.flush(name)

        # A restart loads the saved indexes: read (logged), not built, the files untouched.
        built_before = len(_log_lines(standalone, "text index built"))
        loaded_before = len(_log_lines(standalone, "text index loaded"))
        client.close()
        standalone.stop()
        standalone.start()
        client = MilvusClient(standalone.uri)
        client.load_collection(name)
        _check(client, name, live, queries)
        loaded = _log_lines(standalone, "text index loaded")[loaded_before:]
        assert all(_for_segment(loaded, collection_id, s) for s in flushed), loaded
        built = _log_lines(standalone, "text index built")[built_before:]
        assert not any(_for_segment(built, collection_id, s) for s in flushed), built
        assert {p: p.stat().st_mtime_ns for p in saved} == saved

        # Compaction writes each output segment's index beside it; the worker restores it.
        before = {s.segment_id for s in client.list_persistent_segments(name) if s.level == 2}
        for _ in range(2):  # the L0 deletes folded into the segments, then the segments merged
            wait_compaction(client, client.compact(name))
        after = {s.segment_id for s in client.list_persistent_segments(name) if s.level == 2}
        outputs = after - before
        assert outputs, f"nothing compacted: {sorted(before)} -> {sorted(after)}"
        _wait_text_indexes(standalone, collection_id, outputs)
        deadline = time.monotonic() + 120
        while True:  # reads switch to the outputs once they are loaded
            try:
                _check(client, name, live, queries)
                break
            except AssertionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(1)
        built = _log_lines(standalone, "text index built")
        assert not any(_for_segment(built, collection_id, s) for s in outputs), built
    finally:
        client.drop_collection(name)
        client.close()
