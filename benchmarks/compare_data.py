"""The comparison's data sets: vectors, held-apart queries, a scalar ``tag`` per row, exact truths, cached.

Every set has an INT64 ``tag`` per row drawn uniformly from ``[0, 100)`` with
the set's seed, so ``tag < 10`` keeps ~10% of the rows and ``tag < 1`` ~1%
(the exact shares are reported). The truths (top ``k`` by exact L2, and the
top ``k`` among the rows each filter keeps) come from
``search_data.ground_truth`` and are cached on disk under a digest of the
vectors, queries and tags, so a rerun on the same data skips them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from compare_text import QUERIES as TEXT_QUERIES
from compare_text import SENTENCES as TEXT_SENTENCES
from compare_text import TextCache
from search_data import Dataset, ground_truth, make_dataset

KINDS = ("random", "clustered", "text")
TAG_VALUES = 100
#: (label, expression in Milvus syntax, largest tag kept): the two selectivities of issue #8.
FILTERS = (("10%", "tag < 10", 10), ("1%", "tag < 1", 1))


@dataclass(frozen=True, slots=True, kw_only=True)
class Filter:
    label: str  # "10%", "1%"
    expr: str  # the same expression for every server
    mask: np.ndarray  # (rows,) bool: the rows the expression keeps
    truth: np.ndarray  # (queries, k) int64: exact top k among them

    @property
    def share(self) -> float:
        return float(self.mask.mean())


@dataclass(frozen=True, slots=True, kw_only=True)
class CompareSet:
    """One data set as every system sees it; row ``i`` has primary key ``i``."""

    name: str
    vectors: np.ndarray  # (rows, dim) float32
    queries: np.ndarray  # (queries, dim) float32, none among the rows
    tags: np.ndarray  # (rows,) int64 in [0, TAG_VALUES)
    truth: np.ndarray  # (queries, k) int64
    filters: tuple[Filter, ...]

    @property
    def rows(self) -> int:
        return int(self.vectors.shape[0])

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])


def _digest(*arrays: np.ndarray) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(str((a.shape, a.dtype.str)).encode())
        h.update(np.ascontiguousarray(a).data)
    return h.hexdigest()[:20]


def _truths(vectors: np.ndarray, queries: np.ndarray, tags: np.ndarray, k: int, cache: Path) -> dict[str, np.ndarray]:
    """Unfiltered and filtered exact top ``k``, from the cache or computed (then cached)."""
    path = cache / f"truth-{_digest(vectors, queries, tags)}-k{k}.npz"
    if path.exists():
        with np.load(path) as z:
            return {name: z[name] for name in z.files}
    out = {"all": ground_truth(Dataset(vectors=vectors, queries=queries), k)}
    for label, _, below in FILTERS:
        keep = np.flatnonzero(tags < below)
        local = ground_truth(Dataset(vectors=vectors[keep], queries=queries), min(k, len(keep)))
        out[label] = keep[local]
    cache.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npz")
    with open(tmp, "wb") as f:
        np.savez(f, **out)  # type: ignore[arg-type]  # numpy's stub takes the first ** value for allow_pickle
    tmp.replace(path)
    return out


def load_set(
    kind: str,
    *,
    rows: int,
    dim: int,
    queries: int,
    seed: int,
    k: int,
    cache: Path,
    log: Callable[[str], None],
) -> CompareSet:
    """``random`` (every coordinate N(0, 1)), ``clustered`` (100 centres, spread 0.1) or ``text``
    (MiniLM, 384 dimensions: ``dim`` is ignored, ``rows`` at most 100,000, ``queries`` at most 1,000)."""
    if kind == "text":
        if rows > TEXT_SENTENCES - TEXT_QUERIES or queries > TEXT_QUERIES:
            raise ValueError(f"the text set has {TEXT_SENTENCES - TEXT_QUERIES:,} rows and {TEXT_QUERIES:,} queries")
        emb = TextCache(cache, seed).embeddings(TEXT_QUERIES + rows, log)
        vectors, qs = emb[TEXT_QUERIES:], emb[:queries]
    else:
        data = make_dataset("gaussian" if kind == "random" else kind, rows, dim, queries, seed)
        vectors, qs = data.vectors, data.queries
    tags = np.random.default_rng([seed, 8]).integers(0, TAG_VALUES, len(vectors), dtype=np.int64)
    truths = _truths(vectors, qs, tags, k, cache)
    filters = tuple(
        Filter(label=label, expr=expr, mask=tags < below, truth=truths[label]) for label, expr, below in FILTERS
    )
    return CompareSet(name=kind, vectors=vectors, queries=qs, tags=tags, truth=truths["all"], filters=filters)


def recall_at(found: list[list[int]], truth: np.ndarray) -> float:
    """Mean over queries of |found ∩ truth| / |truth row| (a filtered truth may hold fewer than k rows)."""
    k = truth.shape[1]
    hits = sum(len(set(f[:k]) & set(t.tolist())) for f, t in zip(found, truth, strict=True))
    return hits / truth.size
