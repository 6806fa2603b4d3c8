"""BINARY_VECTOR end to end through pymilvus against a real standalone.

Collections with binary fields beside a float one, each binary field with its
own index and metric (BIN_FLAT and BIN_IVF_FLAT with HAMMING and JACCARD,
AUTOINDEX, BIN_FLAT with SUBSTRUCTURE), over sealed and growing rows: searches
against a bit-by-bit numpy reference (distances exact), filters, range search,
group by, hybrid search, search_iterator, queries returning the codes
bit-exact, deletes, an upsert, a restart; and the bad combinations refused
with Milvus' code and message, nothing created.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pymilvus import AnnSearchRequest, DataType, MilvusClient, MilvusException, RRFRanker

from tests.harness import Standalone, dump_logs_on_failure
from tests.segcore.segments.binary_reference import random_codes, reference_distances, reference_topk

N, SEALED, DIM = 1200, 800, 128
BYTES = DIM // 8
# field -> (index_type, metric, build params); the metric None is AUTOINDEX's default (HAMMING).
BINS: dict[str, tuple[str, str | None, dict[str, int]]] = {
    "h_flat": ("BIN_FLAT", "HAMMING", {}),
    "j_flat": ("BIN_FLAT", "JACCARD", {}),
    "h_ivf": ("BIN_IVF_FLAT", "HAMMING", {"nlist": 8}),
    "auto": ("AUTOINDEX", None, {}),
}


def _bytes(value: Any) -> bytes:
    """A binary vector as pymilvus gives it: bytes in search hits, a one-element list in query rows."""
    return bytes(value[0] if isinstance(value, list) else value)


def _check_hits(hits: list[Any], metric: str, queries: np.ndarray, codes: np.ndarray, limit: int,
                allowed: np.ndarray | None = None) -> None:
    """Hits are the exact best ``limit`` (distances equal to the reference's, each hit at its own distance)."""
    want = reference_topk(metric, queries, codes, limit, allowed)
    dist = reference_distances(metric, queries, codes)
    for q, (got, expected) in enumerate(zip(hits, want, strict=True)):
        np.testing.assert_allclose([h["distance"] for h in got], [d for _, d in expected], rtol=1e-6)
        for h in got:
            assert h["distance"] == pytest.approx(dist[q, h["id"]], rel=1e-6)
            assert allowed is None or allowed[h["id"]]


def _create_bins(client: MilvusClient, codes: dict[str, np.ndarray]) -> None:
    schema = MilvusClient.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("tag", DataType.INT64)
    for field in BINS:
        schema.add_field(field, DataType.BINARY_VECTOR, dim=DIM)
    index = client.prepare_index_params()
    for field, (index_type, metric, params) in BINS.items():
        if metric is None:
            index.add_index(field, index_type=index_type)
        else:
            index.add_index(field, index_type=index_type, metric_type=metric, params=params)
    client.create_collection("bins", schema=schema, index_params=index, num_shards=2)
    rows = [{"id": i, "tag": i % 3, **{f: codes[f][i].tobytes() for f in BINS}} for i in range(N)]
    client.insert("bins", rows[:SEALED])
    client.flush("bins")
    client.insert("bins", rows[SEALED:])  # growing


def _search(client: MilvusClient, field: str, queries: np.ndarray, limit: int, **kw: Any) -> list[Any]:
    return client.search("bins", data=[q.tobytes() for q in queries], anns_field=field, limit=limit,
                         consistency_level="Strong", **kw)


def _check_bins(client: MilvusClient, codes: dict[str, np.ndarray], deleted: set[int]) -> None:
    alive = np.array([i not in deleted for i in range(N)])
    for field, (_, metric, _) in BINS.items():
        queries = np.concatenate([codes[field][[5, SEALED + 7]], random_codes(2, BYTES, seed=77)])
        # Every list probed: BIN_IVF_FLAT (and AUTOINDEX's) answers are exact then.
        params = {"params": {"nprobe": 1024}} if field in ("h_ivf", "auto") else {}
        hits = _search(client, field, queries, 5, search_params=params, output_fields=[field])
        _check_hits(hits, metric or "HAMMING", queries, codes[field], 5, alive)
        assert all(_bytes(h["entity"][field]) == codes[field][h["id"]].tobytes() for q in hits for h in q)
    # A filter and MVCC together: only tag 1, never a deleted row.
    queries = codes["j_flat"][[1, 4, 1000]]
    hits = _search(client, "j_flat", queries, 8, filter="tag == 1")
    _check_hits(hits, "JACCARD", queries, codes["j_flat"], 8, alive & (np.arange(N) % 3 == 1))


@pytest.mark.timeout(240)
def test_binary_vectors_end_to_end(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    codes = {f: np.packbits(rng.random((N, DIM)) < 0.4, axis=1) for f in BINS}
    s = Standalone(tmp_path / "data")
    s.start()
    try:
        with dump_logs_on_failure(s):
            client = MilvusClient(s.uri)
            _create_bins(client, codes)
            desc = client.describe_index("bins", "auto")
            assert desc["index_type"] == "AUTOINDEX" and desc["metric_type"] == "HAMMING", desc
            _check_bins(client, codes, set())

            # Range search, Milvus' semantics for HAMMING: range_filter <= d < radius.
            queries = codes["h_flat"][[10, 900]]
            hits = _search(client, "h_flat", queries, 50, search_params={"params": {"radius": 56, "range_filter": 50}})
            dist = reference_distances("HAMMING", queries, codes["h_flat"])
            for q, got in enumerate(hits):
                in_range = int(((dist[q] >= 50) & (dist[q] < 56)).sum())
                assert len(got) == min(50, in_range) > 0
                assert all(50 <= h["distance"] < 56 for h in got)

            # Group by a scalar and hybrid search fuse binary hits as they fuse float ones.
            grouped = _search(client, "h_flat", codes["h_flat"][[2]], 3, group_by_field="tag", output_fields=["tag"])
            assert sorted(h["entity"]["tag"] for h in grouped[0]) == [0, 1, 2]
            assert grouped[0][0]["id"] == 2 and grouped[0][0]["distance"] == 0.0
            requests = [
                AnnSearchRequest([codes["h_flat"][9].tobytes()], "h_flat", {"metric_type": "HAMMING"}, limit=5),
                AnnSearchRequest([codes["j_flat"][9].tobytes()], "j_flat", {"metric_type": "JACCARD"}, limit=5),
            ]
            fused = client.hybrid_search("bins", requests, RRFRanker(), limit=3, consistency_level="Strong")
            assert fused[0][0]["id"] == 9

            # search_iterator pages through the same ranking (pymilvus' v1 iterator: range searches).
            iterator = client.search_iterator("bins", data=[codes["h_flat"][21].tobytes()], anns_field="h_flat",
                                              batch_size=40, limit=100, consistency_level="Strong")
            paged: list[Any] = []
            while page := iterator.next():
                paged.extend(page)
            iterator.close()
            best = [d for _, d in reference_topk("HAMMING", codes["h_flat"][[21]], codes["h_flat"], 100)[0]]
            assert len({h["id"] for h in paged}) == 100 and [h["distance"] for h in paged] == best

            # Queries return the codes bit-exact, from sealed and growing rows.
            got = client.query("bins", filter="id in [3, 799, 800, 1199]", output_fields=list(BINS),
                               consistency_level="Strong")
            assert sorted(r["id"] for r in got) == [3, 799, 800, 1199]
            assert all(_bytes(r[f]) == codes[f][r["id"]].tobytes() for r in got for f in BINS)

            deleted = set(range(0, 60, 2)) | {SEALED + 7}
            client.delete("bins", ids=sorted(deleted))
            hits = _search(client, "h_flat", codes["h_flat"][[4, 5, SEALED + 7]], 1)  # 4 and SEALED + 7 deleted
            assert hits[0][0]["id"] != 4 and hits[1][0]["id"] == 5 and hits[2][0]["id"] != SEALED + 7
            # An upsert replaces a row's codes (delete + insert at one timestamp).
            fresh = {f: np.bitwise_not(codes[f][11]) for f in BINS}
            client.upsert("bins", [{"id": 11, "tag": 11 % 3, **{f: fresh[f].tobytes() for f in BINS}}])
            for f in BINS:
                codes[f][11] = fresh[f]
            got = client.query("bins", filter="id == 11", output_fields=list(BINS), consistency_level="Strong")
            assert [_bytes(got[0][f]) for f in BINS] == [fresh[f].tobytes() for f in BINS]
            client.flush("bins")
            _check_bins(client, codes, deleted)
            client.close()
        assert s.stop() == 0
        s.start()
        with dump_logs_on_failure(s):
            client = MilvusClient(s.uri)
            client.load_collection("bins", timeout=120)
            _check_bins(client, codes, deleted)
            got = client.query("bins", filter="id < 6", output_fields=["h_ivf"], consistency_level="Strong")
            assert {r["id"]: _bytes(r["h_ivf"]) for r in got} == {i: codes["h_ivf"][i].tobytes() for i in (1, 3, 5)}
            client.close()
    finally:
        s.stop()


def test_substructure_and_a_float_field_beside_binary_ones(milvus: MilvusClient) -> None:
    from tests.e2e.util import unique_name

    name = unique_name("structs")
    schema = MilvusClient.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("vec", DataType.FLOAT_VECTOR, dim=4)
    schema.add_field("sub", DataType.BINARY_VECTOR, dim=16)
    schema.add_field("jac", DataType.BINARY_VECTOR, dim=16)
    index = milvus.prepare_index_params()
    index.add_index("vec", index_type="FLAT", metric_type="L2")
    index.add_index("sub", index_type="BIN_FLAT", metric_type="SUBSTRUCTURE")
    index.add_index("jac", index_type="BIN_IVF_FLAT", metric_type="JACCARD", params={"nlist": 2})
    milvus.create_collection(name, schema=schema, index_params=index)
    codes = random_codes(200, 2, seed=8, density=0.25)
    vecs = np.random.default_rng(8).standard_normal((200, 4)).astype(np.float32)
    milvus.insert(name, [{"id": i, "vec": vecs[i].tolist(), "sub": codes[i].tobytes(), "jac": codes[i].tobytes()}
                         for i in range(200)])
    query = np.packbits(np.eye(16, dtype=bool)[[2, 9]].any(0))[None, :]  # two bits: rows holding both match
    hits = milvus.search(name, data=[query[0].tobytes()], anns_field="sub", limit=100, consistency_level="Strong")
    expected = [r for r, _ in reference_topk("SUBSTRUCTURE", query, codes, 100)[0]]
    assert expected and [h["id"] for h in hits[0]] == expected and {h["distance"] for h in hits[0]} == {0.0}
    hits = milvus.search(name, data=[vecs[17].tolist()], anns_field="vec", limit=1, consistency_level="Strong")
    assert hits[0][0]["id"] == 17
    hits = milvus.search(name, data=[codes[17].tobytes()], anns_field="jac", limit=3, consistency_level="Strong",
                         search_params={"params": {"nprobe": 2}})
    _check_hits(hits, "JACCARD", codes[[17]], codes, 3)
    milvus.drop_collection(name)


def _refused(call: Any, code: int, message: str) -> None:
    with pytest.raises(MilvusException) as err:
        call()
    assert err.value.code == code and message in err.value.message, (err.value.code, err.value.message)


def test_bad_combinations_are_refused_and_nothing_is_created(milvus: MilvusClient) -> None:
    from tests.e2e.util import unique_name

    bad_dim = unique_name("baddim")
    schema = MilvusClient.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("bits", DataType.BINARY_VECTOR, dim=12)
    _refused(lambda: milvus.create_collection(bad_dim, schema=schema), 1100,
             "invalid dimension: 12 of field bits. binary vector dimension should be multiple of 8.")
    assert not milvus.has_collection(bad_dim)

    name = unique_name("combos")
    schema = MilvusClient.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("bits", DataType.BINARY_VECTOR, dim=32)
    schema.add_field("vec", DataType.FLOAT_VECTOR, dim=4)
    milvus.create_collection(name, schema=schema)
    for field, index_type, metric, message in [
        ("bits", "BIN_FLAT", "L2", "binary vector index does not support metric type: L2"),
        ("bits", "AUTOINDEX", "COSINE", "binary vector index does not support metric type: COSINE"),
        ("vec", "HNSW", "HAMMING", "float vector index does not support metric type: HAMMING"),
        ("vec", "AUTOINDEX", "JACCARD", "float vector index does not support metric type: JACCARD"),
        ("bits", "HNSW", "HAMMING", "data type BinaryVector can't build with this index HNSW"),
        ("vec", "BIN_IVF_FLAT", "L2", "data type FloatVector can't build with this index BIN_IVF_FLAT"),
        ("bits", "BIN_IVF_FLAT", "SUBSTRUCTURE", "metric type SUBSTRUCTURE not found or not supported"),
    ]:
        index = milvus.prepare_index_params()
        index.add_index(field, index_type=index_type, metric_type=metric)
        _refused(lambda index=index: milvus.create_index(name, index), 1100, message)
    assert milvus.list_indexes(name) == []
    index = milvus.prepare_index_params()
    index.add_index("bits", index_type="BIN_FLAT", metric_type="JACCARD")
    index.add_index("vec", index_type="FLAT", metric_type="L2")
    milvus.create_index(name, index)
    milvus.load_collection(name)
    milvus.insert(name, [{"id": 1, "bits": b"\x0f\x00\x00\x01", "vec": [0.0, 0.0, 0.0, 1.0]}])
    _refused(lambda: milvus.search(name, data=[b"\x0f\x00\x00\x01"], anns_field="bits",
                                   search_params={"metric_type": "HAMMING"}), 1100, "metric type not match")
    _refused(lambda: milvus.search(name, data=[b"\x0f\x00"], anns_field="bits"), 1100,
             "the dim (16) of search data is not equal to schema dim (32)")
    _refused(lambda: milvus.insert(name, [{"id": 2, "bits": b"\x00\x00", "vec": [0.0] * 4}]), 1100, "bits")
    hits = milvus.search(name, data=[b"\x0f\x00\x00\x03"], anns_field="bits", limit=2, consistency_level="Strong")
    assert [(h["id"], h["distance"]) for h in hits[0]] == [(1, pytest.approx(1 / 6))]  # 5 shared of 6 bits
    milvus.drop_collection(name)
