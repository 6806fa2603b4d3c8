"""The BM25 metric over stored term frequencies (knowhere's, as Milvus' full-text search uses it).

A BM25 function's output rows hold term frequencies; a query holds
``qtf * idf`` weights that the delegator computed from the corpus statistics
(``querynode/delegator/bm25_oracle.py``), and the search parameters carry
``bm25_k1``, ``bm25_b`` and the corpus' ``bm25_avgdl``. A row scores the sum,
over the query's terms it holds, of ``weight * tf * (k1 + 1) / (tf + k1 * (1 - b
+ b * dl / avgdl))`` (``dl``: the row's token count). The stored frequencies
are turned into those term scores here, per search (cached for the last
``(k1, b, avgdl)``), so the IP machinery (exact search, posting lists) then
gives BM25 scores.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from common.fulltext.bm25 import DEFAULT_B, DEFAULT_K1, bm25_row_values
from segcore.index.base import SearchParams
from segcore.segments.sparse_rows import SparseRows


@dataclass(frozen=True, slots=True)
class Bm25Setting:
    k1: float
    b: float
    avgdl: float

    @staticmethod
    def of(params: SearchParams) -> Bm25Setting:
        return Bm25Setting(
            k1=DEFAULT_K1 if params.bm25_k1 is None else float(params.bm25_k1),
            b=DEFAULT_B if params.bm25_b is None else float(params.bm25_b),
            avgdl=1.0 if params.bm25_avgdl is None else float(params.bm25_avgdl),
        )


def doc_lengths(rows: SparseRows) -> np.ndarray:
    """Each row's token count (the sum of its term frequencies), float64."""
    return np.bincount(rows.row_ids(), weights=rows.values.astype(np.float64), minlength=len(rows))


def scored_values(values: np.ndarray, row_of: np.ndarray, dl: np.ndarray, s: Bm25Setting) -> np.ndarray:
    """Term frequencies (of rows ``row_of``) as BM25 term scores, float32."""
    return bm25_row_values(values, dl[row_of], k1=s.k1, b=s.b, avgdl=s.avgdl)


class ScoredRows:
    """A segment's term-frequency rows and, for the last setting asked, the same rows as BM25 term scores."""

    def __init__(self, rows: SparseRows) -> None:
        self._rows = rows
        self._dl = doc_lengths(rows)
        self._last: tuple[Bm25Setting, SparseRows] | None = None

    def scored(self, params: SearchParams) -> SparseRows:
        setting = Bm25Setting.of(params)
        last = self._last
        if last is not None and last[0] == setting:
            return last[1]
        rows = self._rows
        out = replace(rows, values=scored_values(rows.values, rows.row_ids(), self._dl, setting))
        self._last = (setting, out)
        return out
