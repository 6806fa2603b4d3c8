"""A token index per chunk of a text column, so that ``TEXT_MATCH`` / ``PHRASE_MATCH`` need not
analyze every row of every segment at every query.

Arrow chunks are immutable, and a segment keeps its columns' chunks while it
lives (a growing segment appends chunks and now and then merges a few), so a
chunk is known by its buffers' addresses, offset and length. The index of a
chunk maps each token to the rows (ascending) that hold it; ``TEXT_MATCH``
takes the union of its tokens' rows, ``PHRASE_MATCH`` checks positions only on
the rows that hold every token. Each cache entry holds a reference to its
chunk, so the memory behind an address cannot be reused while the entry
lives; the cache is bounded by the chunks' bytes and evicts the least
recently used. Safe to use from several threads.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from common.fulltext.analyzer import Analyzer
from common.fulltext.text_match import match_phrase

#: Bytes of text chunks whose indexes are kept (the chunks themselves stay alive with them).
CACHE_BYTES = 512 * 1024 * 1024
_EMPTY = np.empty(0, dtype=np.int64)


@dataclass(frozen=True, slots=True, eq=False)
class ChunkIndex:
    """Token -> rows holding it, for one chunk of texts."""

    num_rows: int
    postings: dict[str, np.ndarray]

    @staticmethod
    def build(analyzer: Analyzer, texts: Sequence[str | None]) -> ChunkIndex:
        lists: dict[str, list[int]] = {}
        for i, text in enumerate(texts):
            if text:
                for token in set(analyzer.terms(text)):
                    lists.setdefault(token, []).append(i)
        return ChunkIndex(num_rows=len(texts), postings={t: np.asarray(r, dtype=np.int64) for t, r in lists.items()})

    def rows(self, token: str) -> np.ndarray:
        return self.postings.get(token, _EMPTY)

    def any_of(self, tokens: set[str]) -> np.ndarray:
        out = np.zeros(self.num_rows, dtype=bool)
        for t in tokens:
            out[self.rows(t)] = True
        return out

    def all_of(self, tokens: set[str]) -> np.ndarray:
        """Rows holding every one of ``tokens`` (ascending)."""
        rows: np.ndarray | None = None
        for t in sorted(tokens, key=lambda t: len(self.rows(t))):
            found = self.rows(t)
            rows = found if rows is None else np.intersect1d(rows, found, assume_unique=True)
            if len(rows) == 0:
                break
        return _EMPTY if rows is None else rows


class TokenIndexCache:
    """``ChunkIndex`` per (analyzer params, chunk), least recently used out past ``limit_bytes``."""

    def __init__(self, limit_bytes: int = CACHE_BYTES) -> None:
        self._limit = limit_bytes
        self._bytes = 0
        self._lock = threading.Lock()
        self._entries: OrderedDict[tuple[object, ...], tuple[pa.Array, ChunkIndex, int]] = OrderedDict()

    @staticmethod
    def _key(params: str, chunk: pa.Array) -> tuple[object, ...]:
        buffers = tuple(b.address if b is not None else 0 for b in chunk.buffers())
        return (params, chunk.type.id, buffers, chunk.offset, len(chunk))

    def index(self, params: str, analyzer: Analyzer, chunk: pa.Array) -> ChunkIndex:
        key = self._key(params, chunk)
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None:
                self._entries.move_to_end(key)
                return hit[1]
        built = ChunkIndex.build(analyzer, chunk.to_pylist())  # outside the lock: may take a while
        size = chunk.nbytes
        with self._lock:
            if key not in self._entries:
                self._entries[key] = (chunk, built, size)
                self._bytes += size
                while self._bytes > self._limit and len(self._entries) > 1:
                    _, (_, _, dropped) = self._entries.popitem(last=False)
                    self._bytes -= dropped
        return built


CACHE = TokenIndexCache()


def indexed_match(
    params: str, analyzer: Analyzer, column: pa.Array | pa.ChunkedArray, query: str, slop: int | None
) -> np.ndarray:
    """``TEXT_MATCH`` (``slop`` None) or ``PHRASE_MATCH`` over ``column``, through the chunk indexes."""
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    tokens = analyzer.tokens(query)
    terms = {t.text for t in tokens}
    parts = []
    for chunk in chunks:
        if len(chunk) == 0:
            continue
        if not terms:
            parts.append(np.zeros(len(chunk), dtype=bool))
            continue
        index = CACHE.index(params, analyzer, chunk)
        if slop is None:
            parts.append(index.any_of(terms))
            continue
        out = np.zeros(len(chunk), dtype=bool)
        candidates = index.all_of(terms)
        if len(candidates):
            texts = chunk.take(pa.array(candidates)).to_pylist()
            out[candidates] = match_phrase(analyzer, texts, query, slop)
        parts.append(out)
    return np.concatenate(parts) if parts else np.zeros(0, dtype=bool)
