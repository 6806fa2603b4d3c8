"""What ``vs_milvus.py`` measures: the data sets (float and binary) and the index types Milvus 2.3.5 also has.

Float sets come from ``compare_data.load_set`` (random, clustered, the MiniLM
text set; cached truths), L2, recall@10 by ids against the exact top 10.
Binary sets are packed bits, HAMMING; with thousands of rows at the same
Hamming distance the top 10 by id is arbitrary, so recall@10 there is the
share of returned rows whose distance is within the exact 10th distance
(``faiss.IndexBinaryFlat`` gives it); the distances are recomputed here from
the returned ids, not taken from the server.

Index parameters are the same on both servers (Milvus 2.3.5's names): IVF
``nlist`` (default 4·√rows rounded to a power of two), IVF_PQ ``m`` = dim/4
(4 dimensions per 8-bit code), HNSW ``M`` 16 ``efConstruction`` 200, SCANN
``reorder_k`` 100 while ``nprobe`` is swept, DISKANN with the servers' default
build parameters (none given).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import faiss
import numpy as np
from compare_data import load_set, recall_at

K = 10
NPROBES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
EFS = (10, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024)


@dataclass(frozen=True, slots=True, kw_only=True)
class Workload:
    """One data set as both servers get it; row ``i`` has primary key ``i``."""

    name: str
    binary: bool
    vectors: np.ndarray  # float32 (rows, dim), or uint8 (rows, bits / 8) packed bits
    queries: np.ndarray
    dim: int  # the schema's dim: floats, or bits
    recall: Callable[[list[list[int]]], float]

    @property
    def rows(self) -> int:
        return int(self.vectors.shape[0])

    @property
    def metric(self) -> str:
        return "HAMMING" if self.binary else "L2"

    def row(self, i: int) -> Any:
        return self.vectors[i].tobytes() if self.binary else self.vectors[i]

    def query_batch(self, q: np.ndarray) -> list[Any]:
        # Lists built inside the timed call, as compare_targets does (pymilvus packs lists fastest).
        return [bytes(v) for v in q] if self.binary else q.tolist()


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexCase:
    index_type: str
    binary: bool
    build: dict[str, Any] = field(default_factory=dict)
    sweep: str | None = None  # the search parameter swept; None: nothing to tune (FLAT)
    values: tuple[int, ...] = ()
    fixed: dict[str, Any] = field(default_factory=dict)

    def search_params(self, value: int | None) -> dict[str, Any]:
        return {**self.fixed, **({} if self.sweep is None or value is None else {self.sweep: value})}


def default_nlist(rows: int) -> int:
    return int(2 ** round(math.log2(4 * math.sqrt(rows))))


def cases(dim: int, nlist: int, binary: bool) -> list[IndexCase]:
    """The index types of Milvus 2.3.5 for float (``dim`` floats) or binary vectors."""
    probes = tuple(p for p in NPROBES if p <= nlist)
    if binary:
        return [
            IndexCase(index_type="BIN_FLAT", binary=True),
            IndexCase(index_type="BIN_IVF_FLAT", binary=True, build={"nlist": nlist}, sweep="nprobe", values=probes),
        ]
    return [
        IndexCase(index_type="FLAT", binary=False),
        IndexCase(index_type="IVF_FLAT", binary=False, build={"nlist": nlist}, sweep="nprobe", values=probes),
        IndexCase(index_type="IVF_SQ8", binary=False, build={"nlist": nlist}, sweep="nprobe", values=probes),
        IndexCase(
            index_type="IVF_PQ", binary=False, build={"nlist": nlist, "m": dim // 4, "nbits": 8},
            sweep="nprobe", values=probes,
        ),
        IndexCase(
            index_type="HNSW", binary=False, build={"M": 16, "efConstruction": 200}, sweep="ef", values=EFS
        ),
        IndexCase(
            index_type="SCANN", binary=False, build={"nlist": nlist},  # with_raw_data: true by default
            sweep="nprobe", values=probes, fixed={"reorder_k": 100},
        ),
        IndexCase(index_type="DISKANN", binary=False, sweep="search_list", values=EFS),
    ]  # fmt: skip


def float_workload(kind: str, *, rows: int, dim: int, queries: int, seed: int, cache: Path,
                   log: Callable[[str], None]) -> Workload:  # fmt: skip
    """``random``, ``clustered`` or ``text`` (MiniLM, 384 dims) from ``compare_data``."""
    data = load_set(kind, rows=rows, dim=dim, queries=queries, seed=seed, k=K, cache=cache, log=log)
    truth = data.truth
    return Workload(
        name="MiniLM" if kind == "text" else kind,
        binary=False,
        vectors=data.vectors,
        queries=data.queries,
        dim=data.dim,
        recall=lambda found: recall_at(found, truth),
    )


def binary_workload(kind: str, *, rows: int, bits: int, queries: int, seed: int) -> Workload:
    """``random`` bits, or ``clustered``: 1,000 random centres, each bit flipped with probability 0.1."""
    rng = np.random.default_rng([seed, 26])
    if kind == "random":
        draw = lambda n: rng.random((n, bits)) < 0.5  # noqa: E731
    else:
        centres = rng.random((1000, bits)) < 0.5
        draw = lambda n: centres[rng.integers(0, 1000, n)] ^ (rng.random((n, bits)) < 0.1)  # noqa: E731
    vectors, qs = np.packbits(draw(rows), axis=1), np.packbits(draw(queries), axis=1)
    exact = faiss.IndexBinaryFlat(bits)
    exact.add(vectors)
    kth = exact.search(qs, K)[0][:, K - 1]
    words, qwords = vectors.view(np.uint64), qs.view(np.uint64)

    def recall(found: list[list[int]]) -> float:
        hits = 0
        for n, ids in enumerate(found):
            got = np.asarray(ids[:K], dtype=np.int64)
            dist = np.bitwise_count(words[got] ^ qwords[n]).sum(axis=1)
            hits += int((dist <= kth[n]).sum())
        return hits / (K * len(found))

    return Workload(name=f"binary {kind}", binary=True, vectors=vectors, queries=qs, dim=bits, recall=recall)
