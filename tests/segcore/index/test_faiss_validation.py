"""The faiss kinds' build and search parameters: Milvus' names, defaults, ranges and messages."""

from __future__ import annotations

import pytest

from common.errors import InvalidArgument
from segcore.index.base import SearchParams
from segcore.index.factory import IndexSpec, build_index
from segcore.index.faiss_params import FaissParams
from segcore.index.spec import IndexKind
from segcore.segments.metric import Metric
from tests.segcore.index.reference import gaussian


@pytest.mark.parametrize(
    ("index_type", "params", "message"),
    [
        ("IVF_FLAT", {"nlist": 0}, r"nlist must be in \[1, 65536\], got 0"),
        ("IVF_SQ8", {"nlist": 65537}, r"nlist must be in \[1, 65536\], got 65537"),
        ("IVF_FLAT", {"nlist": "many"}, "nlist must be an integer, got 'many'"),
        ("IVF_PQ", {"nlist": 16}, "m is required, got nothing"),
        ("IVF_PQ", {"m": 0}, r"m must be in \[1, 65536\], got 0"),
        ("IVF_PQ", {"m": 8, "nbits": 25}, r"nbits must be in \[1, 24\], got 25"),
        ("IVF_PQ", {"m": 8, "nbits": 0}, r"nbits must be in \[1, 24\], got 0"),
        ("IVF_RABITQ", {"refine": "yes"}, "refine must be true or false, got 'yes'"),
        ("IVF_RABITQ", {"refine": True, "refine_type": "SQ4"}, "refine_type must be one of SQ6, SQ8, FP16, BF16, FP32"),
        ("IVF_RABITQ", {"refine_type": 8}, "refine_type must be one of"),  # checked even when refine is off
        ("SCANN", {"with_raw_data": "maybe"}, "with_raw_data must be true or false"),
        ("SCANN", {"sub_dim": 0}, r"sub_dim must be in \[1, 65536\], got 0"),
        ("HNSW_SQ", {"M": 1}, r"M must be in \[2, 2048\], got 1"),
        ("HNSW_SQ", {"efConstruction": 0}, r"efConstruction must be in \[1, 2147483647\], got 0"),
        ("HNSW_SQ", {"sq_type": "SQ4"}, "sq_type must be one of SQ6, SQ8, FP16, BF16, got 'SQ4'"),
        ("HNSW_SQ", {"sq_type": "FP32"}, "sq_type must be one of"),
        ("HNSW_PQ", {"nbits": 17}, r"nbits must be in \[1, 16\], got 17"),
        ("HNSW_PRQ", {"nrq": 0}, r"nrq must be in \[1, 16\], got 0"),
        ("HNSW_PRQ", {"nrq": 17}, r"nrq must be in \[1, 16\], got 17"),
        ("HNSW_PRQ", {"m": 2.5}, "m must be an integer, got 2.5"),
    ],
)
def test_bad_build_params_are_refused_naming_the_parameter(index_type: str, params: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidArgument, match=f"invalid index params: {message}"):
        IndexSpec(index_type=index_type, metric="L2", params=params)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("index_type", "params", "dim", "message"),
    [
        ("IVF_PQ", {"m": 7}, 128, r"multiple of the number of subquantizers \(m\)\. Dimension: 128, m: 7"),
        ("HNSW_PQ", {}, 100, r"Dimension: 100, m: 32"),  # the default m
        ("HNSW_PRQ", {"m": 3}, 128, r"multiple of the number of splits \(m\)\. Dimension: 128, m: 3"),
        ("SCANN", {}, 127, r"multiple of sub_dim\. Dimension: 127, sub_dim: 2"),
    ],
)
def test_m_and_sub_dim_must_divide_the_dimension(index_type: str, params: dict[str, object], dim: int, message: str) -> None:
    spec = IndexSpec(index_type=index_type, metric="L2", params=params)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match=f"invalid index params: {index_type}: .*{message}"):
        spec.check_dim(dim)
    with pytest.raises(InvalidArgument, match=message):
        build_index(spec, gaussian(50, dim, seed=1))


def test_fitting_dimensions_pass() -> None:
    IndexSpec(index_type="IVF_PQ", metric="L2", params={"m": 8}).check_dim(128)
    IndexSpec(index_type="SCANN", metric="L2", params={"sub_dim": 1}).check_dim(127)
    IndexSpec(index_type="HNSW", metric="L2").check_dim(3)  # no constraint


def test_defaults_are_milvus_and_names_are_case_insensitive() -> None:
    assert IndexSpec(index_type="ivf_flat", metric="cosine").canonical() == {
        "index_type": "IVF_FLAT", "metric": "COSINE", "params": {"nlist": 128}
    }
    assert IndexSpec(index_type="IVF_PQ", metric="L2", params={"m": "8"}).faiss == FaissParams(nlist=128, m=8, nbits=8)
    assert IndexSpec(index_type="SCANN", metric="IP").faiss == FaissParams(nlist=128, with_raw_data=True, sub_dim=2)
    assert IndexSpec(index_type="HNSW_SQ", metric="L2").faiss == FaissParams(
        graph_m=30, ef_construction=360, sq_type="SQ8"
    )
    assert IndexSpec(index_type="HNSW_PQ", metric="L2").faiss == FaissParams(
        graph_m=30, ef_construction=360, m=32, nbits=8
    )
    assert IndexSpec(index_type="HNSW_PRQ", metric="L2").faiss == FaissParams(
        graph_m=30, ef_construction=360, m=2, nrq=2, nbits=8
    )
    # refine: FP32 unless given; off by default; its type any case, FLAT an alias of FP32.
    assert IndexSpec(index_type="IVF_RABITQ", metric="L2", params={"refine": "true"}).faiss == FaissParams(
        nlist=128, refine_type="FP32"
    )
    spec = IndexSpec(index_type="HNSW_SQ", metric="L2", params={"refine": True, "refine_type": "flat", "sq_type": "fp16"})
    assert spec.faiss == FaissParams(graph_m=30, ef_construction=360, sq_type="FP16", refine_type="FP32")
    off = IndexSpec(index_type="HNSW_SQ", metric="L2", params={"refine": False, "refine_type": "SQ8"})
    assert off.faiss is not None and off.faiss.refine_type is None
    assert spec.canonical()["params"] == {"M": 30, "efConstruction": 360, "sq_type": "FP16", "refine_type": "FP32"}
    assert IndexSpec(index_type="SCANN", metric="L2", params={"with_raw_data": "False"}).canonical()["params"] == {
        "nlist": 128, "with_raw_data": False, "sub_dim": 2
    }


def test_every_faiss_kind_is_accepted_and_autoindex_stays_hnsw() -> None:
    for kind in (IndexKind.IVF_FLAT, IndexKind.IVF_SQ8, IndexKind.IVF_RABITQ, IndexKind.SCANN, IndexKind.HNSW_SQ):
        assert IndexSpec(index_type=kind.value, metric="L2").kind is kind
    assert IndexSpec(index_type="AUTOINDEX", metric="COSINE").kind is IndexKind.HNSW
    assert not IndexKind.HNSW.is_faiss and IndexKind.HNSW.is_graph and IndexKind.HNSW_PRQ.is_graph
    assert IndexKind.SCANN.is_faiss and not IndexKind.SCANN.is_graph


@pytest.mark.parametrize(
    ("params", "message"),
    [
        (SearchParams(nprobe=0), r"nprobe must be in \[1, 65536\], got 0"),
        (SearchParams(nprobe=65537), r"nprobe must be in \[1, 65536\], got 65537"),
        (SearchParams(reorder_k=0), r"reorder_k must be in \[1, 2147483647\], got 0"),
        (SearchParams(rbq_query_bits=9), r"rbq_query_bits must be in \[0, 8\], got 9"),
        (SearchParams(rbq_query_bits=-1), r"rbq_query_bits must be in \[0, 8\], got -1"),
        (SearchParams(refine_k=0.5), "refine_k must be at least 1, got 0.5"),
        (SearchParams(refine_k=float("inf")), "refine_k must be finite"),
        (SearchParams(nprobe=True), "nprobe must be an integer, got True"),  # type: ignore[arg-type]
    ],
)
def test_bad_search_params_are_refused(params: SearchParams, message: str) -> None:
    with pytest.raises(InvalidArgument, match=f"invalid search params: {message}"):
        params.validate(Metric.L2)
    index = build_index(IndexSpec(index_type="IVF_FLAT", metric="L2", params={"nlist": 4}), gaussian(500, 8, seed=2))
    with pytest.raises(InvalidArgument, match=message):
        index.search(gaussian(1, 8, seed=3), 5, params=params)

