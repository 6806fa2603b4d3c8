"""SPARSE_FLOAT_VECTOR end to end through pymilvus against a real standalone.

A collection with a sparse field per index kind and algorithm beside a dense
one, rows inserted as dicts and as scipy rows, sealed and growing: searches
against a pure-Python dict reference (the same hits and float32 distances),
filters, range search, group by, hybrid search with the dense field, queries
returning the rows exactly, deletes, an upsert, a restart; and the bad input
refused with Milvus' code and message, nothing created.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pymilvus import AnnSearchRequest, DataType, MilvusClient, MilvusException, RRFRanker
from scipy.sparse import csr_matrix

from segcore.segments.sparse_rows import rows_from_pairs
from tests.harness import Standalone, dump_logs_on_failure
from tests.segcore.segments.sparse_reference import as_dicts, random_rows, reference_topk

N, SEALED, VOCAB = 900, 600, 400
# field -> (index_type, build params); every one with metric IP (AUTOINDEX: the default, IP).
FIELDS: dict[str, tuple[str, dict[str, Any]]] = {
    "taat": ("SPARSE_INVERTED_INDEX", {"inverted_index_algo": "TAAT_NAIVE"}),
    "maxscore": ("SPARSE_INVERTED_INDEX", {"inverted_index_algo": "DAAT_MAXSCORE"}),
    "wand": ("SPARSE_WAND", {}),
}  # with "dense": Milvus' 4 vector fields per collection; AUTOINDEX is in the refusal test's collection


def _scipy_row(row: dict[int, float]) -> csr_matrix:
    keys = sorted(row)
    return csr_matrix((np.array([row[k] for k in keys], np.float32), ([0] * len(keys), keys)), shape=(1, VOCAB))


def _check(hits: list[Any], base: list[dict[int, float]], queries: list[dict[int, float]], limit: int,
           allowed: np.ndarray | None = None) -> None:
    rows = rows_from_pairs([(np.array(sorted(r), np.uint32), np.array([r[k] for k in sorted(r)], np.float32))
                            for r in base])
    for got, query in zip(hits, queries, strict=True):
        want = reference_topk(rows, query, limit, allowed)
        assert [(h["id"], h["distance"]) for h in got] == [(r, pytest.approx(d, rel=1e-6)) for r, d in want]


def _search(client: MilvusClient, field: str, queries: list[Any], limit: int, **kw: Any) -> list[Any]:
    return client.search("sparse", data=queries, anns_field=field, limit=limit, consistency_level="Strong", **kw)


def _check_all(client: MilvusClient, base: list[dict[int, float]], deleted: set[int]) -> None:
    alive = np.array([i not in deleted for i in range(N)])
    queries = [base[5], base[SEALED + 7], {3: 0.5, 17: 1.5, 200: 0.25}, {}]
    for field in FIELDS:
        _check(_search(client, field, queries, 10), base, queries, 10, alive)
    tagged = alive & (np.arange(N) % 3 == 1)
    hits = _search(client, "maxscore", queries[:2], 8, filter="tag == 1")
    _check(hits, base, queries[:2], 8, tagged)


@pytest.mark.timeout(300)
def test_sparse_vectors_end_to_end(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    base = as_dicts(random_rows(rng, N, vocab=VOCAB, max_nnz=12))
    dense = rng.standard_normal((N, 8)).astype(np.float32)
    s = Standalone(tmp_path / "data")
    s.start()
    try:
        with dump_logs_on_failure(s):
            client = MilvusClient(s.uri)
            schema = MilvusClient.create_schema(auto_id=False)
            schema.add_field("id", DataType.INT64, is_primary=True)
            schema.add_field("tag", DataType.INT64)
            schema.add_field("dense", DataType.FLOAT_VECTOR, dim=8)
            for field in FIELDS:
                schema.add_field(field, DataType.SPARSE_FLOAT_VECTOR)
            index = client.prepare_index_params()
            index.add_index("dense", index_type="FLAT", metric_type="L2")
            for field, (index_type, params) in FIELDS.items():
                if index_type == "AUTOINDEX":
                    index.add_index(field, index_type=index_type)
                else:
                    index.add_index(field, index_type=index_type, metric_type="IP", params=params)
            client.create_collection("sparse", schema=schema, index_params=index, num_shards=2)

            def row(i: int) -> dict[str, Any]:
                # dicts for even rows, scipy rows for odd ones; each sparse field the same row.
                value: Any = base[i] if i % 2 == 0 else _scipy_row(base[i])
                return {"id": i, "tag": i % 3, "dense": dense[i].tolist(), **{f: value for f in FIELDS}}

            client.insert("sparse", [row(i) for i in range(SEALED)])
            client.flush("sparse")
            client.insert("sparse", [row(i) for i in range(SEALED, N)])  # growing
            _check_all(client, base, set())

            # drop_ratio_search ignores the query's smallest values: still the exact hits of the rest.
            query = {3: 0.01, 17: 1.5, 200: 0.25, 201: 0.9}
            kept = {17: 1.5, 201: 0.9}
            hits = _search(client, "taat", [query], 10, search_params={"params": {"drop_ratio_search": 0.5}})
            _check(hits, base, [kept], 10)

            # Range search, IP: radius < d <= range_filter.
            hits = _search(client, "wand", [base[10]], 100, search_params={"params": {"radius": 0.2, "range_filter": 0.8}})
            assert hits[0] and all(0.2 < h["distance"] <= 0.8 for h in hits[0])

            grouped = _search(client, "maxscore", [base[2]], 3, group_by_field="tag", output_fields=["tag"])
            assert sorted(h["entity"]["tag"] for h in grouped[0]) == [0, 1, 2]
            requests = [
                AnnSearchRequest([base[9]], "maxscore", {"metric_type": "IP"}, limit=5),
                AnnSearchRequest([dense[9].tolist()], "dense", {"metric_type": "L2"}, limit=5),
            ]
            fused = client.hybrid_search("sparse", requests, RRFRanker(), limit=3, consistency_level="Strong")
            assert fused[0][0]["id"] == 9

            # search_iterator pages through the same ranking (pymilvus' v1 iterator: range searches).
            iterator = client.search_iterator("sparse", data=[base[21]], anns_field="maxscore", batch_size=15,
                                              limit=60, consistency_level="Strong")
            paged: list[Any] = []
            while page := iterator.next():
                paged.extend(page)
            iterator.close()
            rows = rows_from_pairs([(np.array(sorted(r), np.uint32), np.array([r[k] for k in sorted(r)], np.float32))
                                    for r in base])
            best = [d for _, d in reference_topk(rows, base[21], 60)]
            assert len({h["id"] for h in paged}) == len(paged) == len(best)
            np.testing.assert_allclose([h["distance"] for h in paged], best, rtol=1e-6)

            # Queries return the rows exactly (indices ascending, float32 values), sealed and growing.
            got = client.query("sparse", filter="id in [3, 599, 600, 899]", output_fields=list(FIELDS),
                               consistency_level="Strong")
            assert sorted(r["id"] for r in got) == [3, 599, 600, 899]
            for r in got:
                for f in FIELDS:
                    assert list(r[f].items()) == sorted(base[r["id"]].items())
            hits = _search(client, "taat", [base[4]], 1, output_fields=["wand"])
            assert hits[0][0]["entity"]["wand"] == base[hits[0][0]["id"]]

            deleted = set(range(0, 60, 2)) | {SEALED + 7}
            client.delete("sparse", ids=sorted(deleted))
            fresh = {1: 2.0, 2: 2.0}
            client.upsert("sparse", [{"id": 11, "tag": 2, "dense": dense[11].tolist(), **{f: fresh for f in FIELDS}}])
            base[11] = fresh
            _check_all(client, base, deleted)
            client.flush("sparse")
            _check_all(client, base, deleted)
            client.close()
        assert s.stop() == 0
        s.start()
        with dump_logs_on_failure(s):
            client = MilvusClient(s.uri)
            client.load_collection("sparse", timeout=120)
            _check_all(client, base, deleted)
            got = client.query("sparse", filter="id < 6", output_fields=["wand"], consistency_level="Strong")
            assert {r["id"]: r["wand"] for r in got} == {i: base[i] for i in (1, 3, 5)}
            client.close()
    finally:
        s.stop()


def _refused(call: Any, code: int, message: str) -> None:
    with pytest.raises(MilvusException) as err:
        call()
    assert err.value.code == code and message in err.value.message, (err.value.code, err.value.message)


def test_bad_sparse_input_is_refused_and_nothing_is_created(milvus: MilvusClient) -> None:
    from tests.e2e.util import unique_name

    bad = unique_name("sparsedim")
    schema = MilvusClient.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("sv", DataType.SPARSE_FLOAT_VECTOR, dim=8)
    _refused(lambda: milvus.create_collection(bad, schema=schema), 1100, "dim should not be specified for sparse vector field sv")
    assert not milvus.has_collection(bad)

    name = unique_name("sparsebad")
    schema = MilvusClient.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("sv", DataType.SPARSE_FLOAT_VECTOR)
    schema.add_field("vec", DataType.FLOAT_VECTOR, dim=4)
    milvus.create_collection(name, schema=schema)
    for field, index_type, metric, params, message in [
        ("sv", "SPARSE_INVERTED_INDEX", "L2", {}, "metric type L2 not found or not supported, supported: [IP BM25]"),
        ("sv", "SPARSE_INVERTED_INDEX", "BM25", {}, "only BM25 Function output field support BM25 metric type"),
        ("sv", "HNSW", "IP", {}, "data type SparseFloatVector can't build with this index HNSW"),
        ("vec", "SPARSE_WAND", "IP", {}, "data type FloatVector can't build with this index SPARSE_WAND"),
        ("sv", "SPARSE_WAND", "IP", {"drop_ratio_build": 1.5}, "param 'drop_ratio_build' (1.5) should be in range"),
        ("sv", "SPARSE_INVERTED_INDEX", "IP", {"inverted_index_algo": "BMW"}, "sparse inverted index algo BMW"),
    ]:
        index = milvus.prepare_index_params()
        index.add_index(field, index_type=index_type, metric_type=metric, params=params)
        _refused(lambda index=index: milvus.create_index(name, index), 1100, message)
    assert milvus.list_indexes(name) == []
    index = milvus.prepare_index_params()
    index.add_index("sv", index_type="AUTOINDEX")
    index.add_index("vec", index_type="FLAT", metric_type="L2")
    milvus.create_index(name, index)
    desc = milvus.describe_index(name, "sv")
    assert desc["index_type"] == "AUTOINDEX" and desc["metric_type"] == "IP", desc
    milvus.load_collection(name)
    for value, message in [
        ({1: -0.5}, "negative value"),
        ({1: float("inf")}, "nan or +/-inf"),
        ([(3, 1.0), (3, 2.0)], "unsorted or same indices"),
    ]:
        _refused(lambda value=value: milvus.insert(name, [{"id": 1, "sv": value, "vec": [0.0] * 4}]), 1100, message)
    assert milvus.query(name, filter="id >= 0", consistency_level="Strong") == []
    milvus.insert(name, [{"id": 1, "sv": {2: 1.0}, "vec": [0.0] * 4}, {"id": 2, "sv": {}, "vec": [1.0] * 4}])
    _refused(lambda: milvus.search(name, data=[{2: 1.0}], anns_field="sv", search_params={"metric_type": "L2"}),
             1100, "metric type not match")
    _refused(lambda: milvus.search(name, data=[{2: 1.0}], anns_field="sv",
                                   search_params={"params": {"drop_ratio_search": 1.0}}),
             1100, "param 'drop_ratio_search' (1.0) should be in range [0.0, 1.0)")
    _refused(lambda: milvus.search(name, data=[{2: -1.0}], anns_field="sv"), 1100, "negative value")
    _refused(lambda: milvus.search(name, data=[[0.0] * 4], anns_field="sv"), 1100, "does not match the type")
    # An empty row is stored but never a hit.
    hits = milvus.search(name, data=[{2: 3.0}], anns_field="sv", limit=5, consistency_level="Strong")
    assert [(h["id"], h["distance"]) for h in hits[0]] == [(1, 3.0)]
    assert milvus.query(name, filter="id == 2", output_fields=["sv"], consistency_level="Strong")[0]["sv"] == {}
    milvus.drop_collection(name)
