"""NGRAM: the n-grams of every distinct string, for ``like`` with wildcards anywhere.

Built over the distinct keys of a string ``Postings``: every substring of
``min_gram..max_gram`` characters of a key maps to the keys holding it (a
``Postings`` of grams whose "rows" are key positions). A ``like`` pattern is
cut at its wildcards; each literal run of at least ``min_gram`` characters
must occur in a matching key, so the keys holding all its grams (the run
itself when it is at most ``max_gram`` long, else each ``max_gram`` window)
are the candidates, and the pattern is then checked on the candidate keys
alone. A pattern with no run that long checks every distinct key (still
never the rows). As in Milvus, the grams narrow; the check decides.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from segcore.index.scalar.postings import Postings, build_postings


def build_grams(keys: np.ndarray, min_gram: int, max_gram: int) -> Postings:
    grams: list[str] = []
    owners: list[int] = []
    for position, key in enumerate(keys):
        seen: set[str] = set()
        for size in range(min_gram, min(max_gram, len(key)) + 1):
            for start in range(len(key) - size + 1):
                seen.add(key[start : start + size])
        grams.extend(seen)
        owners.extend([position] * len(seen))
    return build_postings(pa.array(grams, type=pa.string()), np.asarray(owners, dtype=np.int64), len(keys))


def literal_runs(pattern: str) -> list[str]:
    """The runs of literal characters of a ``like`` pattern (``%`` and ``_`` cut, ``\\`` escapes)."""
    runs: list[str] = []
    current: list[str] = []
    escaped = False
    for char in pattern:
        if escaped:
            current.append(char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char in "%_":
            if current:
                runs.append("".join(current))
            current = []
        else:
            current.append(char)
    if current:
        runs.append("".join(current))
    return runs


def candidate_keys(grams: Postings, pattern: str, min_gram: int, max_gram: int) -> np.ndarray | None:
    """``bool`` per key that may match ``pattern``; ``None``: no run narrows it (every key may)."""
    wanted: set[str] = set()
    for run in literal_runs(pattern):
        if len(run) < min_gram:
            continue
        if len(run) <= max_gram:
            wanted.add(run)
        else:
            wanted.update(run[i : i + max_gram] for i in range(len(run) - max_gram + 1))
    if not wanted:
        return None
    result = np.ones(grams.num_rows, dtype=bool)
    for gram in wanted:
        result &= grams.mask(grams.equal_rows(gram))
        if not result.any():
            break
    return result
