"""The in-process BM25 engines ``benchmarks/bm25.py`` measures Strata against, and the ranking measures.

* bm25s 0.3.16 (``lucene`` method, numpy backend, one thread) over Strata's
  ``standard`` tokens: scores ``tf / (tf + k1 (1 - b + b dl / avgdl))`` times
  ``ln(1 + (N - df + 0.5) / (df + 0.5))``; Milvus' BM25 is that times
  ``k1 + 1``, so the rankings are the same.
* tantivy (its Python bindings, an index in RAM, one segment): a ``text``
  field analyzed by tantivy's ``simple`` tokenizer and ``lowercase`` filter,
  which is what Strata's ``standard`` analyzer is built from (no length limit,
  unlike tantivy's ``default``); a query is a boolean ``should`` of one term
  query per analyzed query token (a repeated token counts twice, as Milvus'
  ``qtf`` weight). tantivy's BM25 (k1 1.2, b 0.75, the same IDF) stores each
  document's length as a one-byte ``fieldnorm``, so its ``dl`` is rounded and
  its ranking can differ slightly.
* NDCG@10 against bm25s: a system's top 10 with bm25s' score of each row as its
  graded relevance, divided by the same sum over bm25s' own top 10 (ideal
  order). 1.0 = the same rows in the same order up to ties; a row swapped for
  one with a slightly lower bm25s score costs in proportion.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import bm25s
import numpy as np
import tantivy

K1, B = 1.2, 0.75


class Bm25sEngine:
    def __init__(self, docs_tokens: list[list[str]]) -> None:
        self.retriever = bm25s.BM25(k1=K1, b=B, method="lucene")
        self.retriever.index(docs_tokens, show_progress=False)

    def search(self, batch: list[list[str]], k: int) -> np.ndarray:
        ids, _ = self.retriever.retrieve(batch, k=k, show_progress=False, n_threads=1)
        return np.asarray(ids)

    def scores(self, tokens: list[str]) -> np.ndarray:
        """bm25s' score of every document for one query."""
        return np.asarray(self.retriever.get_scores(tokens), dtype=np.float64)


class TantivyEngine:
    def __init__(self, docs: Sequence[str]) -> None:
        builder = tantivy.SchemaBuilder()
        builder.add_text_field("text", stored=False, tokenizer_name="strata_standard", index_option="freq")
        self.schema = builder.build()
        self.index = tantivy.Index(self.schema)
        analyzer = tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple()).filter(tantivy.Filter.lowercase()).build()
        self.index.register_tokenizer("strata_standard", analyzer)
        writer = self.index.writer(heap_size=1 << 30, num_threads=1)  # one segment: doc ids in insertion order
        for d in docs:
            writer.add_document(tantivy.Document(text=d))
        writer.commit()
        writer.wait_merging_threads()
        self.index.reload()
        self.searcher = self.index.searcher()
        if self.searcher.num_segments != 1:
            raise RuntimeError(f"tantivy built {self.searcher.num_segments} segments, the ids need one")

    def _query(self, tokens: list[str]) -> tantivy.Query:
        return tantivy.Query.boolean_query(
            [(tantivy.Occur.Should, tantivy.Query.term_query(self.schema, "text", t)) for t in tokens]
        )

    def search_one(self, tokens: list[str], k: int) -> list[int]:
        hits = self.searcher.search(self._query(tokens), limit=k, count=False).hits
        return [addr.doc for _, addr in hits]


def ndcg_at(found: Sequence[int], gains: np.ndarray, k: int) -> float:
    """NDCG@k of ``found`` (best first) with ``gains`` (a relevance per row) against the ideal order."""
    discounts = 1.0 / np.log2(np.arange(2, k + 2))
    ideal = np.sort(gains)[::-1][:k]
    best = float((ideal * discounts[: len(ideal)]).sum())
    if best <= 0:
        return 1.0
    got = np.array([gains[r] for r in list(found)[:k]], dtype=np.float64)
    return float((got * discounts[: len(got)]).sum()) / best if len(got) else 0.0


def mean_ndcg(rankings: Sequence[Sequence[int]], gains: Sequence[np.ndarray], k: int) -> float:
    values = [ndcg_at(r, g, k) for r, g in zip(rankings, gains, strict=True)]
    return math.fsum(values) / max(1, len(values))
