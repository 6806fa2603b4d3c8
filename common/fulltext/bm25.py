"""BM25 as Milvus computes it: term frequencies at insert, IDF and length normalisation at search.

* Insert (the BM25 function): each text is analyzed; each token becomes the
  index ``crc32(first 100 bytes of its UTF-8) % (2**32 - 1)`` (Milvus'
  ``HashString2LessUint32``) and the row's sparse vector holds, per index, the
  number of times it occurs (Milvus' packed ``(uint32, float32)`` pairs,
  indices ascending).
* Corpus statistics of a set of rows (:class:`Bm25Stats`): the number of rows
  ``N``, the number of tokens (the sum of every row's values) and, per index,
  the number of rows holding it (``df``). ``avgdl`` = tokens / rows.
* Search: the query text becomes term frequencies the same way; each is
  weighted by ``idf = ln(1 + (N - df + 0.5) / (df + 0.5))`` (Milvus'
  ``BM25Stats.BuildIDF``: ``qtf * idf``, float32); a row scores
  ``sum(weight * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl)))`` over the
  query's indices it holds, ``dl`` being the row's token count (knowhere's
  BM25 metric), float32 at the end.
"""

from __future__ import annotations

import zlib
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from common.fulltext.analyzer import Analyzer

DEFAULT_K1 = 1.2
DEFAULT_B = 0.75
_HASH_PREFIX = 100
_MAX_UINT32 = 2**32 - 1
_PAIR = np.dtype([("index", "<u4"), ("value", "<f4")])


def term_index(token: str) -> int:
    """The sparse index of a token (Milvus' ``HashString2LessUint32``)."""
    return zlib.crc32(token.encode()[:_HASH_PREFIX]) % _MAX_UINT32


def term_frequencies(analyzer: Analyzer, text: str) -> dict[int, int]:
    """Index -> occurrences of the tokens of ``text``."""
    return dict(Counter(term_index(t) for t in analyzer.terms(text)))


def pack_row(tf: dict[int, int]) -> bytes:
    """A sparse row in Milvus' packed form (indices ascending)."""
    out = np.empty(len(tf), dtype=_PAIR)
    if tf:
        keys = sorted(tf)
        out["index"] = keys
        out["value"] = [tf[k] for k in keys]
    return out.tobytes()


def embed(analyzer: Analyzer, texts: Iterable[str | None]) -> list[bytes]:
    """The BM25 function's output rows for ``texts`` (a null text gives an empty row)."""
    return [pack_row(term_frequencies(analyzer, t) if t else {}) for t in texts]


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Bm25Stats:
    """Corpus statistics of some rows: ``terms`` ascending (uint32), ``df`` rows holding each."""

    num_rows: int = 0
    num_tokens: float = 0.0
    terms: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.uint32))
    df: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))

    @staticmethod
    def of_rows(indptr: np.ndarray, indices: np.ndarray, values: np.ndarray) -> Bm25Stats:
        """The statistics of CSR rows (each row's indices distinct, as the BM25 function makes them)."""
        terms, df = np.unique(np.asarray(indices, dtype=np.uint32), return_counts=True)
        return Bm25Stats(num_rows=len(indptr) - 1, num_tokens=float(np.asarray(values, dtype=np.float64).sum()),
                         terms=terms, df=df.astype(np.int64))

    def merged(self, other: Bm25Stats) -> Bm25Stats:
        terms = np.concatenate([self.terms, other.terms])
        df = np.concatenate([self.df, other.df])
        uniq, inverse = np.unique(terms, return_inverse=True)
        return Bm25Stats(num_rows=self.num_rows + other.num_rows, num_tokens=self.num_tokens + other.num_tokens,
                         terms=uniq, df=np.bincount(inverse, weights=df, minlength=len(uniq)).astype(np.int64))

    def doc_freq(self, indices: np.ndarray) -> np.ndarray:
        """``df`` of each of ``indices`` (0 for an index no row holds)."""
        if len(self.terms) == 0:
            return np.zeros(len(indices), dtype=np.int64)
        pos = np.minimum(np.searchsorted(self.terms, indices), len(self.terms) - 1)
        return np.where(self.terms[pos] == indices, self.df[pos], 0)

    @property
    def avgdl(self) -> float:
        return self.num_tokens / self.num_rows if self.num_rows and self.num_tokens else 0.0


def combined(parts: Sequence[Bm25Stats]) -> CombinedStats:
    return CombinedStats(tuple(parts))


@dataclass(frozen=True, slots=True)
class CombinedStats:
    """The statistics of several disjoint row sets, summed lazily (per query term)."""

    parts: tuple[Bm25Stats, ...]

    @property
    def num_rows(self) -> int:
        return sum(p.num_rows for p in self.parts)

    @property
    def avgdl(self) -> float:
        rows = self.num_rows
        tokens = sum(p.num_tokens for p in self.parts)
        return tokens / rows if rows and tokens else 0.0

    def idf(self, indices: np.ndarray) -> np.ndarray:
        """float64 ``ln(1 + (N - df + 0.5) / (df + 0.5))`` per index."""
        df = np.zeros(len(indices), dtype=np.float64)
        for p in self.parts:
            df += p.doc_freq(indices)
        n = float(self.num_rows)
        return np.log(1.0 + (n - df + 0.5) / (df + 0.5))


def bm25_row_values(values: np.ndarray, doc_len: np.ndarray, *, k1: float, b: float, avgdl: float) -> np.ndarray:
    """Each stored term frequency turned into its BM25 term score (float32), given its row's length."""
    tf = values.astype(np.float32)
    avg = np.float32(max(avgdl, 1e-6))
    norm = np.float32(k1) * (np.float32(1.0 - b) + np.float32(b) * doc_len.astype(np.float32) / avg)
    out: np.ndarray = tf * np.float32(k1 + 1.0) / (tf + norm)
    return out
