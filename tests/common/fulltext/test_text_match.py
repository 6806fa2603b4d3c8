"""TEXT_MATCH and PHRASE_MATCH agree with a brute-force model on random documents."""

from __future__ import annotations

import itertools

import numpy as np
import pyarrow as pa

from common.fulltext.analyzer import build_analyzer
from common.fulltext.text_index import TokenIndexCache, indexed_match
from common.fulltext.text_match import match_any, match_phrase

WORDS = ["alpha", "beta", "gamma", "delta", "the", "of"]


def _phrase_model(doc: list[tuple[str, int]], query: list[tuple[str, int]], slop: int) -> bool:
    """Every choice of one row position per query token; spread of (row pos - query pos) within slop."""
    options = [[p for t, p in doc if t == term] for term, _ in query]
    for choice in itertools.product(*options):
        offsets = [p - q for p, (_, q) in zip(choice, query, strict=True)]
        if max(offsets) - min(offsets) <= slop:
            return True
    return False


def test_matches_agree_with_model() -> None:
    rng = np.random.default_rng(3)
    analyzer = build_analyzer({"type": "english"})  # stop words leave gaps in positions
    docs = [" ".join(rng.choice(WORDS, size=int(rng.integers(0, 9)))) for _ in range(300)] + [None]
    for _ in range(60):
        query = " ".join(rng.choice(WORDS, size=int(rng.integers(1, 4))))
        slop = int(rng.integers(0, 4))
        want = analyzer.tokens(query)
        got_any = match_any(analyzer, docs, query)
        got_phrase = match_phrase(analyzer, docs, query, slop)
        terms = {t.text for t in want}
        q = [(t.text, t.position - want[0].position) for t in want] if want else []
        for i, text in enumerate(docs):
            toks = [(t.text, t.position) for t in analyzer.tokens(text)] if text else []
            assert got_any[i] == bool(terms & {t for t, _ in toks}), (query, text)
            assert got_phrase[i] == (bool(q) and bool(toks) and _phrase_model(toks, q, slop)), (query, slop, text)


def test_chunk_indexes_agree_with_the_scan() -> None:
    rng = np.random.default_rng(9)
    params = '{"type": "english"}'
    analyzer = build_analyzer(params)
    docs = [" ".join(rng.choice(WORDS, size=int(rng.integers(0, 9)))) if rng.random() > 0.05 else None
            for _ in range(400)]
    column = pa.chunked_array([pa.array(docs[:150]), pa.array(docs[150:151]), pa.array(docs[151:])])
    cache = TokenIndexCache(limit_bytes=1 << 30)
    for _ in range(40):
        query = " ".join(rng.choice(WORDS, size=int(rng.integers(1, 4))))
        slop = None if rng.random() < 0.4 else int(rng.integers(0, 3))
        want = match_any(analyzer, docs, query) if slop is None else match_phrase(analyzer, docs, query, slop)
        assert indexed_match(params, analyzer, column, query, slop).tolist() == want.tolist(), (query, slop)
        # the same chunks again: served from the indexes already built
        assert cache.index(params, analyzer, column.chunks[0]) is cache.index(params, analyzer, column.chunks[0])


def test_the_cache_is_bounded_by_bytes() -> None:
    analyzer = build_analyzer(None)
    cache = TokenIndexCache(limit_bytes=1)
    first = pa.array(["alpha beta"] * 10)
    kept = cache.index("", analyzer, first)
    cache.index("", analyzer, pa.array(["gamma"] * 10))
    assert cache.index("", analyzer, first) is not kept  # evicted, built again
