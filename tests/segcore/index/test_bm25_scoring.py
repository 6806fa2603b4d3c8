"""The BM25 metric over stored term frequencies: every sparse index kind and algorithm gives the
exact search's hits and scores, which equal a per-pair numpy computation of knowhere's formula."""

from __future__ import annotations

import numpy as np
import pytest

from segcore.index.base import SearchParams
from segcore.index.factory import IndexSpec, build_index
from segcore.index.sparse_exact import SparseExactIndex
from segcore.index.sparse_inverted import BLOCK_ROWS
from segcore.segments.metric import Metric
from segcore.segments.sparse_rows import SparseRows, pad_queries, rows_from_pairs


def _tf_rows(rng: np.random.Generator, n: int, vocab: int) -> SparseRows:
    rows = []
    for _ in range(n):
        k = int(rng.integers(0, 12))
        idx = np.unique(rng.integers(0, vocab, size=k)).astype(np.uint32)
        rows.append((idx, rng.integers(1, 5, size=len(idx)).astype(np.float32)))
    return rows_from_pairs(rows)


@pytest.fixture(scope="module")
def data() -> tuple[SparseRows, SparseRows]:
    rng = np.random.default_rng(5)
    base = _tf_rows(rng, 2 * BLOCK_ROWS + 11, 300)  # more than a block: the DAAT walks skip blocks
    qrows = []
    for _ in range(10):
        idx = np.unique(rng.integers(0, 300, size=4)).astype(np.uint32)
        qrows.append((idx, rng.uniform(0.1, 3.0, size=len(idx)).astype(np.float32)))
    return base, rows_from_pairs(qrows)


PARAMS = SearchParams(bm25_k1=1.4, bm25_b=0.7, bm25_avgdl=9.5)


def _reference(base: SparseRows, queries: SparseRows, p: SearchParams) -> np.ndarray:
    """(nq, rows) float64 BM25 scores computed pair by pair."""
    k1, b, avgdl = p.bm25_k1, p.bm25_b, p.bm25_avgdl
    assert k1 is not None and b is not None and avgdl is not None
    out = np.zeros((len(queries), len(base)))
    for r in range(len(base)):
        idx, tf = base.row(r)
        dl = float(tf.sum())
        for q in range(len(queries)):
            qidx, w = queries.row(q)
            for i, t in zip(idx, tf, strict=True):
                hit = np.flatnonzero(qidx == i)
                if len(hit):
                    out[q, r] += float(w[hit[0]]) * t * (k1 + 1) / (t + k1 * (1 - b + b * dl / avgdl))
    return out


def test_exact_bm25_equals_the_formula(data: tuple[SparseRows, SparseRows]) -> None:
    base, queries = data
    found = SparseExactIndex(base, Metric.BM25).search(pad_queries(queries), 10, params=PARAMS)
    ref = _reference(base, queries, PARAMS)
    for q in range(len(queries)):
        rows = found.rows[q][found.rows[q] >= 0]
        assert len(rows) == min(10, int((ref[q] > 0).sum()))
        np.testing.assert_allclose(found.distances[q][: len(rows)], ref[q][rows], rtol=1e-5)
        assert found.distances[q][len(rows) - 1] >= np.sort(ref[q])[-10] * (1 - 1e-5)


@pytest.mark.parametrize("kind", ["SPARSE_INVERTED_INDEX", "SPARSE_WAND"])
@pytest.mark.parametrize("algo", ["TAAT_NAIVE", "DAAT_WAND", "DAAT_MAXSCORE"])
def test_every_index_equals_the_exact_bm25(data: tuple[SparseRows, SparseRows], kind: str, algo: str) -> None:
    base, queries = data
    padded = pad_queries(queries)
    spec = IndexSpec(index_type=kind, metric="BM25", params={"inverted_index_algo": algo}, sparse=True)
    index = build_index(spec, base)
    exact = SparseExactIndex(base, Metric.BM25)
    for params in (PARAMS, SearchParams(bm25_k1=1.2, bm25_b=0.75, bm25_avgdl=3.0)):  # a new avgdl rescored
        for topk in (1, 10, 50):
            want, got = exact.search(padded, topk, params=params), index.search(padded, topk, params=params)
            assert got.rows.tolist() == want.rows.tolist()
            np.testing.assert_allclose(got.distances, want.distances, rtol=1e-6)
