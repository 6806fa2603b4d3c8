"""A positional inverted index of one text field over every row of a sealed segment.

For each term (the field's analyzer's token text) the rows holding it,
ascending, and for each such row the term's positions in it (as the analyzer
numbers them: a dropped stop word leaves a gap). ``TEXT_MATCH`` is the union
of the query terms' rows; ``PHRASE_MATCH`` takes the rows holding every term
and checks the stored positions (``common/fulltext/text_match.phrase_in``),
never analyzing a row again.

Stored as flat numpy arrays (``to_bytes``, an uncompressed ``.npz`` without
pickles)::

    term_bytes   uint8   the terms' UTF-8, sorted, back to back
    term_offsets int64   [terms + 1] into term_bytes
    term_starts  int32*  [terms + 1] into docs: term t's rows are docs[term_starts[t]:term_starts[t + 1]]
    docs         int32   [postings] rows, ascending per term
    pos_starts   int32*  [postings + 1] into positions
    positions    int32   the positions of posting p: positions[pos_starts[p]:pos_starts[p + 1]]

(* ``int64`` when the offsets do not fit in ``int32``.) Every method blocks (CPU); immutable once built: share it between reads and threads.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from common.fulltext.analyzer import Analyzer
from common.fulltext.text_match import phrase_in

_EMPTY = np.empty(0, dtype=np.int32)
_ARRAYS = ("term_bytes", "term_offsets", "term_starts", "docs", "pos_starts", "positions")


def _offsets(values: np.ndarray) -> np.ndarray:
    """Ascending offsets as ``int32`` when they fit (half the bytes of the usual segment), else ``int64``."""
    return values.astype(np.int32 if len(values) == 0 or values[-1] < 2**31 else np.int64)


@dataclass(frozen=True, slots=True, eq=False, kw_only=True)
class TextIndex:
    num_rows: int
    terms: dict[str, int]  # term -> its number (the terms' sorted order)
    term_bytes: np.ndarray
    term_offsets: np.ndarray
    term_starts: np.ndarray
    docs: np.ndarray
    pos_starts: np.ndarray
    positions: np.ndarray

    # ------------------------------------------------------------------ build

    @staticmethod
    def build(analyzer: Analyzer, texts: Sequence[str | None]) -> TextIndex:
        """The index of ``texts`` (row ``i`` = ``texts[i]``; a null or empty text holds no term)."""
        numbers: dict[str, int] = {}
        term_of: list[int] = []
        row_of: list[int] = []
        pos_of: list[int] = []
        for row, text in enumerate(texts):
            if not text:
                continue
            for token, position in analyzer.positioned_terms(text):
                term_of.append(numbers.setdefault(token, len(numbers)))
                row_of.append(row)
                pos_of.append(position)
        ordered = sorted(numbers)
        rank = np.empty(len(ordered), dtype=np.int64)
        for i, name in enumerate(ordered):
            rank[numbers[name]] = i
        term = rank[np.asarray(term_of, dtype=np.int64)] if term_of else np.empty(0, dtype=np.int64)
        rows = np.asarray(row_of, dtype=np.int64)
        pos = np.asarray(pos_of, dtype=np.int64)
        order = np.lexsort((pos, rows, term))
        term, rows, pos = term[order], rows[order], pos[order]
        # A posting starts wherever the (term, row) pair changes.
        new = np.ones(len(term), dtype=bool)
        if len(term):
            new[1:] = (term[1:] != term[:-1]) | (rows[1:] != rows[:-1])
        starts = np.flatnonzero(new)
        posting_term = term[starts]
        encoded = [t.encode() for t in ordered]
        lengths = np.fromiter((len(b) for b in encoded), dtype=np.int64, count=len(encoded))
        return TextIndex(
            num_rows=len(texts),
            terms={t: i for i, t in enumerate(ordered)},
            term_bytes=np.frombuffer(b"".join(encoded), dtype=np.uint8),
            term_offsets=np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
            term_starts=_offsets(np.searchsorted(posting_term, np.arange(len(ordered) + 1), side="left")),
            docs=rows[starts].astype(np.int32),
            pos_starts=_offsets(np.append(starts, len(term))),
            positions=pos.astype(np.int32),
        )

    # ------------------------------------------------------------------ bytes

    def to_bytes(self) -> bytes:
        out = io.BytesIO()
        np.savez(out, **{name: getattr(self, name) for name in _ARRAYS})
        return out.getvalue()

    @staticmethod
    def from_bytes(payload: bytes, num_rows: int) -> TextIndex:
        """The index ``to_bytes`` wrote. Raises ``ValueError`` / ``KeyError`` on a malformed payload."""
        with np.load(io.BytesIO(payload), allow_pickle=False) as stored:
            arrays = {name: stored[name] for name in _ARRAYS}
        offsets, starts = arrays["term_offsets"], arrays["term_starts"]
        count = len(offsets) - 1
        if count < 0 or len(starts) != count + 1 or len(arrays["pos_starts"]) != len(arrays["docs"]) + 1:
            raise ValueError("text index arrays do not fit together")
        if len(arrays["docs"]) and (arrays["docs"].min() < 0 or arrays["docs"].max() >= num_rows):
            raise ValueError("text index rows beyond the segment")
        strings = pa.Array.from_buffers(pa.large_string(), count, [None, pa.py_buffer(offsets.tobytes()),
                                                                    pa.py_buffer(arrays["term_bytes"].tobytes())])
        terms = strings.to_pylist()
        return TextIndex(num_rows=num_rows, terms=dict(zip(terms, range(count), strict=True)), **arrays)

    @property
    def nbytes(self) -> int:
        return sum(getattr(self, name).nbytes for name in _ARRAYS)

    # ------------------------------------------------------------------ match

    def _span(self, term: str) -> tuple[int, int]:
        number = self.terms.get(term)
        if number is None:
            return 0, 0
        return int(self.term_starts[number]), int(self.term_starts[number + 1])

    def rows(self, term: str) -> np.ndarray:
        lo, hi = self._span(term)
        return self.docs[lo:hi] if hi > lo else _EMPTY

    def any_of(self, terms: set[str]) -> np.ndarray:
        """``bool`` per row: holds at least one of ``terms`` (``TEXT_MATCH``)."""
        out = np.zeros(self.num_rows, dtype=bool)
        for t in terms:
            out[self.rows(t)] = True
        return out

    def all_of(self, terms: set[str]) -> np.ndarray:
        """The rows holding every one of ``terms``, ascending."""
        found: np.ndarray | None = None
        for t in sorted(terms, key=lambda t: len(self.rows(t))):
            rows = self.rows(t)
            found = rows if found is None else np.intersect1d(found, rows, assume_unique=True)
            if len(found) == 0:
                break
        return _EMPTY if found is None else found

    def phrase(self, query: Sequence[tuple[str, int]], slop: int) -> np.ndarray:
        """``bool`` per row: holds the phrase ``query`` (term, position in the phrase) within ``slop``
        (``PHRASE_MATCH``, measured as ``common/fulltext/text_match.py`` states)."""
        out = np.zeros(self.num_rows, dtype=bool)
        if not query:
            return out
        terms = {t for t, _ in query}
        candidates = self.all_of(terms)
        if len(candidates) == 0:
            return out
        postings: dict[str, np.ndarray] = {}  # the posting of each candidate row, per term
        for t in terms:
            lo, hi = self._span(t)
            postings[t] = lo + np.searchsorted(self.docs[lo:hi], candidates)
        starts, positions = self.pos_starts, self.positions
        wanted = list(query)
        for k, row in enumerate(candidates.tolist()):
            held: dict[str, list[int]] = {}
            for t, found in postings.items():
                p = int(found[k])
                held[t] = positions[starts[p]:starts[p + 1]].tolist()
            out[row] = phrase_in(held, wanted, slop)
        return out

    def match(self, analyzer: Analyzer, query: str, slop: int | None) -> np.ndarray:
        """``TEXT_MATCH(field, query)`` (``slop`` None) or ``PHRASE_MATCH(field, query, slop)`` per row;
        ``analyzer`` must be the one the index was built with."""
        tokens = analyzer.tokens(query)
        if not tokens:
            return np.zeros(self.num_rows, dtype=bool)
        if slop is None:
            return self.any_of({t.text for t in tokens})
        first = tokens[0].position
        return self.phrase([(t.text, t.position - first) for t in tokens], slop)
