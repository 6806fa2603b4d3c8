"""``TEXT_MATCH`` and ``PHRASE_MATCH`` over a column of texts, by analyzing each row (a scan).

* ``TEXT_MATCH(field, 'words')``: rows holding at least one token of the
  analyzed query (Milvus ORs the query's tokens).
* ``PHRASE_MATCH(field, 'words', slop)``: rows holding every token of the
  query in a run whose positions may stray from the query's by ``slop`` at
  most, as tantivy's phrase query measures it: with ``o_i`` = the row position
  of query token ``i`` minus its query position, a run matches when
  ``max(o) - min(o) <= slop`` (so slop 0 is the exact phrase, "A X B C"
  matches "A B C" with slop 1, and "B A" matches "A B" with slop 2).

These functions analyze every row they are given: the filters go through
``text_index.py``, which builds a token index per chunk once and calls
``match_phrase`` only on the rows that hold every token of the phrase.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from common.fulltext.analyzer import Analyzer


def match_any(analyzer: Analyzer, texts: Sequence[str | None], query: str) -> np.ndarray:
    wanted = set(analyzer.terms(query))
    out = np.zeros(len(texts), dtype=bool)
    if not wanted:
        return out
    for i, text in enumerate(texts):
        if text:
            out[i] = not wanted.isdisjoint(analyzer.terms(text))
    return out


def phrase_in(positions: dict[str, list[int]], query: list[tuple[str, int]], slop: int) -> bool:
    """Whether one value per query token (row position - query position) fits in a window of ``slop``."""
    events: list[tuple[int, int]] = []
    for k, (term, qpos) in enumerate(query):
        found = positions.get(term)
        if not found:
            return False
        events.extend((p - qpos, k) for p in found)
    events.sort()
    need = len(query)
    count = [0] * need
    covered = 0
    lo = 0
    for hi in range(len(events)):
        value, k = events[hi]
        if count[k] == 0:
            covered += 1
        count[k] += 1
        while covered == need:
            if value - events[lo][0] <= slop:
                return True
            _, k_lo = events[lo]
            count[k_lo] -= 1
            if count[k_lo] == 0:
                covered -= 1
            lo += 1
    return False


def match_phrase(analyzer: Analyzer, texts: Sequence[str | None], query: str, slop: int) -> np.ndarray:
    tokens = analyzer.tokens(query)
    out = np.zeros(len(texts), dtype=bool)
    if not tokens:
        return out
    first = tokens[0].position
    wanted = [(t.text, t.position - first) for t in tokens]
    terms = {t for t, _ in wanted}
    for i, text in enumerate(texts):
        if not text:
            continue
        positions: dict[str, list[int]] = {}
        for t in analyzer.tokens(text):
            if t.text in terms:
                positions.setdefault(t.text, []).append(t.position)
        out[i] = phrase_in(positions, wanted, slop)
    return out
