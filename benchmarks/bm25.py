"""Full-text search (BM25) QPS: Strata through pymilvus against bm25s in the benchmark process.

    .venv/bin/python benchmarks/bm25.py [--sentences 20999] [--queries 1000] [--nq1-requests 300]
        [--k 10] [--algo DAAT_MAXSCORE] [--cache benchmarks/.cache] [--dir PARENT]

The corpus is the MiniLM benchmark's sentences (``benchmarks/compare_text.py``
caches them in ``<cache>/minilm-s1/sentences.txt``); the last ``--queries``
are the queries, the rest the documents. Both sides score with the same
tokens (Strata's ``standard`` analyzer, which ``run_analyzer`` reports), the
same ``k1`` = 1.2 and ``b`` = 0.75 and the same IDF: bm25s' ``lucene`` method
scores ``tf / (tf + k1 (1 - b + b dl / avgdl))`` with ``ln(1 + (N - df + 0.5) /
(df + 0.5))``, Milvus' BM25 that times ``k1 + 1``, so the rankings are the
same and the report gives the share of Strata's top-k ids that bm25s has too.

Strata: ``strata standalone`` on a free loopback port in a temporary
directory, one collection (a BM25 function from ``text`` to ``sparse``),
inserted in batches, flushed, indexed (SPARSE_INVERTED_INDEX with ``--algo``)
and loaded; then ``--nq1-requests`` searches of one text each, one at a time,
and the queries in requests of 100, at ``Eventually`` consistency (as the
other search benchmarks: a Strong read waits for the next 200 ms TimeTick). bm25s runs the same two loops in process
(numpy backend, no network): the bound a server's overhead is measured against.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import bm25s  # noqa: E402
from compare_servers import strata  # noqa: E402
from pymilvus import DataType, Function, FunctionType, MilvusClient  # noqa: E402

from common.fulltext.analyzer import build_analyzer  # noqa: E402

K1, B = 1.2, 0.75
NAME = "bm25_bench"


def _sentences(cache: Path, limit: int) -> list[str]:
    path = cache / "minilm-s1" / "sentences.txt"
    if not path.exists():
        raise SystemExit(f"{path} is missing: run benchmarks/compare_text.py first")
    lines = [line.rstrip("\n") for line in path.open(encoding="utf-8")]
    return [s for s in lines if s][:limit]


def _load(client: MilvusClient, docs: list[str], algo: str) -> float:
    schema = MilvusClient.create_schema()
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("text", DataType.VARCHAR, max_length=65535, enable_analyzer=True)
    schema.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
    schema.add_function(Function(name="bm25", function_type=FunctionType.BM25,
                                 input_field_names=["text"], output_field_names=["sparse"]))
    index = client.prepare_index_params()
    index.add_index("sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25",
                    params={"inverted_index_algo": algo, "bm25_k1": K1, "bm25_b": B})
    started = time.perf_counter()
    client.create_collection(NAME, schema=schema, index_params=index, consistency_level="Strong")
    client.release_collection(NAME)
    for first in range(0, len(docs), 2000):
        client.insert(NAME, [{"id": i, "text": docs[i]} for i in range(first, min(first + 2000, len(docs)))])
    client.flush(NAME)
    client.load_collection(NAME)
    return time.perf_counter() - started


def _timed(run, requests: int) -> tuple[float, float]:
    lat = []
    for i in range(requests):
        t = time.perf_counter()
        run(i)
        lat.append(time.perf_counter() - t)
    return requests / sum(lat), statistics.median(lat) * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sentences", type=int, default=20999)
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--nq1-requests", type=int, default=300)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--algo", default="DAAT_MAXSCORE")
    ap.add_argument("--cache", type=Path, default=REPO / "benchmarks" / ".cache")
    ap.add_argument("--dir", type=Path, default=None)
    args = ap.parse_args()

    texts = _sentences(args.cache, args.sentences)
    docs, queries = texts[: -args.queries], texts[-args.queries :]
    analyzer = build_analyzer({"type": "standard"})
    print(f"corpus {len(docs)} sentences, {len(queries)} queries, k={args.k}, k1={K1}, b={B}, algo={args.algo}")

    retriever = bm25s.BM25(k1=K1, b=B, method="lucene")
    t = time.perf_counter()
    retriever.index([analyzer.terms(d) for d in docs], show_progress=False)
    print(f"bm25s index: {time.perf_counter() - t:.1f} s")
    q_tokens = [analyzer.terms(q) for q in queries]

    def bm25s_search(batch: list[list[str]]) -> np.ndarray:
        ids, _ = retriever.retrieve(batch, k=args.k, show_progress=False, n_threads=1)
        return ids

    qps1, p50 = _timed(lambda i: bm25s_search([q_tokens[i % len(q_tokens)]]), args.nq1_requests)
    batches = [q_tokens[i : i + 100] for i in range(0, len(q_tokens), 100)]
    qps100, _ = _timed(lambda i: bm25s_search(batches[i]), len(batches))
    print(f"bm25s   nq=1: {qps1:8.1f} QPS (p50 {p50:.2f} ms)   nq=100: {qps100 * 100:8.1f} queries/s")
    truth = [set(row.tolist()) for b in batches for row in bm25s_search(b)]

    with tempfile.TemporaryDirectory(dir=args.dir) as work, strata(Path(work)) as server:
        client = MilvusClient(server.uri)
        print(f"strata load (insert, flush, index, load): {_load(client, docs, args.algo):.1f} s")

        def search(batch: list[str]) -> list[list[dict]]:
            return client.search(  # type: ignore[no-any-return]
                NAME, data=batch, anns_field="sparse", limit=args.k, consistency_level="Eventually"
            )

        search(queries[:1])  # warm: the oracle's statistics, the scored posting lists
        qps1, p50 = _timed(lambda i: search([queries[i % len(queries)]]), args.nq1_requests)
        text_batches = [queries[i : i + 100] for i in range(0, len(queries), 100)]
        found: list[list[dict]] = []
        qps100, _ = _timed(lambda i: found.extend(search(text_batches[i])), len(text_batches))
        print(f"strata  nq=1: {qps1:8.1f} QPS (p50 {p50:.2f} ms)   nq=100: {qps100 * 100:8.1f} queries/s")
        overlap = [len({h["id"] for h in hits} & want) / max(1, min(args.k, len(want)))
                   for hits, want in zip(found, truth, strict=True)]
        print(f"top-{args.k} agreement with bm25s: {np.mean(overlap):.4f}")
        client.close()


if __name__ == "__main__":
    main()
