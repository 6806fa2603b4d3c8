"""Full-text search (BM25): Strata through pymilvus against bm25s and tantivy in the benchmark process.

    .venv/bin/python benchmarks/bm25.py [--sentences 20999] [--queries 1000] [--nq1-requests 300]
        [--k 10] [--algo DAAT_MAXSCORE] [--cache benchmarks/.cache] [--dir PARENT]
        [--strata NAME=CHECKOUT ...]

The corpus is the MiniLM benchmark's sentences (``benchmarks/compare_text.py``
caches them and their all-MiniLM-L6-v2 embeddings in ``<cache>/minilm-s1``);
the last ``--queries`` are the queries, the rest the documents. Every engine
scores with Strata's ``standard`` tokens (``bm25_inprocess.py`` says how bm25s
and tantivy are set up), ``k1`` = 1.2 and ``b`` = 0.75.

Strata: ``strata standalone`` on a free loopback port in a temporary
directory, one per ``--strata NAME=CHECKOUT`` (default: this checkout; give
two to compare code before and after a change in one run: both serve at once
and take turns through five rounds of the loops below, so a machine shared
with other work loads both alike). One collection: a
BM25 function from ``text`` to ``sparse`` (SPARSE_INVERTED_INDEX with
``--algo``) and the sentence's embedding in ``dense`` (384 dimensions, HNSW M
16, efConstruction 100, IP), inserted in batches, flushed, indexed and loaded.
Then, at ``Eventually`` consistency (a Strong read waits for the next 200 ms
TimeTick): ``--nq1-requests`` BM25 searches of one text each, one at a time;
the queries in requests of 100; hybrid searches of one text (BM25 on
``sparse`` and the text's embedding on ``dense``, ef 64, RRF k 60); and plain
dense searches of one embedding, for reference. The in-process engines run the
same two BM25 loops (tantivy has no batch call: a batch is a loop). Quality:
NDCG@10 with bm25s' scores as graded relevance, and the share of top-10 ids in
bm25s' top 10.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from bm25_inprocess import K1, B, Bm25sEngine, TantivyEngine, mean_ndcg  # noqa: E402
from pymilvus import AnnSearchRequest, DataType, Function, FunctionType, MilvusClient, RRFRanker  # noqa: E402
from waits import wait_indexed  # noqa: E402

from common.fulltext.analyzer import build_analyzer  # noqa: E402
from tests.harness import Standalone  # noqa: E402

NAME = "bm25_bench"
DIM = 384
CHUNK = 2000


def _sentences(cache: Path, limit: int) -> tuple[list[str], np.ndarray]:
    folder = cache / "minilm-s1"
    path = folder / "sentences.txt"
    if not path.exists():
        raise SystemExit(f"{path} is missing: run benchmarks/compare_text.py first")
    lines = path.read_text(encoding="utf-8").split("\n")[:limit]
    chunks = sorted(folder.glob("emb-*.npy"))[: -(-limit // CHUNK)]
    emb = np.concatenate([np.load(c) for c in chunks])[:limit].astype(np.float32)
    if len(emb) < len(lines):
        raise SystemExit(f"{folder} holds {len(emb)} embeddings for {len(lines)} sentences: run compare_text.py")
    return lines, emb


def _load(client: MilvusClient, docs: list[str], emb: np.ndarray, algo: str) -> float:
    schema = MilvusClient.create_schema()
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("text", DataType.VARCHAR, max_length=65535, enable_analyzer=True)
    schema.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
    schema.add_field("dense", DataType.FLOAT_VECTOR, dim=DIM)
    schema.add_function(Function(name="bm25", function_type=FunctionType.BM25,
                                 input_field_names=["text"], output_field_names=["sparse"]))
    index = client.prepare_index_params()
    index.add_index("sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25",
                    params={"inverted_index_algo": algo, "bm25_k1": K1, "bm25_b": B})
    index.add_index("dense", index_type="HNSW", metric_type="IP", params={"M": 16, "efConstruction": 100})
    started = time.perf_counter()
    client.create_collection(NAME, schema=schema, index_params=index, consistency_level="Strong")
    client.release_collection(NAME)
    for first in range(0, len(docs), CHUNK):
        last = min(first + CHUNK, len(docs))
        client.insert(NAME, [{"id": i, "text": docs[i], "dense": emb[i].tolist()} for i in range(first, last)])
    client.flush(NAME)
    client.load_collection(NAME)
    wait_indexed(client, NAME)  # a sealed segment is searched exactly until its index is built
    return time.perf_counter() - started


def _timed(run: Callable[[int], object], requests: int) -> tuple[float, float]:
    """(requests per second, p50 latency in ms)."""
    lat = []
    for i in range(requests):
        t = time.perf_counter()
        run(i)
        lat.append(time.perf_counter() - t)
    return requests / sum(lat), statistics.median(lat) * 1000


def _load_average() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def _commit(checkout: Path) -> str:
    try:
        out = subprocess.run(["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, check=True, timeout=10)
        return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "?"


class Side:
    """One Strata checkout, serving the loaded collection; its latencies gathered over the rounds."""

    def __init__(self, name: str, checkout: Path, work: Path) -> None:
        self.name, self.checkout = name, checkout
        self.server = Standalone(work / name, env={"PYTHONPATH": str(checkout)}, repo=checkout)
        self.lat: dict[str, list[float]] = {"nq1": [], "nq100": [], "hybrid": [], "dense": []}
        self.found: list[list[dict]] = []

    def start(self, docs: list[str], emb: np.ndarray, algo: str) -> None:
        self.server.start()
        self.client = MilvusClient(self.server.uri)
        print(f"strata {self.name} ({self.checkout}, {_commit(self.checkout)}): load (insert, flush, index, load) "
              f"{_load(self.client, docs, emb, algo):.1f} s, load average {_load_average()}", flush=True)

    def search(self, batch: list[str], k: int) -> list[list[dict]]:
        return self.client.search(  # type: ignore[no-any-return]
            NAME, data=batch, anns_field="sparse", limit=k, consistency_level="Eventually"
        )

    def hybrid(self, text: str, vec: np.ndarray, k: int) -> object:
        reqs = [AnnSearchRequest(data=[text], anns_field="sparse", param={}, limit=k),
                AnnSearchRequest(data=[vec.tolist()], anns_field="dense", param={"ef": 64}, limit=k)]
        return self.client.hybrid_search(NAME, reqs, RRFRanker(60), limit=k, consistency_level="Eventually")

    def dense(self, vec: np.ndarray, k: int) -> object:
        return self.client.search(NAME, data=[vec.tolist()], anns_field="dense", limit=k,
                                  search_params={"params": {"ef": 64}}, consistency_level="Eventually")

    def stop(self) -> None:
        try:
            self.client.close()
        finally:
            self.server.stop()


def _lat(run: Callable[[], object], into: list[float]) -> None:
    t = time.perf_counter()
    run()
    into.append(time.perf_counter() - t)


def _round(side: Side, r: int, rounds: int, args: argparse.Namespace, queries: list[str], qemb: np.ndarray) -> None:
    """Round ``r`` of ``rounds``: its share of each loop (the sides take turns, so both see the same load)."""
    k, n = args.k, len(queries)
    share = range(r * args.nq1_requests // rounds, (r + 1) * args.nq1_requests // rounds)
    for i in share:
        _lat(lambda i=i: side.search([queries[i % n]], k), side.lat["nq1"])
    batches = range(r * n // 100 // rounds, (r + 1) * n // 100 // rounds)
    for b in batches:
        _lat(lambda b=b: side.found.extend(side.search(queries[b * 100 : (b + 1) * 100], k)), side.lat["nq100"])
    for i in share:
        _lat(lambda i=i: side.hybrid(queries[i % n], qemb[i % n], k), side.lat["hybrid"])
    for i in share:
        _lat(lambda i=i: side.dense(qemb[i % n], k), side.lat["dense"])


def _report(side: Side, k: int, gains: list[np.ndarray], truth: list[set[int]]) -> None:
    def rate(key: str, per: int = 1) -> str:
        lat = side.lat[key]
        return f"{len(lat) * per / sum(lat):8.1f} {'QPS' if per == 1 else 'queries/s'}" + (
            f" (p50 {statistics.median(lat) * 1000:.2f} ms)" if per == 1 else "")

    ids = [[int(h["id"]) for h in hits] for hits in side.found]
    ndcg = mean_ndcg(ids, gains, k)
    overlap = np.mean([len(set(r) & want) / max(1, min(k, len(want))) for r, want in zip(ids, truth, strict=True)])
    print(f"strata {side.name:7s} BM25 nq=1: {rate('nq1')}   nq=100: {rate('nq100', 100)}   NDCG@10 {ndcg:.4f}   "
          f"top-{k} shared {overlap:.4f}", flush=True)
    print(f"strata {side.name:7s} hybrid nq=1: {rate('hybrid')}   dense nq=1: {rate('dense')}", flush=True)


def _strata(checkouts: list[tuple[str, Path]], args: argparse.Namespace, docs: list[str], emb: np.ndarray,
            queries: list[str], qemb: np.ndarray, gains: list[np.ndarray], truth: list[set[int]]) -> None:
    rounds = 5
    with tempfile.TemporaryDirectory(dir=args.dir) as work:
        sides = [Side(name, checkout, Path(work)) for name, checkout in checkouts]
        try:
            for side in sides:
                side.start(docs, emb, args.algo)
            for side in sides:
                for i in range(20):  # warm: the oracle's statistics, the scored posting lists, the connections
                    side.search([queries[i]], args.k)
                    side.hybrid(queries[i], qemb[i], args.k)
            print(f"searching in {rounds} rounds, the checkouts taking turns; load average {_load_average()}",
                  flush=True)
            for r in range(rounds):
                for side in sides:
                    _round(side, r, rounds, args, queries, qemb)
            for side in sides:
                _report(side, args.k, gains, truth)
            print(f"load average {_load_average()}", flush=True)
        finally:
            for side in sides:
                side.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sentences", type=int, default=20999)
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--nq1-requests", type=int, default=300)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--algo", default="DAAT_MAXSCORE")
    ap.add_argument("--cache", type=Path, default=REPO / "benchmarks" / ".cache")
    ap.add_argument("--dir", type=Path, default=None)
    ap.add_argument("--strata", action="append", default=[], metavar="NAME=CHECKOUT",
                    help="a Strata checkout to measure (repeatable; default: this one)")
    args = ap.parse_args()
    checkouts = [(s.split("=", 1)[0], Path(s.split("=", 1)[1]).resolve()) for s in args.strata] or [("this", REPO)]

    texts, emb = _sentences(args.cache, args.sentences)
    docs, queries = texts[: -args.queries], texts[-args.queries :]
    demb, qemb = emb[: len(docs)], emb[len(docs) :]
    analyzer = build_analyzer({"type": "standard"})
    print(f"corpus {len(docs)} sentences, {len(queries)} queries, k={args.k}, k1={K1}, b={B}, algo={args.algo}, "
          f"load average {_load_average()}", flush=True)

    q_tokens = [analyzer.terms(q) for q in queries]
    t = time.perf_counter()
    bm25s = Bm25sEngine([analyzer.terms(d) for d in docs])
    print(f"bm25s index: {time.perf_counter() - t:.1f} s", flush=True)
    qps1, p50 = _timed(lambda i: bm25s.search([q_tokens[i % len(q_tokens)]], args.k), args.nq1_requests)
    batches = [q_tokens[i : i + 100] for i in range(0, len(q_tokens), 100)]
    qps100, _ = _timed(lambda i: bm25s.search(batches[i], args.k), len(batches))
    gains = [bm25s.scores(q) for q in q_tokens]
    truth_rows = [row.tolist() for b in batches for row in bm25s.search(b, args.k)]
    truth = [set(r) for r in truth_rows]
    print(f"bm25s   BM25 nq=1: {qps1:8.1f} QPS (p50 {p50:.2f} ms)   nq=100: {qps100 * 100:8.1f} queries/s   "
          f"NDCG@10 {mean_ndcg(truth_rows, gains, args.k):.4f}", flush=True)

    t = time.perf_counter()
    tantivy = TantivyEngine(docs)
    print(f"tantivy index: {time.perf_counter() - t:.1f} s", flush=True)
    qps1, p50 = _timed(lambda i: tantivy.search_one(q_tokens[i % len(q_tokens)], args.k), args.nq1_requests)
    qps100, _ = _timed(lambda i: [tantivy.search_one(q, args.k) for q in batches[i]], len(batches))
    ranked = [tantivy.search_one(q, args.k) for q in q_tokens]
    shared = np.mean([len(set(r) & want) / max(1, min(args.k, len(want))) for r, want in zip(ranked, truth, strict=True)])
    print(f"tantivy BM25 nq=1: {qps1:8.1f} QPS (p50 {p50:.2f} ms)   nq=100: {qps100 * 100:8.1f} queries/s   "
          f"NDCG@10 {mean_ndcg(ranked, gains, args.k):.4f}   top-{args.k} shared {shared:.4f}", flush=True)

    _strata(checkouts, args, docs, demb, queries, qemb, gains, truth)


if __name__ == "__main__":
    main()
