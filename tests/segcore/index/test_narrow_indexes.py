"""Indexes over FLOAT16, BFLOAT16 and INT8 rows: built from the narrow matrix (no float32 copy of it kept by FLAT
or by the exact fallbacks), with recall within 0.02 of the same library (hnswlib, faiss) given the same float32
values, and the quantized kinds identical to our own build over those float32 values."""

from __future__ import annotations

from typing import Any

import faiss
import hnswlib
import ml_dtypes
import numpy as np
import pytest

from common.narrow_vectors import to_float32
from segcore.index.base import SearchParams
from segcore.index.factory import IndexSpec, build_index, restore_index
from segcore.index.options import IndexOptions
from segcore.segments.metric import Metric
from tests.segcore.index.reference import around, centres, recall, reference_topk

ROWS, DIM, NQ, K = 4000, 32, 100, 10
STRUCTURE_ONLY = IndexOptions(exact_min_rows=0, exact_sqrt_factor=0.0)
TYPES = ["float16", "bfloat16", "int8"]
pytestmark = pytest.mark.timeout(300)
FAISS: Any = faiss  # its stubs lack the keyword constructors of the search parameters


def _data(kind: str) -> tuple[np.ndarray, np.ndarray]:
    """Clustered rows stored as the server keeps them (bfloat16 as uint16 bits), and float32 queries."""
    middle = centres(40, DIM, seed=4)
    rows = around(middle, ROWS + NQ, spread=0.3, seed=5)
    if kind == "int8":
        narrow = np.clip(np.round(rows * 40), -128, 127).astype(np.int8)
    elif kind == "float16":
        narrow = rows.astype(np.float16)
    else:
        narrow = rows.astype(ml_dtypes.bfloat16).view(np.uint16)
    return np.ascontiguousarray(narrow[:ROWS]), to_float32(narrow[ROWS:])


@pytest.mark.parametrize("kind", TYPES)
@pytest.mark.parametrize("metric", [Metric.L2, Metric.IP, Metric.COSINE], ids=lambda m: m.value)
def test_flat_is_exact_over_the_narrow_rows_it_keeps(kind: str, metric: Metric) -> None:
    base, queries = _data(kind)
    index: Any = build_index(IndexSpec(index_type="FLAT", metric=metric.value), base)
    assert index.vectors.dtype == base.dtype and np.shares_memory(index.vectors, base)
    got = index.search(queries, K)
    rows, dist = reference_topk(metric, queries, to_float32(base), K)
    assert recall(got.rows, rows) == 1.0
    np.testing.assert_allclose(got.distances, dist, rtol=1e-4, atol=1e-3 * np.abs(dist).max())
    ranged = index.search(queries, K, params=SearchParams(radius=float(np.median(dist[:, -1]))))
    assert (ranged.rows >= 0).sum() > 0


def _hnswlib(metric: Metric, values: np.ndarray, queries: np.ndarray) -> np.ndarray:
    space = {Metric.L2: "l2", Metric.IP: "ip", Metric.COSINE: "cosine"}[metric]
    graph = hnswlib.Index(space=space, dim=DIM)
    graph.init_index(max_elements=len(values), M=16, ef_construction=100, random_seed=100)
    graph.add_items(values, np.arange(len(values)))
    graph.set_ef(32)
    labels, _ = graph.knn_query(queries, k=K)
    return labels.astype(np.int64)


def _faiss_ivf_flat(metric: Metric, values: np.ndarray, queries: np.ndarray) -> np.ndarray:
    mt = faiss.METRIC_L2 if metric is Metric.L2 else faiss.METRIC_INNER_PRODUCT
    base, q = values.copy(), queries.copy()
    if metric is Metric.COSINE:
        faiss.normalize_L2(base)
        faiss.normalize_L2(q)
    quantizer = faiss.IndexFlat(DIM, mt)
    index = faiss.IndexIVFFlat(quantizer, DIM, 32, mt)
    index.train(base)
    index.add(base)
    _, labels = index.search(q, K, params=FAISS.SearchParametersIVF(nprobe=4))
    return labels.astype(np.int64)


@pytest.mark.parametrize("kind", TYPES)
@pytest.mark.parametrize("metric", [Metric.L2, Metric.IP, Metric.COSINE], ids=lambda m: m.value)
def test_hnsw_and_ivf_flat_recall_matches_the_library_on_the_same_float32_values(kind: str, metric: Metric) -> None:
    base, queries = _data(kind)
    values = to_float32(base)
    truth, _ = reference_topk(metric, queries, values, K)
    hnsw = build_index(IndexSpec(index_type="HNSW", metric=metric.value, params={"M": 16, "efConstruction": 100}),
                       base, options=STRUCTURE_ONLY)
    ours = recall(hnsw.search(queries, K, params=SearchParams(ef=32)).rows, truth)
    assert ours >= recall(_hnswlib(metric, values, queries), truth) - 0.02
    restored = restore_index(hnsw_spec := IndexSpec(index_type="HNSW", metric=metric.value,
                                                    params={"M": 16, "efConstruction": 100}),
                             base, hnsw.serialize(), options=STRUCTURE_ONLY)
    assert restored.kind is hnsw_spec.kind and restored.num_rows == ROWS
    ivf = build_index(IndexSpec(index_type="IVF_FLAT", metric=metric.value, params={"nlist": 32}), base,
                      options=STRUCTURE_ONLY)
    ours = recall(ivf.search(queries, K, params=SearchParams(nprobe=4)).rows, truth)
    assert abs(ours - recall(_faiss_ivf_flat(metric, values, queries), truth)) <= 0.02


@pytest.mark.parametrize("kind", TYPES)
@pytest.mark.parametrize(
    ("index_type", "params", "search"),
    [
        ("IVF_SQ8", {"nlist": 32}, SearchParams(nprobe=4)),
        ("IVF_PQ", {"nlist": 32, "m": 8, "nbits": 8}, SearchParams(nprobe=4)),
        ("HNSW_SQ", {"M": 16, "efConstruction": 100, "sq_type": "SQ8"}, SearchParams(ef=32)),
        ("SCANN", {"nlist": 32, "with_raw_data": True}, SearchParams(nprobe=4, reorder_k=40)),
    ],
)
def test_the_quantized_kinds_build_what_float32_values_build(
    kind: str, index_type: str, params: dict[str, Any], search: SearchParams
) -> None:
    base, queries = _data(kind)
    spec = IndexSpec(index_type=index_type, metric="L2", params=params)
    narrow = build_index(spec, base, options=STRUCTURE_ONLY).search(queries, K, params=search)
    wide = build_index(spec, to_float32(base), options=STRUCTURE_ONLY).search(queries, K, params=search)
    np.testing.assert_array_equal(narrow.rows, wide.rows)
    np.testing.assert_allclose(narrow.distances, wide.distances, rtol=1e-5, atol=1e-5)
    truth, _ = reference_topk(Metric.L2, queries, to_float32(base), K)
    assert recall(narrow.rows, truth) > 0.5
