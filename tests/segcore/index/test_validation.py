"""Index definitions and search arguments are validated like Milvus, errors naming the parameter."""

from __future__ import annotations

import math

import numpy as np
import pytest

from common.errors import InvalidArgument
from segcore.index.base import SearchParams
from segcore.index.factory import IndexSpec, build_index
from segcore.index.spec import HnswParams, IndexKind
from segcore.segments.metric import Metric
from tests.segcore.index.reference import gaussian


@pytest.mark.parametrize(
    ("index_type", "params", "message"),
    [
        (
            "NO_SUCH_INDEX",
            {},
            "index_type must be one of FLAT, HNSW, AUTOINDEX, BIN_FLAT, BIN_IVF_FLAT, IVF_FLAT, .*, got 'NO_SUCH_INDEX'",
        ),
        ("", {}, "index_type must be one of"),
        ("HNSW", {"M": 0}, r"M must be in \[2, 2048\], got 0"),
        ("HNSW", {"M": 1}, r"M must be in \[2, 2048\], got 1"),
        ("HNSW", {"M": 2049}, r"M must be in \[2, 2048\], got 2049"),
        ("HNSW", {"M": "x"}, "M must be an integer, got 'x'"),
        ("HNSW", {"M": 16.5}, "M must be an integer, got 16.5"),
        ("HNSW", {"M": True}, "M must be an integer, got True"),
        ("HNSW", {"M": ""}, "M must be an integer"),
        ("HNSW", {"efConstruction": 0}, r"efConstruction must be in \[1, 2147483647\], got 0"),
        ("HNSW", {"efConstruction": "-5"}, "efConstruction must be in"),
        ("HNSW", {"efConstruction": 2**31}, "efConstruction must be in"),
    ],
)
def test_bad_index_params_are_refused(index_type: str, params: dict[str, str | int | float], message: str) -> None:
    with pytest.raises(InvalidArgument, match=f"invalid index params: {message}"):
        IndexSpec(index_type=index_type, metric="L2", params=params)


@pytest.mark.parametrize(
    ("metric", "message"),
    [
        ("", "metric_type is missing"),
        ("HAMMING", "float vector index does not support metric type: HAMMING"),
        ("NOPE", "float vector index does not support metric type: NOPE"),
    ],
)
def test_a_missing_or_unknown_metric_is_refused(metric: str, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        IndexSpec(index_type="FLAT", metric=metric)


def test_names_are_case_insensitive_and_numbers_may_be_strings() -> None:
    spec = IndexSpec(index_type="hnsw", metric="cosine", params={"M": "32", "efConstruction": " 64 ", "other": "x"})
    assert spec.kind is IndexKind.HNSW and spec.metric_type is Metric.COSINE
    assert spec.hnsw == HnswParams(m=32, ef_construction=64)
    assert IndexSpec(index_type="HNSW", metric="L2", params={"M": 8.0}).hnsw.m == 8
    assert spec.canonical() == {"index_type": "HNSW", "metric": "COSINE", "params": {"M": 32, "efConstruction": 64}}


def test_autoindex_is_hnsw_with_the_defaults() -> None:
    spec = IndexSpec(index_type="AUTOINDEX", metric="IP", params={"M": 64})
    assert spec.kind is IndexKind.HNSW
    assert spec.hnsw == HnswParams(m=16, ef_construction=200)
    assert spec.canonical() == IndexSpec(index_type="HNSW", metric="IP").canonical()
    assert build_index(spec, gaussian(10, 4, seed=1)).kind is IndexKind.HNSW


def test_flat_ignores_build_params() -> None:
    spec = IndexSpec(index_type="FLAT", metric="L2", params={"M": 0})
    assert spec.canonical() == {"index_type": "FLAT", "metric": "L2", "params": {}}


@pytest.mark.parametrize("kind", ["FLAT", "HNSW"])
@pytest.mark.parametrize(
    ("metric", "params", "message"),
    [
        ("L2", SearchParams(ef=0), r"ef must be in \[1, 32768\], got 0"),
        ("L2", SearchParams(ef=40_000), r"ef must be in \[1, 32768\]"),
        ("L2", SearchParams(radius=1.0, range_filter=1.0), "range_filter must be less than radius for L2"),
        ("L2", SearchParams(radius=1.0, range_filter=2.0), "range_filter must be less than radius"),
        ("IP", SearchParams(radius=1.0, range_filter=0.5), "range_filter must be greater than radius for IP"),
        ("COSINE", SearchParams(radius=0.5, range_filter=0.5), "range_filter must be greater than radius"),
        ("L2", SearchParams(radius=math.nan), "radius must be finite"),
        ("IP", SearchParams(radius=0.0, range_filter=math.inf), "range_filter must be finite"),
    ],
)
def test_bad_search_params_are_refused(kind: str, metric: str, params: SearchParams, message: str) -> None:
    vectors = gaussian(20, 4, seed=2)
    index = build_index(IndexSpec(index_type=kind, metric=metric), vectors)
    with pytest.raises(InvalidArgument, match=f"invalid search params: {message}"):
        index.search(vectors[:1], 5, params=params)


@pytest.mark.parametrize("kind", ["FLAT", "HNSW"])
def test_bad_search_arguments_are_refused(kind: str) -> None:
    vectors = gaussian(20, 4, seed=3)
    index = build_index(IndexSpec(index_type=kind, metric="L2"), vectors)
    with pytest.raises(InvalidArgument, match="dimension 4"):
        index.search(gaussian(1, 5, seed=4), 5)
    with pytest.raises(InvalidArgument, match="topk must be a positive integer"):
        index.search(vectors[:1], 0)
    with pytest.raises(ValueError, match="one bool per row"):
        index.search(vectors[:1], 5, allowed=np.ones(19, dtype=bool))


def test_range_filter_without_radius_is_a_plain_search() -> None:
    vectors = gaussian(20, 4, seed=5)
    index = build_index(IndexSpec(index_type="FLAT", metric="L2"), vectors)
    plain = index.search(vectors[:2], 5)
    filtered = index.search(vectors[:2], 5, params=SearchParams(range_filter=1e9))
    np.testing.assert_array_equal(plain.rows, filtered.rows)
