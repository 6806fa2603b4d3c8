"""Full-text search through pymilvus: a BM25 function in the schema, text in, text queries out.

The flow is pymilvus' full-text example (schema with a BM25 function, insert
text, create a SPARSE_INVERTED_INDEX with the BM25 metric, search with raw
text). Scores are checked against a numpy computation of Milvus' BM25 (query
``qtf * idf`` with ``idf = ln(1 + (N - df + 0.5) / (df + 0.5))``, documents
``tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))``) over the tokens
``run_analyzer`` gives, on growing data, after a flush (sealed segments,
statistics read from storage) with growing rows beside them, after deletes
(which, as in Milvus, leave the statistics alone) and after a restart.
"""

from __future__ import annotations

import itertools
import math
import time
import zlib
from collections import Counter
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from pymilvus import (
    AnnSearchRequest,
    DataType,
    Function,
    FunctionType,
    MilvusClient,
    MilvusException,
    RRFRanker,
    WeightedRanker,
)

from tests.e2e.util import unique_name
from tests.harness import Standalone

WORDS = ("vector", "database", "milvus", "search", "engine", "text", "sparse", "dense", "index", "query",
         "fast", "scale", "cloud", "open", "source", "retrieval", "semantic", "keyword", "hybrid", "ranking")
K1, B = 1.5, 0.6


def _docs(n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        words = rng.choice(WORDS, size=int(rng.integers(2, 12)), p=np.linspace(2, 0.2, len(WORDS)) / np.linspace(2, 0.2, len(WORDS)).sum())
        out.append(" ".join(str(w).capitalize() if rng.random() < 0.3 else str(w) for w in words) + ".")
    return out


def _schema() -> Any:
    schema = MilvusClient.create_schema()
    schema.add_field("id", DataType.INT64, is_primary=True, auto_id=False)
    schema.add_field("text", DataType.VARCHAR, max_length=1000, enable_analyzer=True,
                     analyzer_params={"type": "english"}, enable_match=True)
    schema.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
    schema.add_field("dense", DataType.FLOAT_VECTOR, dim=4)
    schema.add_function(Function(name="bm25", function_type=FunctionType.BM25,
                                 input_field_names=["text"], output_field_names=["sparse"]))
    return schema


def _create(client: MilvusClient, name: str) -> None:
    index = client.prepare_index_params()
    index.add_index("sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25",
                    params={"inverted_index_algo": "DAAT_MAXSCORE", "bm25_k1": K1, "bm25_b": B})
    index.add_index("dense", index_type="FLAT", metric_type="IP")
    client.create_collection(name, schema=_schema(), index_params=index, consistency_level="Strong")


class Model:
    """Milvus' BM25 over the documents' analyzed tokens; ``stats`` are the rows Milvus counts."""

    def __init__(self, client: MilvusClient) -> None:
        self.client = client
        self.tokens: dict[int, list[str]] = {}
        self.counted: list[list[str]] = []  # rows in the statistics (deleted and replaced ones stay until compaction)
        self.live: set[int] = set()

    def analyze(self, texts: list[str]) -> list[list[str]]:
        results = self.client.run_analyzer(texts, analyzer_params={"type": "english"})
        return [list(r.tokens) for r in results]

    def insert(self, rows: list[dict[str, Any]]) -> None:
        for row, toks in zip(rows, self.analyze([r["text"] for r in rows]), strict=True):
            self.tokens[row["id"]] = toks
            self.counted.append(toks)
            self.live.add(row["id"])

    def scores(self, query: str) -> dict[int, float]:
        q = Counter(self.analyze([query])[0])
        n = len(self.counted)
        avgdl = sum(len(toks) for toks in self.counted) / n
        df = Counter(t for toks in self.counted for t in set(toks))
        out: dict[int, float] = {}
        for i in self.live:
            tf = Counter(self.tokens[i])
            dl = len(self.tokens[i])
            s = 0.0
            for term, qtf in q.items():
                if term in tf:
                    idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
                    s += qtf * idf * tf[term] * (K1 + 1) / (tf[term] + K1 * (1 - B + B * dl / avgdl))
            if s > 0:
                out[i] = s
        return out


def _check(client: MilvusClient, name: str, model: Model, queries: list[str], k: int = 10) -> None:
    results = client.search(name, data=queries, anns_field="sparse", limit=k, output_fields=["text"],
                            search_params={"metric_type": "BM25"})
    for query, hits in zip(queries, results, strict=True):
        expected = model.scores(query)
        best = sorted(expected.items(), key=lambda kv: -kv[1])[:k]
        assert len(hits) == len(best), query
        for hit in hits:
            assert hit["id"] in expected, (query, hit)
            assert hit["distance"] == pytest.approx(expected[hit["id"]], rel=1e-4), (query, hit)
            assert "sparse" not in hit["entity"]
        # The k-th best score bounds every hit (ties may pick other rows).
        assert min(h["distance"] for h in hits) == pytest.approx(best[-1][1], rel=1e-4)


@pytest.fixture()
def client(standalone: Standalone) -> Iterator[MilvusClient]:
    c = MilvusClient(standalone.uri)
    try:
        yield c
    finally:
        c.close()


def test_full_text_search_example_flow(client: MilvusClient) -> None:
    name = unique_name("fts")
    _create(client, name)
    client.insert(name, [
        {"id": 1, "text": "information retrieval is a field of study.", "dense": [0.1, 0.2, 0.3, 0.4]},
        {"id": 2, "text": "information retrieval focuses on finding relevant information in large datasets.",
         "dense": [0.2, 0.1, 0.3, 0.4]},
        {"id": 3, "text": "data mining and information retrieval overlap in research.", "dense": [0.4, 0.3, 0.2, 0.1]},
    ])
    hits = client.search(name, data=["whats the focus of information retrieval?"], anns_field="sparse",
                         limit=3, output_fields=["text"], search_params={"params": {"drop_ratio_search": 0.2}})
    assert [h["id"] for h in hits[0]][0] == 2
    assert len(hits[0]) == 3
    described = client.describe_collection(name)
    assert described["functions"][0]["name"] == "bm25"
    rows = client.query(name, filter="id == 1", output_fields=["*"])
    assert "sparse" not in rows[0] and rows[0]["text"].startswith("information")


def test_bm25_scores_match_milvus_formula(client: MilvusClient, standalone: Standalone) -> None:
    name = unique_name("fts")
    _create(client, name)
    model = Model(client)
    docs = _docs(400, seed=7)
    first = [{"id": i, "text": t, "dense": [1.0, 0.0, 0.0, float(i % 5)]} for i, t in enumerate(docs[:250])]
    client.insert(name, first)
    model.insert(first)
    queries = ["vector database", "Fast hybrid Retrieval search", "semantic ranking of keyword queries", "cloud"]
    _check(client, name, model, queries)  # growing only

    client.flush(name)
    later = [{"id": 250 + i, "text": t, "dense": [0.0, 1.0, 0.0, 0.0]} for i, t in enumerate(docs[250:])]
    client.insert(name, later)
    model.insert(later)
    _check(client, name, model, queries)  # sealed + growing

    client.delete(name, ids=list(range(0, 400, 3)))
    model.live -= set(range(0, 400, 3))
    _check(client, name, model, queries)  # deleted rows leave, their statistics stay

    client.flush(name)
    standalone.stop()
    standalone.start()
    _check(client, name, model, queries)  # after a restart: all sealed, statistics from storage


def test_text_match_and_hybrid_search(client: MilvusClient) -> None:
    name = unique_name("fts")
    _create(client, name)
    docs = _docs(200, seed=11)
    client.insert(name, [{"id": i, "text": t, "dense": [float(i % 7), 1.0, 0.0, 0.0]} for i, t in enumerate(docs)])
    model = Model(client)
    toks = model.analyze(docs)

    def check_filters() -> None:
        for words in ("vector", "milvus cloud", "Searching"):
            want = set(model.analyze([words])[0])
            expected = {i for i, t in enumerate(toks) if want & set(t)}
            got = {r["id"] for r in client.query(name, filter=f"TEXT_MATCH(text, '{words}')", output_fields=["id"],
                                                  limit=1000)}
            assert got == expected, words
        for words, slop in (("vector database", 0), ("fast search", 2), ("milvus engine", 1)):
            want = model.analyze([words])[0]
            expected = {i for i, t in enumerate(toks) if _phrase(t, want, slop)}
            got = {r["id"] for r in client.query(name, filter=f"PHRASE_MATCH(text, '{words}', {slop})",
                                                  output_fields=["id"], limit=1000)}
            assert got == expected, words

    check_filters()  # growing
    client.flush(name)
    check_filters()  # sealed
    with pytest.raises(MilvusException, match="does not enable match"):
        client.query(name, filter="TEXT_MATCH(id, 'x')", output_fields=["id"])
    filtered = client.search(name, data=["vector"], anns_field="sparse", limit=50,
                             filter="TEXT_MATCH(text, 'cloud')", output_fields=["text"])
    assert filtered[0] and all("cloud" in h["entity"]["text"].lower() for h in filtered[0])
    search = AnnSearchRequest(data=["vector search"], anns_field="sparse", param={}, limit=20,
                              expr="TEXT_MATCH(text, 'vector')")
    dense = AnnSearchRequest(data=[[1.0, 1.0, 0.0, 0.0]], anns_field="dense", param={"metric_type": "IP"}, limit=20)
    for ranker in (RRFRanker(60), WeightedRanker(0.7, 0.3)):
        hits = client.hybrid_search(name, [search, dense], ranker=ranker, limit=10, output_fields=["text"])
        assert len(hits[0]) == 10
        texts = {h["id"]: h["entity"]["text"] for h in hits[0]}
        bm25_ids = {h["id"] for h in client.search(name, data=["vector search"], anns_field="sparse", limit=20,
                                                    filter="TEXT_MATCH(text, 'vector')")[0]}
        assert bm25_ids and all("vector" in texts[i].lower() for i in bm25_ids & set(texts))


def _phrase(tokens: list[str], query: list[str], slop: int) -> bool:
    """The query's tokens (consecutive: no stop words among these words), their row positions within
    ``slop`` of the phrase's: every choice of positions tried."""
    for combo in _choices(tokens, query):
        offsets = [p - q for q, p in enumerate(combo)]
        if max(offsets) - min(offsets) <= slop:
            return True
    return False


def _choices(tokens: list[str], query: list[str]) -> Iterator[tuple[int, ...]]:
    yield from itertools.product(*[[i for i, t in enumerate(tokens) if t == q] for q in query])


def test_function_output_cannot_be_written_or_misused(client: MilvusClient) -> None:
    name = unique_name("fts")
    _create(client, name)
    with pytest.raises(MilvusException):
        client.search(name, data=["text"], anns_field="sparse", limit=3, search_params={"metric_type": "IP"})
    bad = MilvusClient.create_schema()
    bad.add_field("id", DataType.INT64, is_primary=True)
    bad.add_field("text", DataType.VARCHAR, max_length=100)
    bad.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
    bad.add_function(Function(name="bm25", function_type=FunctionType.BM25,
                              input_field_names=["text"], output_field_names=["sparse"]))
    with pytest.raises(MilvusException, match="enable_analyzer"):
        client.create_collection(unique_name("bad"), schema=bad)


def test_upserts_recompute_the_bm25_output(client: MilvusClient) -> None:
    name = unique_name("fts")
    _create(client, name)
    model = Model(client)
    rows = [{"id": i, "text": t, "dense": [1.0, 0.0, 0.0, 0.0]} for i, t in enumerate(_docs(60, seed=3))]
    client.insert(name, rows)
    model.insert(rows)
    changed = [{"id": 5, "text": "hybrid hybrid hybrid cloud", "dense": [0.0, 1.0, 0.0, 0.0]}]
    client.upsert(name, changed)
    model.insert(changed)  # the old version stays in the statistics, as in Milvus (a delete + an insert)
    client.upsert(name, [{"id": 6, "text": "cloud cloud ranking"}], partial_update=True)
    model.insert([{"id": 6, "text": "cloud cloud ranking"}])
    hits = client.search(name, data=["hybrid cloud ranking"], anns_field="sparse", limit=60, output_fields=["text"])
    got = {h["id"]: h["distance"] for h in hits[0]}
    want = model.scores("hybrid cloud ranking")
    assert set(got) == set(want)
    for key, score in got.items():
        assert score == pytest.approx(want[key], rel=1e-4)
    assert client.query(name, filter="id == 6", output_fields=["text", "dense"])[0]["dense"] == [1.0, 0.0, 0.0, 0.0]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_compaction_drops_deleted_rows_from_the_statistics(client: MilvusClient) -> None:
    name = unique_name("fts")
    _create(client, name)
    model = Model(client)
    docs = _docs(300, seed=21)
    for first in (0, 150):
        rows = [{"id": i, "text": docs[i], "dense": [1.0, 0.0, 0.0, 0.0]} for i in range(first, first + 150)]
        client.insert(name, rows)
        model.insert(rows)
        client.flush(name)
    gone = list(range(0, 300, 2))
    client.delete(name, ids=gone)
    client.flush(name)
    model.live -= set(gone)
    queries = ["vector database", "open source retrieval"]
    _check(client, name, model, queries)  # deleted rows still counted
    job = client.compact(name)
    deadline = time.monotonic() + 240
    while client.get_compaction_state(job) != "Completed":
        assert time.monotonic() < deadline, "compaction did not complete"
        time.sleep(1)
    before = model.counted
    model.counted = [model.tokens[i] for i in sorted(model.live)]  # the rewritten segments hold the survivors only
    deadline = time.monotonic() + 180
    while True:  # reads switch to the compacted segments once they are loaded
        try:
            _check(client, name, model, queries)
            break
        except AssertionError:
            if time.monotonic() > deadline:
                after, model.counted = model.counted, before
                try:
                    _check(client, name, model, queries)
                    print("STILL OLD STATS")
                except AssertionError:
                    print("NEITHER")
                model.counted = after
                raise
            time.sleep(1)


def test_run_analyzer_details_and_field_analyzers(client: MilvusClient) -> None:
    name = unique_name("fts")
    _create(client, name)
    detailed = client.run_analyzer("Élan vital, running", analyzer_params={"type": "standard"},
                                   with_detail=True, with_hash=True)
    tokens = detailed.tokens
    assert [t["token"] for t in tokens] == ["élan", "vital", "running"]
    assert [(t["start_offset"], t["end_offset"], t["position"]) for t in tokens] == [(0, 5, 0), (6, 11, 1), (13, 20, 2)]  # bytes
    assert tokens[0]["hash"] == zlib.crc32("élan".encode())
    by_field = client.run_analyzer(["The Milvus vector database is built for scale!"], collection_name=name,
                                   field_name="text")
    assert list(by_field[0].tokens) == ["milvus", "vector", "databas", "built", "scale"]
    with pytest.raises(MilvusException, match="unsupported analyzer type"):
        client.run_analyzer("x", analyzer_params={"type": "klingon"})


def test_inserting_a_function_output_is_refused(client: MilvusClient, standalone: Standalone) -> None:
    name = unique_name("fts")
    _create(client, name)
    import grpc
    from pymilvus.grpc_gen import milvus_pb2, milvus_pb2_grpc, schema_pb2

    # pymilvus leaves function outputs out of what it sends; a raw request carrying one is refused.
    fields = [
        schema_pb2.FieldData(field_name="id", type=schema_pb2.Int64,
                             scalars=schema_pb2.ScalarField(long_data=schema_pb2.LongArray(data=[1]))),
        schema_pb2.FieldData(field_name="text", type=schema_pb2.VarChar,
                             scalars=schema_pb2.ScalarField(string_data=schema_pb2.StringArray(data=["hello"]))),
        schema_pb2.FieldData(field_name="dense", type=schema_pb2.FloatVector, vectors=schema_pb2.VectorField(
            dim=4, float_vector=schema_pb2.FloatArray(data=[0.0, 0.0, 0.0, 1.0]))),
        schema_pb2.FieldData(field_name="sparse", type=schema_pb2.SparseFloatVector, vectors=schema_pb2.VectorField(
            sparse_float_vector=schema_pb2.SparseFloatArray(contents=[b"\x01\x00\x00\x00\x00\x00\x80?"], dim=2))),
    ]
    with grpc.insecure_channel(f"127.0.0.1:{standalone.port}") as channel:
        resp = milvus_pb2_grpc.MilvusServiceStub(channel).Insert(
            milvus_pb2.InsertRequest(collection_name=name, fields_data=fields, num_rows=1), timeout=30)
    assert resp.status.code != 0 and "function output" in resp.status.reason
    assert client.query(name, filter="id >= 0", output_fields=["id"]) == []
    with pytest.raises(MilvusException, match="not allowed to retrieve raw data of field sparse"):
        client.query(name, filter="id >= 0", output_fields=["sparse"])
